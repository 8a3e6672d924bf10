//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The mux end-to-end tests run the real mcpflow binary as a mux of a Go
// server built by a build step (a copy of examples/echo) and a Python
// server (examples/mux/notes_server.py, legacy protocol only), edit real
// files, and drive the management tools from a Go SDK client.

const muxConfig = `[servers.echo.build]
command = "cd echo && go build -o ../bin/echo ."

[servers.echo.run]
command = ["bin/echo"]

[servers.echo.watch]
paths = ["echo"]
include = ["**/*.go"]

[servers.notes.run]
command = ["python3", "notes_server.py"]

[servers.notes.watch]
include = ["notes_server.py"]

[log]
file = ".mcpflow/mcpflow.log"
`

// muxProject writes a mux project: echo/ (examples/echo), notes_server.py
// and mcpflow.toml.
func muxProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	echo := copyExample(t)
	if err := os.Rename(echo, filepath.Join(dir, "echo")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "echo", "mcpflow.toml"))
	notes, err := os.ReadFile(filepath.Join("..", "..", "examples", "mux", "notes_server.py"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"notes_server.py": notes, "mcpflow.toml": []byte(muxConfig)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// callResult calls a tool and returns its whole result.
func (h *e2e) callResult(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("call %s: %v\nstderr:\n%s", name, err, h.stderr.String())
	}
	return res
}

// mustCall calls a tool that must succeed and returns its text.
func (h *e2e) mustCall(name string, args any) string {
	h.t.Helper()
	res := h.callResult(name, args)
	if res.IsError {
		h.t.Fatalf("%s failed: %s\nstderr:\n%s", name, testkit.Text(res), h.stderr.String())
	}
	return testkit.Text(res)
}

// mustFail calls a tool that must fail with a text containing each of want.
func (h *e2e) mustFail(name string, args any, want ...string) string {
	h.t.Helper()
	res := h.callResult(name, args)
	text := testkit.Text(res)
	if !res.IsError {
		h.t.Fatalf("%s succeeded: %s", name, text)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			h.t.Fatalf("%s: the error lacks %q:\n%s", name, w, text)
		}
	}
	return text
}

