package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/mcpflow/mcpflow/internal/protocol/bridge"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// copyFile installs src at dst (atomically, as a build would).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func TestReloadAfterSwappingBinary(t *testing.T) {
	testkit.UnixOnly(t, "its build or server is a sh script")
	bin := filepath.Join(t.TempDir(), "srv")
	copyFile(t, testkit.Fixture(t), bin)
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("s", bin))
	pid1 := e.server("s").Pid
	if e.toolNames()["s__reverse"] != nil {
		t.Fatalf("v1 lists reverse")
	}
	copyFile(t, testkit.Fixture(t, testkit.FixtureV2), bin)
	out := e.mustOK("reload_server", map[string]any{"name": "s"})
	if !strings.Contains(out, "s__reverse (new)") {
		t.Errorf("reload_server does not report the new tool: %s", out)
	}
	if e.toolNames()["s__reverse"] == nil {
		t.Errorf("s__reverse not listed after reload")
	}
	if got := e.mustOK("s__reverse", map[string]any{"text": "abc"}); got != "cba" {
		t.Errorf("s__reverse = %q", got)
	}
	info := e.server("s")
	if info.Pid == pid1 || testkit.Alive(pid1) {
		t.Errorf("the old child %d was not replaced (now %d)", pid1, info.Pid)
	}
	if info.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", info.Restarts)
	}
}

func TestCallsDuringRemove(t *testing.T) {
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	var wg sync.WaitGroup
	results := make(chan string, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "s__slow", Arguments: map[string]any{"ms": 100}})
			switch {
			case err != nil:
				results <- "protocol error: " + err.Error()
			case res.IsError:
				results <- "tool error: " + testkit.Text(res)
			default:
				results <- testkit.Text(res)
			}
		}()
	}
	// Some calls are in flight, some not yet sent, when the server goes:
	// the mix is the subject, and either outcome of each call is checked.
	time.Sleep(30 * time.Millisecond)
	e.mustOK("remove_server", map[string]any{"name": "s"})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("calls still pending 20 s after remove_server: deadlock")
	}
	close(results)
	n := 0
	for r := range results {
		n++
		if r != "slept 100" && !strings.Contains(r, `server "s"`) && !strings.Contains(r, `server named "s"`) {
			t.Errorf("call result is neither the answer nor a clean error naming the server: %s", r)
		}
	}
	if n != 10 {
		t.Errorf("%d results, want 10", n)
	}
}

func TestConcurrentAddRemoveReload(t *testing.T) {
	e := start(t, envOpts{})
	var wg sync.WaitGroup
	for i := range 4 {
		name := fmt.Sprintf("s%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2 {
				if res := e.call("add_server", addArgs(name, testkit.Fixture(t))); res.IsError {
					t.Errorf("add %s: %s", name, testkit.Text(res))
					return
				}
				e.call("reload_server", map[string]any{"name": name})
				e.call(name+"__echo", map[string]any{"text": "x"})
				if res := e.call("remove_server", map[string]any{"name": name}); res.IsError {
					t.Errorf("remove %s: %s", name, testkit.Text(res))
				}
			}
		}()
	}
	// A racing duplicate: exactly one of two adds of the same name wins.
	wins := make(chan bool, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wins <- !e.call("add_server", addArgs("dup", testkit.Fixture(t))).IsError
		}()
	}
	wg.Wait()
	close(wins)
	won := 0
	for w := range wins {
		if w {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d of two concurrent adds of one name won, want 1", won)
	}
	if l := e.m.List(false); len(l) != 1 || l[0].Name != "dup" {
		t.Errorf("servers left: %+v", l)
	}
}

