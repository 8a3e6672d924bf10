package project

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestInitSnippet: the client snippet init prints starts this mcpflow
// binary by its absolute path, whatever the project's language (npx and
// uvx work only once the packages are published), in JSON that parses,
// and says how to use mcpflow from PATH instead.
func TestInitSnippet(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		files   map[string]string
		command string
		args    []string
	}{
		{"typescript", map[string]string{"package.json": testkit.NPMInitPackage(""), "tsconfig.json": testkit.TSCInitConfig}, testExe, nil},
		{"javascript", map[string]string{"package.json": `{"name": "notes", "main": "index.js"}`, "index.js": "\n"}, testExe, nil},
		{"python", map[string]string{"pyproject.toml": "[project]\nname = \"notes\"\nversion = \"0.1.0\"\n", "server.py": "\n"}, testExe, nil},
		{"go", map[string]string{"go.mod": "module example.com/notes\n\ngo 1.26\n", "main.go": "package main\n\nfunc main() {}\n"}, testExe, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			testkit.WriteFiles(t, dir, c.files)
			out, _ := runInit(t, dir)
			cfg := filepath.Join(dir, "mcpflow.toml")
			want := append(append([]string{}, c.args...), "watch", "-c", cfg)

			var mcpJSON struct {
				MCPServers map[string]struct {
					Command string   `json:"command"`
					Args    []string `json:"args"`
				} `json:"mcpServers"`
			}
			line := snippetLine(t, out, `{ "mcpServers"`)
			if err := json.Unmarshal([]byte(line), &mcpJSON); err != nil {
				t.Fatalf("the .mcp.json snippet does not parse: %v\n%s", err, line)
			}
			if len(mcpJSON.MCPServers) != 1 {
				t.Fatalf(".mcp.json snippet: %s", line)
			}
			for _, s := range mcpJSON.MCPServers {
				if s.Command != c.command || strings.Join(s.Args, "\x00") != strings.Join(want, "\x00") {
					t.Errorf(".mcp.json snippet runs %q %q, want %q %q", s.Command, s.Args, c.command, want)
				}
			}
			var vscode map[string]map[string]struct {
				Type    string   `json:"type"`
				Command string   `json:"command"`
				Args    []string `json:"args"`
			}
			line = snippetLine(t, out, `{ "servers"`)
			if err := json.Unmarshal([]byte(line), &vscode); err != nil {
				t.Fatalf("the VS Code snippet does not parse: %v\n%s", err, line)
			}
			for _, s := range vscode["servers"] {
				if s.Type != "stdio" || s.Command != c.command || len(s.Args) != len(want) {
					t.Errorf("VS Code snippet: %s", line)
				}
			}
			var codex struct {
				MCPServers map[string]struct {
					Command string   `toml:"command"`
					Args    []string `toml:"args"`
				} `toml:"mcp_servers"`
			}
			lines := strings.Split(out[strings.Index(out, "[mcp_servers."):], "\n")[:3]
			for i := range lines {
				lines[i] = strings.TrimSpace(lines[i])
			}
			block := strings.Join(lines, "\n")
			if err := toml.Unmarshal([]byte(block), &codex); err != nil || len(codex.MCPServers) != 1 {
				t.Fatalf("the Codex snippet does not parse: %v\n%s", err, block)
			}
			for _, s := range codex.MCPServers {
				if s.Command != c.command || strings.Join(s.Args, "\x00") != strings.Join(want, "\x00") {
					t.Errorf("Codex snippet runs %q %q, want %q %q", s.Command, s.Args, c.command, want)
				}
			}
			claude := "claude mcp add "
			if line := snippetLine(t, out, claude); !strings.HasSuffix(line, " -- "+shellQuote(c.command)+" "+strings.Join(append(c.args, "watch", "-c", shellQuote(cfg)), " ")) {
				t.Errorf("Claude Code line: %s", line)
			}
			if !strings.Contains(out, `mcpflow on PATH? Use "command": "mcpflow", "args": ["watch", "-c", `+jsonString(cfg)+`].`) {
				t.Errorf("no line on how to run mcpflow from PATH instead:\n%s", out)
			}
		})
	}
}

// snippetLine is the first line of out that starts with prefix, trimmed.
func snippetLine(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("no line starting with %q in:\n%s", prefix, out)
	return ""
}

// TestLauncherFor: the running binary's path, whatever the project; a
// binary that npx or uvx unpacked into a cache is named by their form, one
// go run built by go run from its clone.
func TestLauncherFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		exe, clone, command string
		args                []string
	}{
		{"/usr/local/bin/mcpflow", "", "/usr/local/bin/mcpflow", nil},
		{"/home/me/.local/bin/mcpflow", "/home/me/src/mcpflow", "/home/me/.local/bin/mcpflow", nil},
		{"/home/me/.npm/_npx/1a2b/node_modules/@mcpflow/linux-x64/bin/mcpflow", "", "npx", []string{"-y", "mcpflow"}},
		{"/home/me/.cache/uv/archive-v0/x/lib/python3.12/site-packages/mcpflow/bin/mcpflow", "", "uvx", []string{"mcpflow"}},
		{`C:\Users\me\AppData\Local\npm-cache\_npx\1a2b\node_modules\@mcpflow\win32-x64\bin\mcpflow.exe`, "", "npx", []string{"-y", "mcpflow"}},
		{"/tmp/go-build3012/b001/exe/mcpflow", "/home/me/src/mcpflow", "go", []string{"run", "-C", "/home/me/src/mcpflow", "./cmd/mcpflow"}},
		{"/tmp/go-build3012/b001/exe/mcpflow", "", "mcpflow", nil},
		{"", "", "mcpflow", nil},
	}
	for _, c := range cases {
		if l := LauncherFor(c.exe, c.clone); l.command != c.command || !slices.Equal(l.args, c.args) {
			t.Errorf("LauncherFor(%q, %q) = %q %q, want %q %q", c.exe, c.clone, l.command, l.args, c.command, c.args)
		}
	}
}