// servers returns list_servers' structured result by name.
func (h *e2e) servers() map[string]mux.ServerInfo {
	h.t.Helper()
	res := h.callResult("list_servers", map[string]any{})
	if res.IsError {
		h.t.Fatalf("list_servers: %s", testkit.Text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct{ Servers []mux.ServerInfo }
	if err := json.Unmarshal(b, &out); err != nil {
		h.t.Fatalf("list_servers structuredContent %s: %v", b, err)
	}
	m := map[string]mux.ServerInfo{}
	for _, s := range out.Servers {
		m[s.Name] = s
	}
	return m
}

// eventuallyE2E polls cond until it holds, failing after two minutes.
func (h *e2e) eventually(what string, cond func() bool) {
	h.t.Helper()
	if !testkit.Wait(2*time.Minute, cond) {
		h.t.Fatalf("timed out waiting for %s\nstderr:\n%s", what, h.stderr.String())
	}
}

// stopAndCheckGroups closes the client's side, waits for mcpflow to exit
// and checks that no process group of pids survives it, nor any process
// working in the project or started by mcpflow.
func (h *e2e) stopAndCheckGroups(pids []int) {
	h.t.Helper()
	h.cs.Close()
	select {
	case err := <-h.exited:
		if err != nil {
			h.t.Fatalf("mcpflow exit: %v\nstderr:\n%s", err, h.stderr.String())
		}
		h.exited <- nil
	case <-time.After(30 * time.Second):
		h.t.Fatal("mcpflow did not exit after stdin closed")
	}
	testkit.NoLeftovers(h.t, testkit.Procs{Groups: pids, Dir: h.dir, Tag: h.tag})
}

func TestMuxE2EConfiguredServers(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := muxProject(t)
			h := startE2E(t, dir, era.Version, "watch")
			h.waitTools("echo__echo")
			h.waitTools("notes__add_note")
			tools := h.tools()
			for _, want := range []string{"add_server", "remove_server", "reload_server", "list_servers", "echo__echo", "notes__list_notes"} {
				if !slices.Contains(tools, want) {
					t.Fatalf("tools/list lacks %s: %v", want, tools)
				}
			}
			if got := h.mustCall("echo__echo", map[string]any{"text": "hello"}); got != "hello" {
				t.Fatalf("echo__echo: %q", got)
			}
			h.mustCall("notes__add_note", map[string]any{"text": "first"})
			before := h.servers()
			echo, notes := before["echo"], before["notes"]
			if echo.Status != mux.StatusRunning || echo.Source != "config" || echo.Pid == 0 || notes.Status != mux.StatusRunning || notes.Pid == 0 {
				t.Fatalf("list_servers: %+v", before)
			}
			pids := []int{echo.Pid, notes.Pid}

			// An edit under echo's watch paths rebuilds and restarts echo
			// only; the client hears list_changed.
			drain(h.listChanged)
			editSource(t, filepath.Join(dir, "echo"), addReverse)
			h.waitListChanged()
			h.waitTools("echo__reverse")
			if got := h.mustCall("echo__reverse", map[string]any{"text": "mcpflow"}); got != "wolfpcm" {
				t.Fatalf("echo__reverse: %q", got)
			}
			after := h.servers()
			if after["echo"].Pid == echo.Pid || after["echo"].Restarts != echo.Restarts+1 {
				t.Errorf("echo was not restarted: before %+v after %+v", echo, after["echo"])
			}
			if after["notes"].Pid != notes.Pid || after["notes"].Restarts != notes.Restarts {
				t.Errorf("notes was touched by echo's edit: before %+v after %+v", notes, after["notes"])
			}
			if !strings.Contains(h.mustCall("notes__list_notes", map[string]any{}), "first") {
				t.Error("notes lost its state while echo was rebuilt")
			}
			pids = append(pids, after["echo"].Pid)

			// A broken build keeps the old echo serving, and reload_server
			// shows the compiler output.
			editSource(t, filepath.Join(dir, "echo"), breakBuild)
			h.eventually("the automatic build to fail", func() bool {
				lb := h.servers()["echo"].LastBuild
				return lb != nil && !lb.OK
			})
			if got := h.mustCall("echo__echo", map[string]any{"text": "still here"}); !strings.HasPrefix(got, "still here") {
				t.Fatalf("echo__echo after a failed build: %q", got)
			}
			h.mustFail("reload_server", map[string]any{"name": "echo"}, "undefined: undefinedThing", "previous server is still running")
			if s := h.servers()["echo"]; s.Status != mux.StatusRunning || s.Pid != after["echo"].Pid {
				t.Errorf("echo after a failed reload: %+v", s)
			}
			h.mustCall("echo__reverse", map[string]any{"text": "x"})

			// The agent adds a server, uses it, removes it.
			out := h.mustCall("add_server", map[string]any{"name": "more", "command": "python3", "args": []string{filepath.Join(dir, "notes_server.py")}})
			if !strings.Contains(out, "more__add_note") {
				t.Fatalf("add_server: %s", out)
			}
			h.waitTools("more__add_note")
			more := h.servers()["more"]
			if more.Source != "agent" || more.Status != mux.StatusRunning {
				t.Fatalf("list_servers after add_server: %+v", more)
			}
			pids = append(pids, more.Pid)
			h.mustCall("more__add_note", map[string]any{"text": "m"})
			h.mustCall("remove_server", map[string]any{"name": "more"})
			if _, ok := h.servers()["more"]; ok {
				t.Fatal("a removed server is still listed")
			}
			h.mustFail("more__add_note", map[string]any{"text": "m"}, "echo", "notes")

			// reload_server restarts a server without a build step.
			if out := h.mustCall("reload_server", map[string]any{"name": "notes"}); !strings.Contains(out, "Server restarted") {
				t.Fatalf("reload_server notes: %s", out)
			}
			s := h.servers()["notes"]
			if s.Pid == notes.Pid || s.Status != mux.StatusRunning {
				t.Fatalf("notes after reload_server: %+v", s)
			}
			pids = append(pids, s.Pid)

			// The log names the server each line concerns.
			logText := testkit.ReadFile(t, filepath.Join(dir, ".mcpflow", "mcpflow.log"))
			if !strings.Contains(logText, "server=echo") || !strings.Contains(logText, "server=notes") {
				t.Errorf("the log does not tag lines with server=NAME:\n%s", logText)
			}
			h.stopAndCheckGroups(pids)
		})
	}
}