func TestCrashThenReload(t *testing.T) {
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	e.mustOK("add_server", addArgs("other", testkit.Fixture(t)))
	pid := e.server("s").Pid
	if e.toolNames()["s__echo"] == nil { // the client has the list: it hears of changes
		t.Fatal("s__echo not listed")
	}
	e.mu.Lock()
	before := e.changed
	e.mu.Unlock()
	if p, err := os.FindProcess(pid); err != nil || p.Kill() != nil {
		t.Fatalf("cannot kill %d: %v", pid, err)
	}
	testkit.Eventually(t, 10*time.Second, "status crashed", func() bool { return e.server("s").Status == StatusCrashed })
	if e.toolNames()["s__echo"] != nil {
		t.Errorf("a crashed server's tools are still listed")
	}
	testkit.Eventually(t, 10*time.Second, "list_changed after the crash", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.changed > before
	})
	if r := e.server("s").Report; !strings.Contains(r, "fixture s v1 starting") {
		t.Errorf("crash report lacks the stderr tail: %q", r)
	}
	e.mustFail("s__echo", map[string]any{"text": "x"}, "crashed", "reload_server")
	if got := e.mustOK("other__echo", map[string]any{"text": "x"}); got != "other:x" {
		t.Errorf("the other server was disturbed: %q", got)
	}
	e.mustOK("reload_server", map[string]any{"name": "s"})
	if got := e.mustOK("s__echo", map[string]any{"text": "back"}); got != "s:back" {
		t.Errorf("after reload s__echo = %q", got)
	}
	if s := e.server("s"); s.Status != StatusRunning || s.Restarts != 1 {
		t.Errorf("after reload: %+v", s)
	}
}

func TestCrashDuringCall(t *testing.T) {
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	e.mustFail("s__exit", map[string]any{"code": 7}, "crashed", "exit status 7", "reload_server")
	testkit.Eventually(t, 10*time.Second, "status crashed", func() bool { return e.server("s").Status == StatusCrashed })
}

func TestSamplingProgressAndLogsBothEras(t *testing.T) {
	for _, c := range [][2]string{{"2025-06-18", ""}, {"", ""}, {"2025-06-18", "2025-06-18"}} {
		version, child := c[0], c[1]
		if version == "" && child != "" {
			continue
		}
		t.Run("client="+orLatest(version)+",child="+orLatest(child), func(t *testing.T) {
			env := map[string]string{"FIXTURE_NAME": "s"}
			if child != "" {
				env["FIXTURE_VERSIONS"] = child
			}
			// A configured server: the client's handshake finds it up, and
			// a 2026-07-28 client stays in its era when the server does.
			e := start(t, envOpts{version: version, sampling: true, cfg: Config{Servers: []ServerSpec{{Name: "s", Command: []string{testkit.Fixture(t)}, Env: env}}}})
			want := version
			if want == "" {
				want = "2026-07-28"
			}
			if got := e.cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("front negotiated %q, want %q", got, want)
			}
			testkit.Eventually(t, 10*time.Second, "the child to see the client's roots", func() bool {
				return testkit.Text(e.call("s__roots", map[string]any{})) == "roots: file:///proj"
			})
			if got := e.mustOK("s__sample", map[string]any{"text": "question"}); got != "model said: echo of question" {
				t.Errorf("sampling through the mux: %q", got)
			}
			res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{
				Meta: mcp.Meta{"progressToken": "tok-1"}, Name: "s__progress", Arguments: map[string]any{"n": 3},
			})
			if err != nil || res.IsError {
				t.Fatalf("progress: %v %v", err, res)
			}
			testkit.Eventually(t, 10*time.Second, "3 progress notifications", func() bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				return len(e.progress) == 3
			})
			if err := e.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			// A 2026-07-28 request says the level it wants logs at in its
			// _meta (the session's level is of the legacy era).
			res, err = e.cs.CallTool(context.Background(), &mcp.CallToolParams{
				Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug"}, Name: "s__log", Arguments: map[string]any{"text": "careful"},
			})
			if err != nil || res.IsError {
				t.Fatalf("log: %v %v", err, res)
			}
			testkit.Eventually(t, 10*time.Second, "the child's log message", func() bool {
				e.mu.Lock()
				defer e.mu.Unlock()
				for _, l := range e.logs {
					if l.Logger == "fx" && l.Level == "warning" && fmt.Sprint(l.Data) == "careful" {
						return true
					}
				}
				return false
			})
		})
	}
}

func orLatest(v string) string {
	if v == "" {
		return "latest"
	}
	return v
}

