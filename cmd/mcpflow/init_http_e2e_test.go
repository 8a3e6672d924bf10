package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitHTTPUnderWatch: the config init writes for a TypeScript SDK
// server over Streamable HTTP runs it under mcpflow watch as an HTTP
// child: a stdio client calls its tool, and a saved edit brings the new
// tool.
func TestInitHTTPUnderWatch(t *testing.T) {
	t.Parallel()
	deps := tscDeps(t)
	dir := t.TempDir()
	sub := `  server.registerTool("sub", { description: "a-b", inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a - b) }] }));
`
	writeFiles(t, dir, map[string]string{
		"package.json": `{"name": "notes-http", "version": "1.0.0", "type": "module", "main": "server.js"}`,
		"server.js":    jsHTTPServer,
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
	writeFiles(t, dir, map[string]string{"server.js": strings.Replace(jsHTTPServer, "  const transport", sub+"  const transport", 1)})
	h.waitTools("sub")
	if got, isErr := h.call("sub", map[string]any{"a": 2, "b": 3}); isErr || got != "-1" {
		t.Fatalf("sub: %q %v", got, isErr)
	}
}
