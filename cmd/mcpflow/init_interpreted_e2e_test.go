//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestInitInterpretedKeepsServing: init gives a Python and a JavaScript
// project a syntax check as their build, so a syntax error keeps the old
// server serving and the agent reads the file and line, as a compiler
// error does; the fix serves again.
func TestInitInterpretedKeepsServing(t *testing.T) {
	notes, err := os.ReadFile(filepath.Join("..", "..", "examples", "mux", "notes_server.py"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, src, tool string
		args                  map[string]any
		where                 *regexp.Regexp // the file and line of the error in recompile's answer
	}{
		{"python", "server.py", string(notes), "add_note", map[string]any{"text": "x"}, regexp.MustCompile(`server\.py", line \d+`)},
		{"javascript", "server.mjs", `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
const server = new McpServer({ name: "js", version: "1.0.0" });
server.registerTool("hello", { description: "Greet." }, async () => ({ content: [{ type: "text", text: "hello" }] }));
await server.connect(new StdioServerTransport());
`, "hello", map[string]any{}, regexp.MustCompile(`server\.mjs:\d+`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, c.file), c.src)
			if c.name == "javascript" {
				writeFile(t, filepath.Join(dir, "package.json"), `{"name": "js", "type": "module"}`)
				if err := os.Symlink(filepath.Join(nodePeers(t), "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
					t.Fatal(err)
				}
			}
			out, cfg := runInit(t, dir)
			if cfg.Build.Command.IsZero() || !strings.Contains(out, "build: ") {
				t.Fatalf("init wrote no check step:\n%s", out)
			}
			h := startE2E(t, dir, testkit.Legacy.Version, "watch")
			h.waitTools(c.tool)
			writeFile(t, filepath.Join(dir, c.file), c.src+"\nfunction broken( {\ndef broken(:\n")
			text, isErr := h.call("recompile", nil)
			if !isErr || !c.where.MatchString(text) || !strings.Contains(text, "previous server is still running") {
				t.Errorf("recompile after a syntax error: isError=%v\n%s", isErr, text)
			}
			if _, isErr := h.call(c.tool, c.args); isErr {
				t.Errorf("%s after the syntax error: the old server does not serve", c.tool)
			}
			writeFile(t, filepath.Join(dir, c.file), c.src)
			if text, isErr := h.call("recompile", nil); isErr {
				t.Errorf("recompile after the fix: %s", text)
			}
			if _, isErr := h.call(c.tool, c.args); isErr {
				t.Errorf("%s after the fix", c.tool)
			}
		})
	}
}