func TestCancellationReachesChild(t *testing.T) {
	var logs testkit.Buffer
	e := start(t, envOpts{cfg: Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__slow", Arguments: map[string]any{"ms": 20000}})
	if err == nil {
		t.Fatal("a canceled call succeeded")
	}
	// The fixture says so on stderr when its handler's context ends.
	testkit.Eventually(t, 10*time.Second, "the child to see the cancellation", func() bool {
		return strings.Contains(logs.String(), "slow canceled")
	})
}

func TestPromptsResourcesCompletion(t *testing.T) {
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("a", testkit.Fixture(t)))
	e.mustOK("add_server", addArgs("b", testkit.Fixture(t)))
	ctx := context.Background()
	pr, err := e.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__greet", Arguments: map[string]string{"who": "you"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello you from b" {
		t.Fatalf("b__greet: %v %+v", err, pr)
	}
	rr, err := e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://a/info"})
	if err != nil || rr.Contents[0].Text != "info of a" {
		t.Fatalf("read fixture://a/info: %v %+v", err, rr)
	}
	rr, err = e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://b/item/42"})
	if err != nil || rr.Contents[0].Text != "item fixture://b/item/42 of b" {
		t.Fatalf("read template: %v %+v", err, rr)
	}
	for _, c := range []struct {
		ref  mcp.CompleteReference
		want string
	}{
		{mcp.CompleteReference{Type: "ref/prompt", Name: "b__greet"}, "b:greet"},
		{mcp.CompleteReference{Type: "ref/resource", URI: "fixture://a/item/{id}"}, "a:fixture://a/item/{id}"},
	} {
		cr, err := e.cs.Complete(ctx, &mcp.CompleteParams{Ref: &c.ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "y"}})
		if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != c.want {
			t.Errorf("complete %+v: %v %+v, want %q", c.ref, err, cr, c.want)
		}
	}
}

func TestInstructionsCombined(t *testing.T) {
	e := start(t, envOpts{cfg: Config{Servers: []ServerSpec{
		{Name: "one", Command: []string{testkit.Fixture(t)}, Env: map[string]string{"FIXTURE_NAME": "one"}},
		{Name: "two", Command: []string{testkit.Fixture(t)}, Env: map[string]string{"FIXTURE_NAME": "two"}},
	}}})
	in := e.cs.InitializeResult().Instructions
	for _, want := range []string{"## one\ninstructions of one v1", "## two\ninstructions of two v1"} {
		if !strings.Contains(in, want) {
			t.Errorf("instructions lack %q:\n%s", want, in)
		}
	}
	if s := e.server("one"); s.Source != "config" || s.Status != StatusRunning {
		t.Errorf("configured server: %+v", s)
	}
	if got := e.mustOK("two__echo", map[string]any{"text": "x"}); got != "two:x" {
		t.Errorf("two__echo = %q", got)
	}
}

func TestCallToolAndVerboseList(t *testing.T) {
	e := start(t, envOpts{cfg: Config{CallTool: "call_tool"}})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	if got := e.mustOK("call_tool", map[string]any{"name": "s__echo", "arguments": map[string]any{"text": "via"}}); got != "s:via" {
		t.Errorf("call_tool = %q", got)
	}
	e.mustFail("call_tool", map[string]any{"name": "t__echo"}, `no server named "t"`)
	out := e.mustOK("list_servers", map[string]any{"verbose": true})
	if !strings.Contains(out, "s__echo: Echo the text.") || !strings.Contains(out, `"text"`) {
		t.Errorf("verbose list_servers lacks schemas:\n%s", out)
	}
}

func TestShutdownLeavesNoProcess(t *testing.T) {
	testkit.UnixOnly(t, "its build or server is a sh script")
	e := start(t, envOpts{})
	e.mustOK("add_server", map[string]any{"name": "sh", "command": "sh", "args": []string{"-c", "sleep 300 & exec " + testkit.Fixture(t)}})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	var pids []int
	for _, s := range e.m.List(false) {
		pids = append(pids, s.Pid)
	}
	pgid := pids[0]
	e.shutdown()
	e.cs = nil
	for _, p := range pids {
		if testkit.Alive(p) {
			t.Errorf("child %d survived the mux", p)
		}
	}
	// The grandchild (sleep) was in the child's process group.
	if testkit.GroupAlive(pgid) {
		t.Errorf("process group %d survived the mux", pgid)
	}
}

// TestLegacyOnlyPythonChild runs examples/mux/notes_server.py, which
// refuses server/discover, behind a client of either era.
func TestLegacyOnlyPythonChild(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	script, _ := filepath.Abs("../../examples/mux/notes_server.py")
	for _, version := range []string{"2025-06-18", ""} {
		t.Run("client="+orLatest(version), func(t *testing.T) {
			e := start(t, envOpts{version: version})
			out := e.mustOK("add_server", map[string]any{"name": "notes", "command": py, "args": []string{script}})
			if !strings.Contains(out, "notes__add_note") {
				t.Fatalf("add_server: %s", out)
			}
			e.mustOK("notes__add_note", map[string]any{"text": "buy milk"})
			if got := e.mustOK("notes__list_notes", map[string]any{}); got != "buy milk" {
				t.Errorf("list_notes = %q", got)
			}
		})
	}
}

