package texts

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

var update = flag.Bool("update", false, "rewrite testdata/texts.golden")

// TestCatalog renders every message the agent can receive from the
// mcpflow (texts.go) and compares the lot with testdata/messages.golden;
// go test -run TestCatalog -update ./internal/report/texts rewrites it after a
// deliberate change.
func TestCatalog(t *testing.T) {
	t.Parallel()
	e := Exit{Status: "exit status 3", Uptime: 64*time.Millisecond + 310*time.Microsecond, Stderr: "fatal: cannot open db.sqlite\npanic: boom"}
	bare := Exit{Status: "killed by SIGKILL", Uptime: 12*time.Second + 345*time.Millisecond}
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
		Handshake: []string{HandshakeChanged("instructions", `"b"`, `"a"`)}}
	same := &result.Restart{Duration: 40 * time.Millisecond, Tools: result.ToolDiff{Known: true, Current: []string{"echo"}}}
	first := &result.Restart{Duration: 40 * time.Millisecond, Tools: result.ToolDiff{Current: []string{"echo"}}}
	failed := &result.Restart{Err: errors.New(FailedStart(e, "run.command in mcpflow.toml", tool))}
	outcome := func(o result.Build, running bool) string {
		text, isErr := Outcome(o, tool, running)
		return fmt.Sprintf("isError=%v\n%s", isErr, text)
	}
	cases := []struct{ name, text string }{
		{"building", Building(tool, 4*time.Second)},
		{"build failed", BuildFailed(buildErr, "src/index.ts(3,1): error TS1005: ';' expected.\n", tool)},
		{"failed start", FailedStart(e, "run.command in mcpflow.toml", tool)},
		{"no start", NoStart(errors.New(`start "./server": no such file or directory`), "run.command in mcpflow.toml")},
		{"no start: no working directory", NoStart(fmt.Errorf("%w: /proj/srv", ErrNoDir), "run.command in mcpflow.toml")},
		{"no handshake", NoHandshake(`"python3 server.py"`, "run.command in mcpflow.toml", 30*time.Second, Exit{Stderr: "Uvicorn running on http://127.0.0.1:8000"}, tool)},
		{"bad start", BadStart(errors.New("tools/list: server answered error -32603: boom"), tool)},
		{"crash, restarting", CrashRestarting(e)},
		{"crash, restarting, no stderr", CrashRestarting(bare)},
		{"crash, on_crash wait", CrashWait(e, tool)},
		{"crash loop", CrashLoop(e, 3, tool)},
		{"crash after a failed build", CrashAfterFailedBuild(e, tool)},
		{"not running", NotRunning},
		{"instructions", Instructions(Building(tool, 4*time.Second))},
		{"notice: build failed", NoticeBuildFailed(tool)},
		{"notice: failed build running", NoticeFailedBuildRunning(tool)},
		{"notice: crash restarted", NoticeCrashRestarted("exit status 4")},
		{"error: down", ErrDown(Building(tool, 4*time.Second))},
		{"error: crashed", ErrCrashed(CrashRestarting(bare))},
		{"error: restarted", ErrRestarted},
		{"error: shutting down", wire.TextShuttingDown},
		{"error: bad UTF-8", wire.TextBadUTF8},
		{"error: bad JSON", wire.TextBadJSON},
		{"error: empty batch", wire.TextEmptyBatch},
		{"error: batch element", wire.TextNotAnRPC},
		{"error: no kind", wire.TextNoKind},
		{"error: null id", wire.IDProblem([]byte("null"))},
		{"error: reserved id", wire.TextReserved},
		{"error: in flight", wire.TextInFlight},
		{"error: ambiguous", wire.TextAmbiguous},
		{"error: moved to a new config", wire.TextMoved},
		{"error: the client left", ErrClientLeft},
		{"down: too many children", TooManyChildren(16)},
		{"config broken mid-session", ConfigProblem(`mcpflow.toml:5:1: unknown key "bulid" (did you mean "build"?)`)},
		{"error: server bad JSON", ErrServerBadJSON},
		{"error: queue full", ErrQueueFull(256, 1<<20)},
		{"error: queue timeout", ErrQueueTimeout(30 * time.Second)},
		{"error: client too large", wire.TextTooLarge(70<<20, 64<<20)},
		{"error: server too large", ErrServerTooLarge(70<<20, 64<<20)},
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
	const golden = "testdata/texts.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestCatalog -update ./internal/report/texts writes it)", err)
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