func TestMuxE2EEmptyMuxForTheAgent(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			traffic := filepath.Join(t.TempDir(), "traffic.jsonl")
			h := startE2E(t, t.TempDir(), era.Version, "mux", "--traffic", traffic)
			tools := h.tools()
			slices.Sort(tools)
			if want := []string{"add_server", "list_servers", "reload_server", "remove_server"}; !slices.Equal(tools, want) {
				t.Fatalf("tools of an empty mux: %v", tools)
			}
			if out := h.mustCall("list_servers", map[string]any{}); !strings.Contains(out, "no servers") {
				t.Fatalf("list_servers: %s", out)
			}
			drain(h.listChanged)
			out := h.mustCall("add_server", map[string]any{"name": "fx", "command": fixtureBin})
			if !strings.Contains(out, "fx__echo") {
				t.Fatalf("add_server: %s", out)
			}
			h.waitListChanged()
			h.waitTools("fx__echo")
			if got := h.mustCall("fx__echo", map[string]any{"text": "hi"}); !strings.Contains(got, "hi") {
				t.Fatalf("fx__echo: %q", got)
			}
			pid := h.servers()["fx"].Pid
			h.mustCall("reload_server", map[string]any{"name": "fx"})
			pid2 := h.servers()["fx"].Pid
			if pid2 == pid || pid2 == 0 {
				t.Fatalf("reload_server kept pid %d (now %d)", pid, pid2)
			}
			h.mustFail("add_server", map[string]any{"name": "fx", "command": fixtureBin}, "exists already")
			h.mustFail("add_server", map[string]any{"name": "bad_", "command": fixtureBin}, "ends in")
			h.mustFail("nobody__echo", map[string]any{}, "fx")
			h.stopAndCheckGroups([]int{pid, pid2})
			checkMuxTraffic(t, traffic)
		})
	}
}

// checkMuxTraffic: a mux records its front as the client hop, with no
// server, and each server's child as that server's server hop; never the
// hop between the mux and a server's relay inside mcpflow.
func checkMuxTraffic(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var front, child int
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var x struct {
			Hop, Dir, Server string
			Msg              json.RawMessage
		}
		if err := json.Unmarshal(l, &x); err != nil {
			t.Fatalf("not a record: %v\n%s", err, l)
		}
		call := x.Dir == "c2s" && bytes.Contains(x.Msg, []byte(`"hi"`))
		switch {
		case x.Hop == "client" && x.Server != "":
			t.Errorf("a client hop record names a server: %s", l)
		case x.Hop == "client" && call && bytes.Contains(x.Msg, []byte(`"fx__echo"`)):
			front++
		case x.Hop == "server" && x.Server == "fx" && call && bytes.Contains(x.Msg, []byte(`"name":"echo"`)):
			child++
		case x.Hop == "server" && call:
			t.Errorf("the call went to the child as %s", l)
		}
	}
	if front != 1 || child != 1 {
		t.Fatalf("fx__echo recorded %d times at the front, %d at the child; want 1 and 1\n%s", front, child, data)
	}
}

