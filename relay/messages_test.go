package relay

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/messages.golden")

// TestMessageCatalog renders every message the agent can receive from the
// relay (messages.go) and compares the lot with testdata/messages.golden;
// go test -run TestMessageCatalog -update ./relay rewrites it after a
// deliberate change.
func TestMessageCatalog(t *testing.T) {
	t.Parallel()
	e := exitInfo{status: "exit status 3", uptime: 64*time.Millisecond + 310*time.Microsecond, stderr: "fatal: cannot open db.sqlite\npanic: boom"}
	bare := exitInfo{status: "killed by SIGKILL", uptime: 12*time.Second + 345*time.Millisecond}
	const tool = "recompile"
	buildErr := errors.New("build command \"tsc\" failed: exit status 2")
	diff := result.ToolDiff{Known: true, Added: []string{"reverse"}, Removed: []string{"old"}, Changed: []string{"echo"},
		Current: []string{"echo", "reverse"},
		Details: map[string]result.ToolDetail{
			"reverse": {Description: "Reverse the text.", InputSchema: `{"type":"object"}`},
			"echo":    {Description: "Echo.", InputSchema: `{"type":"object","required":["text"]}`, SchemaChanged: true},
		}}
	rs := &result.Restart{Duration: 40 * time.Millisecond, Stop: 2 * time.Millisecond, Start: 1500 * time.Microsecond,
		Replay: 30 * time.Millisecond, ToolsList: 6500 * time.Microsecond, Tools: diff,
		Handshake: []string{msgHandshakeChanged("instructions", `"b"`, `"a"`)}}
	same := &result.Restart{Duration: 40 * time.Millisecond, Tools: result.ToolDiff{Known: true, Current: []string{"echo"}}}
	first := &result.Restart{Duration: 40 * time.Millisecond, Tools: result.ToolDiff{Current: []string{"echo"}}}
	failed := &result.Restart{Err: errors.New(msgFailedStart(e, "run.command in mcpflow.toml", tool))}
	outcome := func(o result.Build, running bool) string {
		text, isErr := formatOutcome(o, tool, running)
		return fmt.Sprintf("isError=%v\n%s", isErr, text)
	}
	cases := []struct{ name, text string }{
		{"building", msgBuilding(tool)},
		{"build failed", msgBuildFailed(buildErr, "src/index.ts(3,1): error TS1005: ';' expected.\n", tool)},
		{"failed start", msgFailedStart(e, "run.command in mcpflow.toml", tool)},
		{"no start", msgNoStart(errors.New(`start "./server": no such file or directory`), "run.command in mcpflow.toml")},
		{"no start: no working directory", msgNoStart(fmt.Errorf("%w: /proj/srv", errNoDir), "run.command in mcpflow.toml")},
		{"no handshake", msgNoHandshake(`"python3 server.py"`, "run.command in mcpflow.toml", 30*time.Second, exitInfo{stderr: "Uvicorn running on http://127.0.0.1:8000"}, tool)},
		{"bad start", msgBadStart(errors.New("tools/list: server answered error -32603: boom"), tool)},
		{"crash, restarting", msgCrashRestarting(e)},
		{"crash, restarting, no stderr", msgCrashRestarting(bare)},
		{"crash, on_crash wait", msgCrashWait(e, tool)},
		{"crash loop", msgCrashLoop(e, 3, tool)},
		{"crash after a failed build", msgCrashAfterFailedBuild(e, tool)},
		{"not running", msgNotRunning},
		{"instructions", msgInstructions(msgBuilding(tool))},
		{"notice: build failed", noticeBuildFailed(tool)},
		{"notice: failed build running", noticeFailedBuildRunning(tool)},
		{"notice: crash restarted", noticeCrashRestarted("exit status 4")},
		{"error: down", errTextDown(msgBuilding(tool))},
		{"error: crashed", errTextCrashed(msgCrashRestarting(bare))},
		{"error: restarted", errTextRestarted},
		{"error: shutting down", errTextShuttingDown},
		{"error: bad UTF-8", wire.TextBadUTF8},
		{"error: bad JSON", wire.TextBadJSON},
		{"error: empty batch", errTextEmptyBatch},
		{"error: batch element", errTextBatchElem},
		{"error: no kind", errTextNoKind},
		{"error: null id", wire.IDProblem([]byte("null"))},
		{"error: reserved id", errTextReservedID},
		{"error: in flight", errTextInFlight},
		{"error: server bad JSON", errTextServerBadJSON},
		{"error: queue full", errTextQueueFull(256, 1<<20)},
		{"error: queue timeout", errTextQueueTimeout(30 * time.Second)},
		{"error: client too large", wire.TextTooLarge(70<<20, 64<<20)},
		{"error: server too large", errTextServerTooLarge(70<<20, 64<<20)},
		{"recompile: build failed, old server runs", outcome(result.Build{Duration: 694 * time.Millisecond, Err: buildErr, Errors: "src/index.ts(3,1): error TS1005: ';' expected."}, true)},
		{"recompile: build failed, nothing runs", outcome(result.Build{Duration: 694 * time.Millisecond, Err: buildErr}, false)},
		{"recompile: built, nothing restarted", outcome(result.Build{OK: true, Duration: 694 * time.Millisecond}, true)},
		{"recompile: built, failed start", outcome(result.Build{OK: true, Duration: 694 * time.Millisecond, Restart: failed}, false)},
		{"recompile: no build step, failed start", outcome(result.Build{OK: true, Skipped: true, Restart: failed}, false)},
		{"recompile: built and restarted", outcome(result.Build{OK: true, Duration: 1213 * time.Millisecond, Restart: rs}, true)},
		{"recompile: no build step, tools unchanged", outcome(result.Build{OK: true, Skipped: true, Restart: same}, true)},
		{"recompile: cached build, tools unchanged", outcome(result.Build{OK: true, Skipped: true, Cached: true, Output: "sources unchanged since the last good build at 12:01:02: starting bin/server without building", Restart: same}, true)},
		{"recompile: no earlier tool list", outcome(result.Build{OK: true, Duration: 650900 * time.Microsecond, Restart: first}, true)},
	}
	var b strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&b, "== %s\n%s\n\n", c.name, c.text)
	}
	got := b.String()
	const golden = "testdata/messages.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestMessageCatalog -update ./relay writes it)", err)
	}
	if got != string(want) {
		t.Fatalf("the messages differ from %s (rerun with -update after a deliberate change):\n%s", golden, got)
	}
	// One duration format: result.Dur's, never time.Duration's own.
	for _, bad := range []string{"64.31ms", "12.345s", "650.9ms", "started but", "did not start:"} {
		if strings.Contains(got, bad) {
			t.Errorf("a message contains %q", bad)
		}
	}
}

// TestStartupGraceDefault: by default the client's first request waits for
// the first build as long as the client waits for a server (4 s for one
// the relay does not know), then is answered with a clear sentence, and
// recompile is listed.
func TestStartupGraceDefault(t *testing.T) {
	t.Parallel()
	if d := New(Config{Child: Child{Command: []string{"x"}}}).cfg.First.Grace; d != 0 {
		t.Fatalf("default First.Grace %s, want 0 (by client)", d)
	}
	h := newHarness(t, hopts{version: "2025-11-25", noStart: true})
	want := "mcpflow is answering for the MCP server until it runs. The server's first build is still running; its tools appear when it finishes. Call recompile to wait for it and see the result."
	if got := h.cs.InitializeResult().Instructions; got != want {
		t.Fatalf("instructions while building:\n got %q\nwant %q", got, want)
	}
}
