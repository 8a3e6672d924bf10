//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestInitHTTPUnderWatch: the config init writes for a TypeScript SDK
// server over Streamable HTTP runs it under mcpflow watch as an HTTP
// child: a stdio client calls its tool, and a saved edit brings the new
// tool.
func TestInitHTTPUnderWatch(t *testing.T) {
	t.Parallel()
	deps := testkit.TSCDeps(t)
	dir := t.TempDir()
	sub := `  server.registerTool("sub", { description: "a-b", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a - b) }] }));
`
	testkit.WriteFiles(t, dir, map[string]string{
		"package.json": `{"name": "notes-http", "version": "1.0.0", "type": "module", "main": "server.js"}`,
		"server.js":    testkit.JSHTTPServer,
	})
	if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if _, cfg := runInit(t, dir); cfg.Run.URL != "http://127.0.0.1:{port}/mcp" {
		t.Fatalf("init: url %q", cfg.Run.URL)
	}
	h := startE2E(t, dir, "", "watch")
	h.waitTools("add")
	if got, isErr := h.call("add", map[string]any{"a": 2, "b": 3}); isErr || got != "5" {
		t.Fatalf("add: %q %v", got, isErr)
	}
	testkit.WriteFiles(t, dir, map[string]string{"server.js": strings.Replace(testkit.JSHTTPServer, "  const transport", sub+"  const transport", 1)})
	h.waitTools("sub")
	if got, isErr := h.call("sub", map[string]any{"a": 2, "b": 3}); isErr || got != "-1" {
		t.Fatalf("sub: %q %v", got, isErr)
	}
}

// TestInitCheckHTTPCold: on a TypeScript HTTP project as a user has it
// before any install or build, the real binary's init writes run.url and
// its check passes with no warning.
func TestInitCheckHTTPCold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testkit.WriteFiles(t, dir, map[string]string{
		"package.json":  testkit.NPMInitPackage(`"dependencies": {"@modelcontextprotocol/sdk": "^1.32.0", "express": "^5.1.0"},`),
		"tsconfig.json": testkit.TSCInitConfig,
		"src/index.ts":  testkit.TSHTTPServer(`app.listen(Number(process.env.PORT ?? 3000), "127.0.0.1");`),
	})
	mcpflow := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(mcpflowBin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcpflow %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := mcpflow("init")
	if !strings.Contains(out, "  url:   http://127.0.0.1:{port}/mcp") {
		t.Errorf("init:\n%s", out)
	}
	out = mcpflow("check")
	if !strings.Contains(out, `url = "http://127.0.0.1:{port}/mcp"`) || !strings.Contains(out, "# no warnings") {
		t.Errorf("check:\n%s", out)
	}
}