func TestMuxCommandFlags(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	e := env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: &stderr, getwd: func() (string, error) { return t.TempDir(), nil }}
	if code := run(e, []string{"mux", "extra"}); code != exitUsage || !strings.Contains(stderr.String(), "unexpected argument") {
		t.Errorf("mux extra: %d %s", code, stderr.String())
	}
	stderr.Reset()
	dir := copyExample(t)
	if code := run(e, []string{"mux", "-c", filepath.Join(dir, "mcpflow.toml")}); code != exitUsage || !strings.Contains(stderr.String(), "not a mux") {
		t.Errorf("mux -c single-server file: %d %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run(e, []string{"mux", "--log-level", "loud"}); code != exitUsage {
		t.Errorf("mux --log-level loud: %d %s", code, stderr.String())
	}
}

const cliTools = `{"tools": [{"name": "say", "description": "Say the text.",
  "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "cli_command": ["{text}"]}%s]}`

const cliShout = `, {"name": "shout", "description": "Say it twice.",
  "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
  "cli_command": ["{text}", "{text}"]}`

func TestMuxE2ECLIServers(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "tools.json"), fmt.Sprintf(cliTools, ""))
			writeFile(t, filepath.Join(dir, "mcpflow.toml"), `[servers.words.cli]
schema = ["cat", "tools.json"]
command = ["echo"]

[servers.words.watch]
include = ["tools.json"]

[log]
level = "debug"
`)
			h := startE2E(t, dir, era.Version, "watch")
			h.waitTools("words__say")
			if got := h.mustCall("words__say", map[string]any{"text": "hello"}); !strings.Contains(got, "hello") {
				t.Fatalf("words__say: %q", got)
			}
			// Editing the schema's file refreshes the tools.
			drain(h.listChanged)
			writeFile(t, filepath.Join(dir, "tools.json"), fmt.Sprintf(cliTools, cliShout))
			h.waitListChanged()
			h.waitTools("words__shout")
			if got := h.mustCall("words__shout", map[string]any{"text": "hey"}); !strings.Contains(got, "hey hey") {
				t.Fatalf("words__shout: %q", got)
			}
			// The agent adds a CLI with cli_schema.
			out := h.mustCall("add_server", map[string]any{"name": "w2", "cli_schema": []string{"cat", "tools.json"}, "command": "echo", "cwd": dir})
			if !strings.Contains(out, "w2__say") || !strings.Contains(out, "w2__shout") {
				t.Fatalf("add_server cli_schema: %s", out)
			}
			if got := h.mustCall("w2__say", map[string]any{"text": "cli"}); !strings.Contains(got, "cli") {
				t.Fatalf("w2__say: %q", got)
			}
			if s := h.servers()["w2"]; s.Status != mux.StatusRunning || s.Source != "agent" {
				t.Fatalf("list_servers w2: %+v", s)
			}
			// A broken schema keeps the old tools.
			writeFile(t, filepath.Join(dir, "tools.json"), "{not json")
			h.mustFail("reload_server", map[string]any{"name": "w2"})
			h.mustCall("w2__say", map[string]any{"text": "still"})
			h.mustFail("add_server", map[string]any{"name": "w3", "cli_schema": []string{"cat", "tools.json"}}, "w3")
			h.stopAndCheckGroups(nil)
		})
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// muxExitConfig is exitConfig's project as a mux, beside a second server
// that runs in the same folder.
const muxExitConfig = `[servers.x.build]
command = "sh build.sh"
[servers.x.run]
command = ["sh", "server.sh"]
stop_timeout = "1s"
[servers.x.watch]
paths = ["."]
include = ["*.txt"]
debounce = "50ms"
[servers.y.run]
command = [%q]
[servers.y.watch]
enabled = false
[log]
level = "info"
file = "mcpflow.log"
`

