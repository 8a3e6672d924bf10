//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// editedProject is a project whose build (about a second) writes
// bin/server from tools.txt: the fixture's flags, "-extra-tool beta" to
// add a tool.
func editedProject(t *testing.T, tools string) string {
	t.Helper()
	dir := t.TempDir()
	build := fmt.Sprintf("sleep 1\nmkdir -p bin\nprintf '#!/bin/sh\\nexec %s -name srv %%s\\n' \"$(cat tools.txt)\" > bin/server\nchmod +x bin/server\n", fixtureBin)
	for name, text := range map[string]string{
		"mcpflow.toml": "[build]\ncommand = \"sh build.sh\"\n[run]\ncommand = [\"./bin/server\"]\nstop_timeout = \"1s\"\n[watch]\nexclude = [\"bin/**\"]\n[log]\nfile = \".mcpflow/mcpflow.log\"\n",
		"build.sh":     build,
		"tools.txt":    tools,
	} {
		writeFile(t, filepath.Join(dir, name), text)
	}
	return dir
}

// toolLines are the names mcpflow tools printed (a line without indent).
func toolLines(out string) []string {
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, " ") {
			names = append(names, l)
		}
	}
	return names
}

// An edit made while nothing ran: the record of the last start is of
// other sources, so the first lists wait for the build (within the
// client's wait). A client that never reads list_changed (Codex) gets
// the new tool in its first tools/list; mcpflow tools, which starts an
// instance of its own, waits for its build and lists the tool, then,
// after an edit that removes it, does not.
func TestEditWhileNothingRan(t *testing.T) {
	t.Parallel()
	dir, xdg := editedProject(t, ""), runtimeDir(t)
	h := startE2EAs(t, "codex-mcp-client", mcpflowBin, dir, "2025-11-25", nil, "watch")
	h.waitTools("echo")
	stopE2E(t, h)
	if _, err := os.Stat(recordPath(dir)); err != nil {
		t.Fatalf("no record of the first start: %v", err)
	}

	writeFile(t, filepath.Join(dir, "tools.txt"), "-extra-tool beta")
	h = startE2EAs(t, "codex-mcp-client", mcpflowBin, dir, "2025-11-25", nil, "watch")
	if tools := h.tools(); !slices.Contains(tools, "beta") {
		t.Fatalf("the first tools/list after an edit made while nothing ran: %q, want beta", tools)
	}
	stopE2E(t, h)

	// The sources are those of the last start: the record answers.
	if out, errOut, code := mcpflow(t, xdg, dir, "tools"); code != 0 || !slices.Contains(toolLines(out), "beta") {
		t.Fatalf("mcpflow tools: exit %d, want beta in:\n%s\nstderr:\n%s", code, out, errOut)
	}
	writeFile(t, filepath.Join(dir, "tools.txt"), "")
	out, errOut, code := mcpflow(t, xdg, dir, "tools")
	if names := toolLines(out); code != 0 || slices.Contains(names, "beta") || !slices.Contains(names, "echo") {
		t.Fatalf("mcpflow tools after the edit that removed beta: exit %d, tools %q\nstderr:\n%s", code, names, errOut)
	}

	// A piped one-shot (its input closed at once) waits for its build too.
	writeFile(t, filepath.Join(dir, "tools.txt"), "-extra-tool gamma")
	input := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`
	if out, errOut := oneShot(t, dir, input, time.Minute, "watch"); !strings.Contains(out, `"name":"gamma"`) {
		t.Fatalf("a piped one-shot after an edit: no gamma in\n%s\nstderr:\n%s", out, errOut)
	}
}

// mcpflow tools and call never print a bare list or succeed when no
// server runs: a failed build exits non-zero with the compiler's
// file:line, a run command that does not exist with its name.
func TestToolsSaysWhyNoServerRuns(t *testing.T) {
	t.Parallel()
	t.Run("build fails", func(t *testing.T) {
		t.Parallel()
		dir, xdg := t.TempDir(), runtimeDir(t)
		for name, text := range map[string]string{
			"mcpflow.toml": "[build]\ncommand = [\"go\", \"build\", \"-o\", \"bin/server\", \".\"]\n[run]\ncommand = [\"./bin/server\"]\n",
			"go.mod":       "module broken\n\ngo 1.22\n",
			"main.go":      "package main\n\nfunc main() {\n\tnosuch()\n}\n",
		} {
			writeFile(t, filepath.Join(dir, name), text)
		}
		for _, args := range [][]string{{"tools"}, {"call", "echo"}} {
			out, errOut, code := mcpflow(t, xdg, dir, args...)
			if code == 0 || !strings.Contains(errOut, "main.go:4:2") || strings.Contains(out, "recompile") {
				t.Errorf("mcpflow %v with a failing build: exit %d, want the compiler's main.go:4:2 on stderr:\n%s\nstdout:\n%s", args, code, errOut, out)
			}
		}
	})
	t.Run("missing program", func(t *testing.T) {
		t.Parallel()
		dir, xdg := t.TempDir(), runtimeDir(t)
		writeFile(t, filepath.Join(dir, "mcpflow.toml"), "[run]\ncommand = [\"mcpflow-no-such-program\"]\n")
		out, errOut, code := mcpflow(t, xdg, dir, "tools")
		if code == 0 || !strings.Contains(errOut, "mcpflow-no-such-program") || strings.Contains(out, "recompile") {
			t.Errorf("mcpflow tools with a missing program: exit %d, want its name on stderr:\n%s\nstdout:\n%s", code, errOut, out)
		}
	})
}
