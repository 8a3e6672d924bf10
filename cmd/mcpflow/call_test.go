//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkTools runs mcpflow tools (text and --json) and mcpflow call
// (text, --json, a tool error, an unknown tool) in dir and checks what a
// person and a script see; echo is the name of the fixture's echo tool
// as this mode presents it. It returns the unknown tool's stderr.
func checkTools(t *testing.T, xdg, dir, echo string) string {
	t.Helper()
	out, errOut, code := mcpflow(t, xdg, dir, "tools")
	if want := echo + "\n  Echo the text.\n  arguments:\n    text (string"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("tools: exit %d, want %q in:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
	out, errOut, code = mcpflow(t, xdg, dir, "tools", "--json")
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || !hasTool(list.Tools, echo) {
		t.Fatalf("tools --json: exit %d, %v:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	if out, errOut, code := mcpflow(t, xdg, dir, "call", echo, `{"text":"hi there"}`); code != 0 || out != "hi there\n" {
		t.Fatalf("call: exit %d, %q\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = mcpflow(t, xdg, dir, "call", "--json", echo, `{"text":"hi"}`)
	var res struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || len(res.Content) != 1 || res.Content[0].Text != "hi" || res.IsError {
		t.Fatalf("call --json: exit %d, %v:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	// A tool error (isError: the arguments do not fit the schema).
	if out, errOut, code := mcpflow(t, xdg, dir, "call", echo, `{"text":5}`); code != 1 || out != "" || !strings.Contains(errOut, "tool "+echo+" failed") {
		t.Fatalf("call with bad arguments: exit %d, %q\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = mcpflow(t, xdg, dir, "call", "nosuch")
	if code != 1 || out != "" || !strings.Contains(errOut, "nosuch") {
		t.Fatalf("call nosuch: exit %d, %q\nstderr:\n%s", code, out, errOut)
	}
	if _, errOut, code := mcpflow(t, xdg, dir, "call", echo, `[1]`); code != exitUsage || !strings.Contains(errOut, "JSON object") {
		t.Fatalf("call with an array: exit %d\nstderr:\n%s", code, errOut)
	}
	return errOut
}

func hasTool(tools []struct {
	Name string `json:"name"`
}, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// TestToolsAndCallAgainstTheInstance: with an instance running in the
// project, tools and call go through its control socket, in a session of
// their own: the client's session carries on untouched.
func TestToolsAndCallAgainstTheInstance(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := fixtureDir(t)
	r := startCtl(t, xdg, dir)
	r.connect("2025-11-25", nil)
	r.waitSocket(xdg)
	untouched := agentUntouched(t, r, "")
	errOut := checkTools(t, xdg, dir, "echo")
	if want := fmt.Sprintf("mcpflow pid %d:", r.cmd.Process.Pid); !strings.Contains(errOut, want) {
		t.Errorf("call nosuch did not go through the instance (%q): %s", want, errOut)
	}
	untouched()
	if got := r.call("recompile", nil); strings.Contains(got, "differs") {
		t.Errorf("the agent's recompile after the terminal's session: %q", got)
	}
}

// agentUntouched notes the agent's child (the fixture's state tool, named
// prefix+"state"), and returns the check that nothing of another session
// reached the agent: no list_changed, the same child, a call's result
// with no note.
func agentUntouched(t *testing.T, r *ctlRun, prefix string) func() {
	state := r.call(prefix+"state", nil)
	// A mux tells its client of each server that comes up: wait until
	// they all did (no news for a second) before the terminal's turn.
	for quiet := false; !quiet; {
		select {
		case <-r.changed:
		case <-time.After(time.Second):
			quiet = true
		}
	}
	return func() {
		t.Helper()
		if got := r.call(prefix+"state", nil); got != state {
			t.Errorf("the agent's child changed: %q, was %q", got, state)
		}
		if got := r.call(prefix+"echo", map[string]any{"text": "still here"}); !strings.HasSuffix(got, "still here") || strings.Contains(got, "\n") {
			t.Errorf("the agent's call: %q", got)
		}
		select {
		case <-r.changed:
			t.Error("the agent was told its tools changed")
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// TestToolsAndCallInAMux: a mux's tools by the names it presents.
func TestToolsAndCallInAMux(t *testing.T) {
	t.Parallel()
	xdg := runtimeDir(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcpflow.toml"), fmt.Sprintf("[servers.a.run]\ncommand = [%q]\n\n[servers.b.run]\ncommand = [%q]\n", fixtureBin, fixtureBin))
	r := startCtl(t, xdg, dir)
	r.connect("2025-11-25", nil)
	r.waitSocket(xdg)
	untouched := agentUntouched(t, r, "b__")
	checkTools(t, xdg, dir, "b__echo")
	untouched()
}

// TestToolsAndCallWithoutAnInstance: with none running, tools and call
// start the server (mcpflow watch) for the request and stop it: no
// control socket is left behind. A [cli] project too.
func TestToolsAndCallWithoutAnInstance(t *testing.T) {
	t.Parallel()
	t.Run("watch", func(t *testing.T) {
		t.Parallel()
		xdg := runtimeDir(t)
		checkTools(t, xdg, fixtureDir(t), "echo")
		if s := sockets(xdg); len(s) > 0 {
			t.Fatalf("left behind: %v", s)
		}
	})
	t.Run("cli", func(t *testing.T) {
		t.Parallel()
		xdg := runtimeDir(t)
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "tools.json"), `{"tools": [{"name": "say", "description": "Say the text.",
  "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "what to say"}}, "required": ["text"]},
  "cli_command": ["{text}"]}]}`)
		writeFile(t, filepath.Join(dir, "mcpflow.toml"), "[cli]\nschema = [\"cat\", \"tools.json\"]\ncommand = [\"echo\"]\n")
		out, errOut, code := mcpflow(t, xdg, dir, "tools")
		if want := "\nsay\n  Say the text.\n  arguments:\n    text (string, required)  what to say\n"; code != 0 || !strings.Contains(out, want) {
			t.Fatalf("tools: exit %d, %q, want %q\nstderr:\n%s", code, out, want, errOut)
		}
		if out, errOut, code := mcpflow(t, xdg, dir, "call", "say", `{"text":"hello"}`); code != 0 || !strings.Contains(out, "hello") {
			t.Fatalf("call: exit %d, %q\nstderr:\n%s", code, out, errOut)
		}
		if s := sockets(xdg); len(s) > 0 {
			t.Fatalf("left behind: %v", s)
		}
	})
}