// TestMuxExit: however a mux run ends, no server, grandchild or running
// build survives it.
func TestMuxExit(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stdin closed", "SIGTERM", "SIGHUP"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir := exitProject(t)
			writeFile(t, filepath.Join(dir, "mcpflow.toml"), fmt.Sprintf(muxExitConfig, fixtureBin))
			r := startExit(t, dir, nil, nil)
			r.busy()
			switch how {
			case "stdin closed":
				r.stdin.Close()
			case "SIGTERM":
				r.cmd.Process.Signal(syscall.SIGTERM)
			case "SIGHUP":
				r.cmd.Process.Signal(syscall.SIGHUP)
			}
			r.expectExit(exitOK)
			if log := readLog(dir); !strings.Contains(log, "server=y") {
				t.Errorf("server y never started:\n%s", log)
			}
		})
	}
}

// TestMuxRSS measures mcpflow mux's resident memory idle, then with 20
// idle servers behind it (the numbers in BENCHMARKS.md). It runs only with
// MCPFLOW_MUX_RSS=1 and, like every timing, asserts nothing.
func TestMuxRSS(t *testing.T) {
	if os.Getenv("MCPFLOW_MUX_RSS") == "" {
		t.Skip("set MCPFLOW_MUX_RSS=1 to measure")
	}
	bin := testkit.Build(t, testkit.MCPFlowPkg) // without the race detector
	h := startE2EBin(t, bin, t.TempDir(), "", nil, "mux")
	rss := func() string {
		time.Sleep(2 * time.Second) // a measurement, not a test: the RSS settles
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
			}
		}
		return "?"
	}
	t.Logf("idle, no servers: %s", rss())
	for i := range 20 {
		h.mustCall("add_server", map[string]any{"name": fmt.Sprintf("s%d", i), "command": fixtureBin})
	}
	t.Logf("20 idle servers: %s", rss())
	h.stopAndCheckGroups(nil)
}

// TestMuxE2EAgentServerHotReloads: a server the agent adds with build and
// watch is built first, rebuilt and restarted on a save, and keeps serving
// on a failed build, as a configured one is.
func TestMuxE2EAgentServerHotReloads(t *testing.T) {
	t.Parallel()
	dir := muxProject(t)
	os.Remove(filepath.Join(dir, "mcpflow.toml"))
	h := startE2E(t, t.TempDir(), "", "mux")
	out := h.mustCall("add_server", map[string]any{
		"name": "e", "command": "bin/echo", "cwd": dir,
		"build": "cd echo && go build -o ../bin/echo .", "watch": []string{"echo"},
	})
	if !strings.Contains(out, "e__echo") {
		t.Fatalf("add_server with build: %s", out)
	}
	first := h.servers()["e"]
	if first.LastBuild == nil || !first.LastBuild.OK || first.LastBuild.Skipped {
		t.Fatalf("no build before the start: %+v", first.LastBuild)
	}
	if !slices.Contains(h.tools(), "e__echo") { // the client has the list: it hears of changes
		t.Fatal("e__echo not listed")
	}
	drain(h.listChanged)
	editSource(t, filepath.Join(dir, "echo"), addReverse)
	h.waitListChanged()
	h.waitTools("e__reverse")
	if got := h.mustCall("e__reverse", map[string]any{"text": "ab"}); got != "ba" {
		t.Fatalf("e__reverse: %q", got)
	}
	editSource(t, filepath.Join(dir, "echo"), breakBuild)
	h.mustFail("reload_server", map[string]any{"name": "e"}, "undefined: undefinedThing", "previous server is still running")
	h.mustCall("e__reverse", map[string]any{"text": "still"})
	h.stopAndCheckGroups([]int{h.servers()["e"].Pid})
}