// testHooks is a minimal builder: spec.Build runs through sh, and only a
// good build restarts the relay.
func testHooks(name string, spec ServerSpec, r *relay.Relay, noteBuild func(result.Build)) (Hooks, error) {
	build := func(ctx context.Context) result.Build {
		if spec.Build == "" {
			return restart(ctx, r)
		}
		t0 := time.Now()
		out, err := exec.CommandContext(ctx, "sh", "-c", spec.Build).CombinedOutput()
		if err != nil {
			return result.Build{Seq: 1, Err: err, Output: string(out), Errors: string(out), Duration: time.Since(t0)}
		}
		res := restart(ctx, r)
		res.Seq, res.Skipped, res.Duration, res.Output = 1, false, time.Since(t0), string(out)
		return res
	}
	cycle := func(ctx context.Context) result.Build {
		res := build(ctx)
		noteBuild(res) // as the builder's OnResult does in cmd
		return res
	}
	return Hooks{Start: cycle, Reload: cycle}, nil
}

func TestReloadWithBuildHooks(t *testing.T) {
	testkit.UnixOnly(t, "its build or server is a sh script")
	dir := t.TempDir()
	bin := filepath.Join(dir, "srv")
	src := filepath.Join(dir, "src")
	copyFile(t, testkit.Fixture(t), src)
	e := start(t, envOpts{cfg: Config{NewBackend: NewRelayBackends(RelayOptions{NewHooks: testHooks})}})
	build := fmt.Sprintf("if [ -e %[1]s/broken ]; then echo 'main.go:3: syntax error' >&2; exit 1; fi; cp %[2]s %[3]s.tmp && mv %[3]s.tmp %[3]s", dir, src, bin)
	e.mustOK("add_server", map[string]any{"name": "b", "command": bin, "build": build, "env": map[string]string{"FIXTURE_NAME": "b"}})
	pid := e.server("b").Pid

	if err := os.WriteFile(filepath.Join(dir, "broken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustFail("reload_server", map[string]any{"name": "b"}, "main.go:3: syntax error", "previous server is still running")
	if got := e.mustOK("b__echo", map[string]any{"text": "x"}); got != "b:x" {
		t.Errorf("the old child does not serve after a failed build: %q", got)
	}
	if s := e.server("b"); s.Pid != pid || s.Status != StatusRunning || s.LastBuild == nil || s.LastBuild.OK {
		t.Errorf("after a failed build: %+v", s)
	}

	os.Remove(filepath.Join(dir, "broken"))
	copyFile(t, testkit.Fixture(t, testkit.FixtureV2), src)
	out := e.mustOK("reload_server", map[string]any{"name": "b"})
	if !strings.Contains(out, "Build succeeded in") || !strings.Contains(out, "b__reverse (new)") {
		t.Errorf("reload_server after a good build: %s", out)
	}
	if got := e.mustOK("b__reverse", map[string]any{"text": "ab"}); got != "ba" {
		t.Errorf("b__reverse = %q", got)
	}
}

func TestBuildNeedsHooks(t *testing.T) {
	e := start(t, envOpts{})
	e.mustFail("add_server", map[string]any{"name": "b", "command": testkit.Fixture(t), "build": "true"}, "build and watch are not available")
}

func TestChildListChangedBurst(t *testing.T) {
	e := start(t, envOpts{})
	e.mustOK("add_server", addArgs("s", testkit.Fixture(t)))
	e.mustOK("add_server", addArgs("o", testkit.Fixture(t)))
	if e.toolNames()["s__echo"] == nil { // the client has the list: it hears of changes
		t.Fatal("s__echo not listed")
	}
	e.mustOK("s__grow", map[string]any{"n": 40})
	// Calls keep being answered while the re-lists run.
	for range 5 {
		if got := e.mustOK("o__echo", map[string]any{"text": "x"}); got != "o:x" {
			t.Fatalf("o__echo during the burst: %q", got)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the child's new tools on the front", func() bool { return e.toolNames()["s__dyn_39"] != nil })
	if got := e.mustOK("s__dyn_39", map[string]any{}); got != "called dyn_39" {
		t.Errorf("s__dyn_39 = %q", got)
	}
	e.mu.Lock()
	n := e.changed
	e.mu.Unlock()
	if n == 0 {
		t.Errorf("the client got no tools/list_changed")
	}
	t.Logf("40 child list_changed -> %d front list_changed", n)
}

// TestLegacyChildSamplingRequest: a legacy child's own sampling request
// reaches a legacy client; a 2026-07-28 client may not be sent one, so the
// child gets an error and the call one clean tool error.
func TestLegacyChildSamplingRequest(t *testing.T) {
	legacyOnly := addArgs("s", testkit.Fixture(t))
	legacyOnly["env"] = map[string]string{"FIXTURE_NAME": "s", "FIXTURE_VERSIONS": "2025-06-18"}
	legacy := start(t, envOpts{version: "2025-06-18", sampling: true})
	legacy.mustOK("add_server", legacyOnly)
	if got := legacy.mustOK("s__legacy_sample", map[string]any{"text": "q"}); got != "model said: echo of q" {
		t.Errorf("legacy client, legacy child: %q", got)
	}
	modern := start(t, envOpts{sampling: true, cfg: Config{Servers: []ServerSpec{{Name: "s", Command: []string{testkit.Fixture(t)}, Env: map[string]string{"FIXTURE_NAME": "s"}}}}})
	if v := modern.cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("a 2026-07-28 client with a server of both eras: %q", v)
	}
	res, err := modern.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "s__legacy_sample", Arguments: map[string]any{"text": "q"}})
	if err == nil && !res.IsError {
		t.Errorf("modern client, legacy child's sampling request: unexpected success %q", testkit.Text(res))
	}
	if got := modern.mustOK("s__echo", map[string]any{"text": "x"}); got != "s:x" {
		t.Errorf("after the refused request: %q", got)
	}
}

// TestErasIndependently: a legacy client with a child that serves only
// 2026-07-28, and a 2026-07-28 client with a child that serves only the
// legacy handshake, each through the mux.
func TestErasIndependently(t *testing.T) {
	for _, c := range []struct{ name, client, child string }{
		{"legacy client, modern-only child", "2025-11-25", "2026-07-28"},
		{"modern client, legacy-only child", "", "2025-11-25,2025-06-18"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bridged := NewRelayBackends(RelayOptions{Configure: func(_ ServerSpec, rc *relay.Config) { rc.Bridge = bridge.Options{}.New }})
			e := start(t, envOpts{version: c.client, cfg: Config{NewBackend: bridged}})
			args := addArgs("s", testkit.Fixture(t))
			args["env"] = map[string]string{"FIXTURE_NAME": "s", "FIXTURE_VERSIONS": c.child}
			e.mustOK("add_server", args)
			if got := e.mustOK("s__echo", map[string]any{"text": "x"}); got != "s:x" {
				t.Fatalf("s__echo: %q", got)
			}
			ctx := context.Background()
			if _, err := e.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__greet", Arguments: map[string]string{"who": "you"}}); err != nil {
				t.Errorf("s__greet: %v", err)
			}
			if _, err := e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://s/info"}); err != nil {
				t.Errorf("read fixture://s/info: %v", err)
			}
		})
	}
}

