package mux

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestEndToEndAddListCallRemove(t *testing.T) {
	e := start(t, envOpts{})
	out := e.mustOK("add_server", addArgs("alpha", testkit.Fixture(t)))
	if !strings.Contains(out, "alpha__echo") {
		t.Errorf("add_server result lacks the tools found: %s", out)
	}
	tools := e.toolNames()
	for _, n := range []string{"add_server", "remove_server", "reload_server", "list_servers", "alpha__echo", "alpha__slow"} {
		if tools[n] == nil {
			t.Errorf("tools/list lacks %s", n)
		}
	}
	if tools["alpha__recompile"] != nil {
		t.Errorf("the relay's own tool leaked into the list")
	}
	if tools["alpha__slow"].Annotations == nil || !tools["alpha__slow"].Annotations.ReadOnlyHint {
		t.Errorf("annotations were not kept: %+v", tools["alpha__slow"].Annotations)
	}
	if got := e.mustOK("alpha__echo", map[string]any{"text": "hi"}); got != "alpha:hi" {
		t.Errorf("alpha__echo = %q", got)
	}
	res := e.call("list_servers", map[string]any{})
	var list struct{ Servers []ServerInfo }
	if err := structured(res, &list); err != nil || len(list.Servers) != 1 {
		t.Fatalf("list_servers structured: %v %+v", err, res.StructuredContent)
	}
	s := list.Servers[0]
	if s.Name != "alpha" || s.Status != StatusRunning || s.Source != "agent" || s.Pid == 0 || s.Command != testkit.Fixture(t) {
		t.Errorf("list_servers entry: %+v", s)
	}
	pid := s.Pid
	e.mustOK("remove_server", map[string]any{"name": "alpha"})
	if len(e.m.List(false)) != 0 {
		t.Errorf("alpha still listed after remove_server")
	}
	if testkit.Alive(pid) {
		t.Errorf("alpha's child %d still runs after remove_server", pid)
	}
	e.mustFail("alpha__echo", map[string]any{"text": "hi"}, `no server named "alpha"`)
	if e.toolNames()["alpha__echo"] != nil {
		t.Errorf("alpha__echo still listed after remove_server")
	}
}

func TestNamespacingEdgeCases(t *testing.T) {
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("a", testkit.Fixture(t)))
	e.mustOK("add_server", addArgs("b-2", testkit.Fixture(t)))
	for _, srv := range []string{"a", "b-2"} {
		if got := e.mustOK(srv+"__echo", map[string]any{"text": "x"}); got != srv+":x" {
			t.Errorf("%s__echo routed to the wrong server: %q", srv, got)
		}
		for _, tool := range []string{"has__sep", "ünïcode", "trail_"} {
			if got := e.mustOK(srv+"__"+tool, map[string]any{}); got != "called "+tool {
				t.Errorf("%s__%s = %q", srv, tool, got)
			}
		}
	}
	long := strings.Repeat("x", 126)
	if e.toolNames()["a__"+long] != nil {
		t.Errorf("a tool name over 64 characters was listed")
	}
	warned := false
	for _, w := range e.server("a").Warnings {
		warned = warned || strings.Contains(w, "64 characters")
	}
	if !warned {
		t.Errorf("list_servers has no warning for the long name: %v", e.server("a").Warnings)
	}
	e.mustFail("a__nope", map[string]any{}, `has no tool "nope"`)
	e.mustFail("nosep", map[string]any{}, "SERVER__TOOL")
}

func TestNameRules(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"", "empty"},
		{"a.b", "letters, digits"},
		{"ä", "letters, digits"},
		{"a__b", "separator"},
		{"a_", "ends in"},
		{"ok-name_1", ""},
	} {
		err := ValidateName(c.name, "__")
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("ValidateName(%q) = %v, want %q", c.name, err, c.want)
		}
	}
	for _, full := range []string{"a__b", "a__b__c", "a____", "x__ü"} {
		s, n, ok := splitName(full, "__")
		if !ok || joinName(s, "__", n) != full || strings.Contains(s, "__") {
			t.Errorf("splitName(%q) = %q %q %v", full, s, n, ok)
		}
	}
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("dup", testkit.Fixture(t)))
	e.mustFail("add_server", addArgs("dup", testkit.Fixture(t)), "exists already")
	e.mustFail("add_server", addArgs("bad_", testkit.Fixture(t)), "ends in")
	e.mustFail("add_server", addArgs("", testkit.Fixture(t)), "empty")
	e.mustFail("add_server", addArgs(strings.Repeat("n", 33), testkit.Fixture(t)), "at most 32")
	e.mustFail("remove_server", map[string]any{"name": "ghost"}, `no server named "ghost"`, "dup")
	e.mustFail("reload_server", map[string]any{"name": "ghost"}, `no server named "ghost"`)
	e.mustFail("ghost__echo", map[string]any{}, `no server named "ghost"`, "dup")
}