// TestMuxE2EBrokenAtStartThenFixed: one configured server's first build
// fails; the others serve, list_servers shows the compiler output, and
// fixing the source brings the server up with its tools.
func TestMuxE2EBrokenAtStartThenFixed(t *testing.T) {
	t.Parallel()
	dir := muxProject(t)
	editSource(t, filepath.Join(dir, "echo"), breakBuild)
	h := startE2E(t, dir, "", "watch")
	h.waitTools("notes__add_note")
	h.eventually("echo's failed build in list_servers", func() bool {
		s := h.servers()["echo"]
		return s.Status == mux.StatusBuildFailed && s.LastBuild != nil && strings.Contains(s.LastBuild.Errors, "undefined: undefinedThing")
	})
	h.mustFail("echo__echo", map[string]any{"text": "x"}, "echo", "build-failed")
	h.mustCall("notes__add_note", map[string]any{"text": "meanwhile"})
	editSource(t, filepath.Join(dir, "echo"), func(src string) string {
		return strings.Replace(src, "\tundefinedThing()\n", "", 1)
	})
	h.waitTools("echo__echo")
	if got := h.mustCall("echo__echo", map[string]any{"text": "fixed"}); got != "fixed" {
		t.Fatalf("echo__echo after the fix: %q", got)
	}
	if s := h.servers()["echo"]; s.Status != mux.StatusRunning || s.LastBuild == nil || !s.LastBuild.OK {
		t.Fatalf("echo after the fix: %+v", s)
	}
	all := h.servers()
	h.stopAndCheckGroups([]int{all["echo"].Pid, all["notes"].Pid})
}

// TestMuxE2EFirstBuildLongerThanQueueTimeout: a server whose first build
// takes longer than its relay.queue_timeout (cold caches) is listed as
// starting meanwhile and comes up when the build ends.
func TestMuxE2EFirstBuildLongerThanQueueTimeout(t *testing.T) {
	t.Parallel()
	dir := muxProject(t)
	cfg := strings.Replace(muxConfig, `command = "cd echo && go build -o ../bin/echo ."`,
		`command = "while [ ! -e release ]; do sleep 0.05; done; cd echo && go build -o ../bin/echo ."`, 1)
	cfg += "\n[servers.echo.relay]\nqueue_timeout = \"500ms\"\n"
	if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startE2E(t, dir, "", "watch")
	h.waitTools("notes__add_note")
	time.Sleep(2 * time.Second) // four queue timeouts while the build waits
	if s := h.servers()["echo"]; s.Status != mux.StatusStarting {
		t.Fatalf("echo during its first build: %+v", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitTools("echo__echo")
	if got := h.mustCall("echo__echo", map[string]any{"text": "late"}); got != "late" {
		t.Fatalf("echo__echo after the long build: %q", got)
	}
	all := h.servers()
	if all["echo"].Status != mux.StatusRunning {
		t.Fatalf("echo after its build: %+v", all["echo"])
	}
	h.stopAndCheckGroups([]int{all["echo"].Pid, all["notes"].Pid})
}

// TestMuxE2EServerInAnotherFolder: a configured server whose run.cwd is
// another folder builds there and reads its watch globs from there, and
// check, which reads them the same way, has nothing to say.
func TestMuxE2EServerInAnotherFolder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir, srv := filepath.Join(root, "mux"), filepath.Join(root, "srv")
	os.Mkdir(dir, 0o755)
	os.Mkdir(srv, 0o755)
	writeFile(t, filepath.Join(srv, "src.txt"), "v1")
	writeFile(t, filepath.Join(dir, "mcpflow.toml"), fmt.Sprintf(`[servers.s.build]
command = "cp src.txt variant"
[servers.s.run]
command = [%q, "-variant-file", "variant"]
cwd = "../srv"
[servers.s.watch]
paths = ["../srv"]
include = ["src.txt"]
`, fixtureBin))
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getwd: func() (string, error) { return dir, nil }}
	if code := cmdCheck(e, []string{"-c", filepath.Join(dir, "mcpflow.toml")}); code != exitOK || !strings.Contains(out.String(), "# no warnings") || !strings.Contains(out.String(), "1 files match") {
		t.Errorf("check: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	h := startE2E(t, dir, "", "watch")
	h.waitTools("s__echo")
	writeFile(t, filepath.Join(srv, "src.txt"), "v2")
	h.waitTools("s__reverse")
	if got := h.mustCall("s__reverse", map[string]any{"text": "abc"}); got != "cba" {
		t.Fatalf("s__reverse: %q", got)
	}
}