// TestConfiguredServerBrokenAtStart: a configured server whose first build
// fails stays listed as build-failed with the compiler output; once fixed,
// reload_server brings it up with its tools, prompts and resources (its
// session began with the relay's stand-in handshake).
func TestConfiguredServerBrokenAtStart(t *testing.T) {
	testkit.UnixOnly(t, "its build or server is a sh script")
	dir := t.TempDir()
	bin := filepath.Join(dir, "srv")
	src := filepath.Join(dir, "src")
	copyFile(t, testkit.Fixture(t), src)
	if err := os.WriteFile(filepath.Join(dir, "broken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	build := fmt.Sprintf("if [ -e %[1]s/broken ]; then echo 'main.go:3: syntax error' >&2; exit 1; fi; cp %[2]s %[3]s.tmp && mv %[3]s.tmp %[3]s", dir, src, bin)
	e := start(t, envOpts{cfg: Config{
		Servers:    []ServerSpec{{Name: "b", Command: []string{bin}, Build: build, Env: map[string]string{"FIXTURE_NAME": "b"}}},
		NewBackend: NewRelayBackends(RelayOptions{NewHooks: testHooks}),
	}})
	s := e.server("b")
	if s.Status != StatusBuildFailed || s.LastBuild == nil || !strings.Contains(s.LastBuild.Errors, "syntax error") {
		t.Fatalf("a server broken at start: %+v %+v", s, s.LastBuild)
	}
	e.mustFail("b__echo", map[string]any{"text": "x"}, "build-failed", "reload_server")
	os.Remove(filepath.Join(dir, "broken"))
	e.mustOK("reload_server", map[string]any{"name": "b"})
	if got := e.mustOK("b__echo", map[string]any{"text": "x"}); got != "b:x" {
		t.Fatalf("b__echo after the fix: %q", got)
	}
	ctx := context.Background()
	if _, err := e.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__greet", Arguments: map[string]string{"who": "you"}}); err != nil {
		t.Errorf("b__greet after the fix: %v", err)
	}
	if _, err := e.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fixture://b/info"}); err != nil {
		t.Errorf("read fixture://b/info after the fix: %v", err)
	}
}