func TestAddServerFailsWithStderr(t *testing.T) {
	e := start(t, envOpts{})
	e.mustFail("add_server", map[string]any{"name": "nope", "command": "/nonexistent/prog"}, "nope")
	e.mustFail("add_server", map[string]any{"name": "sh", "command": "sh", "args": []string{"-c", "echo boom-on-stderr >&2; exit 3"}}, "boom-on-stderr")
	if len(e.m.List(false)) != 0 {
		t.Errorf("failed servers stay listed: %+v", e.m.List(false))
	}
}

func TestAddServerPolicy(t *testing.T) {
	e := start(t, envOpts{cfg: Config{AllowedCommands: []string{testkit.Fixture(t)}, AllowedEnv: []string{"FIXTURE_NAME"}}})
	e.mustFail("add_server", map[string]any{"name": "x", "command": "sh"}, "not an allowed command")
	// An allowed program may not bring a build (a shell command) nor set
	// an env key that is not listed.
	args := addArgs("x", testkit.Fixture(t))
	args["build"] = "id > pwned"
	e.mustFail("add_server", args, "build is not accepted")
	args = addArgs("x", testkit.Fixture(t))
	args["env"] = map[string]string{"LD_PRELOAD": "/tmp/evil.so"}
	e.mustFail("add_server", args, "env keys not allowed: LD_PRELOAD")
	e.mustFail("add_server", map[string]any{"name": "c", "cli_schema": []string{testkit.Fixture(t), "schema"}, "command": "sh"}, `"sh" is not an allowed command`)
	if len(e.m.List(false)) != 0 {
		t.Errorf("a refused server was started: %+v", e.m.List(false))
	}
	e.mustOK("add_server", addArgs("x", testkit.Fixture(t)))

	d := start(t, envOpts{cfg: Config{DisableAddServer: true}})
	if d.toolNames()["add_server"] != nil {
		t.Errorf("add_server listed with add_server disabled")
	}
	d.mustFail("add_server", addArgs("x", testkit.Fixture(t)))
}

// A call tells a 2026-07-28 child the client's own capabilities (its
// input_required requests go to the client as they are), under the mux's
// session otherwise.
func TestChildSeesTheClientsCapabilities(t *testing.T) {
	for _, sampling := range []bool{false, true} {
		t.Run(fmt.Sprintf("sampling=%v", sampling), func(t *testing.T) {
			e := start(t, envOpts{sampling: sampling})
			e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
			want := fmt.Sprintf("client=test sampling=%v", sampling)
			if got := e.mustOK("s__whoami", map[string]any{}); got != want {
				t.Errorf("whoami: %q, want %q", got, want)
			}
		})
	}
}

// No server's tool takes the name of one of mcpflow's own: with separator
// "_", a server "list" whose tool is "servers" would be list_servers, and
// in single mode a tool named like the rebuild tool would replace it.
func TestOwnToolsCannotBeShadowed(t *testing.T) {
	e := start(t, envOpts{cfg: Config{Separator: "_"}})
	e.mustOK("add_server", map[string]any{"name": "list", "command": testkit.Fixture(t), "env": map[string]string{"FIXTURE_NAME": "list", "FIXTURE_EXTRA_TOOL": "servers"}})
	warned := false
	for _, w := range e.server("list").Warnings {
		warned = warned || strings.Contains(w, `"list_servers"`) && strings.Contains(w, "list_servers tool")
	}
	if !warned {
		t.Errorf("no warning for the shadowing tool: %v", e.server("list").Warnings)
	}
	if got := e.mustOK("list_servers", map[string]any{}); !strings.Contains(got, "list [running") {
		t.Errorf("list_servers is no longer mcpflow's: %q", got)
	}
}

// An allowed command given as a path names one file: a relative command
// is read against the agent's cwd and must be that file, so another
// folder's ./bin/server is refused even though its name matches.
func TestAddServerAllowedPathIsOneFile(t *testing.T) {
	testkit.UnixOnly(t, "its program has no .exe")
	mine, other := t.TempDir(), t.TempDir()
	for _, dir := range []string{mine, other} {
		if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(testkit.Fixture(t), filepath.Join(dir, "bin", "server")); err != nil {
			t.Fatal(err)
		}
	}
	e := start(t, envOpts{cfg: Config{AllowedCommands: []string{filepath.Join(mine, "bin", "server")}}})
	e.mustFail("add_server", map[string]any{"name": "x", "command": "./bin/server", "cwd": other}, "not an allowed command")
	e.mustFail("add_server", map[string]any{"name": "x", "command": "server", "cwd": mine}, "not an allowed command")
	e.mustOK("add_server", map[string]any{"name": "x", "command": "./bin/server", "cwd": mine})
}