// TestConfiguredServerRestartsAfterCrash: a configured server follows its
// on_crash ("restart" by default): it comes back by itself, counted in
// restarts, with its tools published again.
func TestConfiguredServerRestartsAfterCrash(t *testing.T) {
	e := start(t, envOpts{cfg: Config{Servers: []ServerSpec{{Name: "c", Command: []string{testkit.Fixture(t)}, Env: map[string]string{"FIXTURE_NAME": "c"}}}}})
	before := e.server("c")
	if before.Status != StatusRunning || before.Pid == 0 {
		t.Fatalf("configured server: %+v", before)
	}
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "c__exit", Arguments: map[string]any{"code": 3}}) // the call itself fails: the child exits
	t.Logf("exit: %s %v", testkit.Text(res), err)
	testkit.Eventually(t, 10*time.Second, "the server to come back with a new pid", func() bool {
		s := e.server("c")
		return s.Status == StatusRunning && s.Pid != 0 && s.Pid != before.Pid && s.Restarts == before.Restarts+1 && len(s.Tools) > 0
	})
	if got := e.mustOK("c__echo", map[string]any{"text": "x"}); got != "c:x" {
		t.Fatalf("c__echo after the automatic restart: %q", got)
	}
}

// restart restarts r without a build, reported as a skipped build.
func restart(ctx context.Context, r *relay.Relay) result.Build {
	rs, _ := r.Restart(ctx)
	return result.Build{Skipped: true, OK: true, Restart: rs}
}

// TestReloadServerEnv: reload_server offers env when a configured server
// has run.env_overridable, naming the keys each allows; a reload with env
// starts a child that has it, and a key not allowed is refused.
func TestReloadServerEnv(t *testing.T) {
	if schema, _ := json.Marshal(start(t, envOpts{}).toolNames()["reload_server"].InputSchema); strings.Contains(string(schema), `"env"`) {
		t.Errorf("reload_server offers env with no server allowing any: %s", schema)
	}
	e := start(t, envOpts{cfg: Config{Servers: []ServerSpec{
		{Name: "s", Command: []string{testkit.Fixture(t)}, Env: map[string]string{"FIXTURE_NAME": "s"}, EnvOverridable: []string{"FOO", "BAR"}},
		{Name: "o", Command: []string{testkit.Fixture(t)}, Env: map[string]string{"FIXTURE_NAME": "o"}},
	}}})
	testkit.Eventually(t, 10*time.Second, "s's tools", func() bool { return e.toolNames()["s__env"] != nil })
	schema, _ := json.Marshal(e.toolNames()["reload_server"].InputSchema)
	if !strings.Contains(string(schema), `"env"`) || !strings.Contains(string(schema), "s: FOO, BAR") || strings.Contains(string(schema), "o:") {
		t.Errorf("reload_server's env does not name s's keys alone: %s", schema)
	}
	if got := e.mustOK("s__env", map[string]any{"text": "FOO"}); got != "" {
		t.Fatalf("FOO before the reload = %q", got)
	}
	e.mustOK("reload_server", map[string]any{"name": "s", "env": map[string]string{"FOO": "bar"}})
	if got := e.mustOK("s__env", map[string]any{"text": "FOO"}); got != "bar" {
		t.Errorf("FOO in the reloaded child = %q, want bar", got)
	}
	e.mustFail("reload_server", map[string]any{"name": "s", "env": map[string]string{"PATH": "/nowhere"}}, "PATH", "FOO")
	e.mustFail("reload_server", map[string]any{"name": "o", "env": map[string]string{"FOO": "bar"}}, "FOO", "none")
}
