package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// starts counts, through OnEvent, the children a relay started and those
// that exited on their own.
type starts struct{ n, crashed atomic.Int32 }

func (s *starts) cfg(c *Config) {
	c.OnEvent = func(e Event) {
		switch e.Kind {
		case Starting:
			s.n.Add(1)
		case Crashed:
			s.crashed.Add(1)
		}
	}
}

// noRestartWindow is how long settle lets pass for a restart that must
// not come: five times the first crash backoff (100 ms), after which a
// restart storm would have started a child.
const noRestartWindow = 500 * time.Millisecond

// settle waits until crashes children have exited on their own (what a
// restart would follow), then lets noRestartWindow pass, and returns how
// many children were started. Nothing announces that the relay decided
// not to restart: the window is time let pass to show that no start
// follows.
func (s *starts) settle(t *testing.T, crashes int) int {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("%d children to exit on their own", crashes), func() bool {
		return int(s.crashed.Load()) >= crashes
	})
	time.Sleep(noRestartWindow)
	return int(s.n.Load())
}

// waitStarts waits until n children were started.
func (s *starts) waitStarts(t *testing.T, n int) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("%d children to start", n), func() bool { return int(s.n.Load()) >= n })
}

// TestFailedStartAfterBuild: a server that exits before answering its
// handshake right after a build is started once, reported once, and left
// down until the next build or recompile: no crash restarts.
func TestFailedStartAfterBuild(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		var s starts
		h := newHarness(t, hopts{version: era.Version, cfg: s.cfg})
		s.waitStarts(t, 1)
		h.mustCall("echo", map[string]any{"text": "up"})

		h.setVariant("crash") // the new build's server dies at startup
		_, err := h.r.Restart(context.Background())
		if err == nil || !strings.Contains(err.Error(), "exited (exit status 3) before answering its handshake") {
			t.Fatalf("restart: want a failed start, got %v", err)
		}
		if n := s.settle(t, 1); n != 2 {
			t.Fatalf("%d children started for one build, want 2 (the first, the new one)", n)
		}
		// The child's stderr is logged once, as its own lines, not again
		// inside an error.
		if n := strings.Count(h.logs.String(), "crash-at-start requested"); n != 1 {
			t.Fatalf("the child's stderr line is in the log %d times, want 1:\n%s", n, h.logs.String())
		}
		text, isErr, err := h.call("echo", map[string]any{"text": "x"})
		if err != nil || !isErr || !strings.Contains(text, "before answering its handshake, so it is not running") ||
			!strings.Contains(text, "crash-at-start requested") || strings.Contains(text, "restarting it") {
			t.Fatalf("call after the failed start: %q %v %v", text, isErr, err)
		}

		// recompile of the same code: one more start, the same report.
		text, isErr, err = h.call("recompile", nil)
		if err != nil || !isErr || !strings.Contains(text, "before answering its handshake") || strings.Contains(text, "started but") {
			t.Fatalf("recompile of the broken server: %q %v %v", text, isErr, err)
		}
		if n := s.settle(t, 2); n != 3 {
			t.Fatalf("%d children started after a recompile, want 3", n)
		}

		h.setVariant("v1")
		h.mustCall("recompile", nil)
		h.mustCall("echo", map[string]any{"text": "back"})
	})
}

// TestFailedFirstStart: the first server exits before its handshake: the
// relay answers the client alone and does not restart it.
func TestFailedFirstStart(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		var s starts
		h := newHarness(t, hopts{version: era.Version, args: []string{"-crash-at-start"}, cfg: s.cfg})
		if n := s.settle(t, 1); n != 1 {
			t.Fatalf("%d children started, want 1", n)
		}
		text, isErr, err := h.call("echo", map[string]any{"text": "x"})
		if err != nil || !isErr || !strings.Contains(text, "before answering its handshake") {
			t.Fatalf("call: %q %v %v", text, isErr, err)
		}
		if names := h.toolNames(); !slices.Equal(names, []string{"recompile"}) {
			t.Fatalf("tools: %v", names)
		}
	})
}

// TestCrashAfterFailedBuildWaits: after a failed build, a crash of the old
// server does not start the files on disk; the agent is told why.
func TestCrashAfterFailedBuildWaits(t *testing.T) {
	t.Parallel()
	var s starts
	h := newHarness(t, hopts{version: "2025-11-25", cfg: s.cfg})
	s.waitStarts(t, 1)
	h.r.NoteBuild(result.Build{Trigger: "watch", Err: errors.New("exit status 2"), Errors: "src/index.ts:3:1: error TS1005"})
	if _, _, err := h.call("exit", map[string]any{"code": 7}); err == nil || !strings.Contains(err.Error(), "last build failed") {
		t.Fatalf("the crash error does not say why the server stays down: %v", err)
	}
	if n := s.settle(t, 1); n != 1 {
		t.Fatalf("%d children started, want 1: the failed build's output was started", n)
	}
	text, isErr, err := h.call("echo", map[string]any{"text": "x"})
	if err != nil || !isErr || !strings.Contains(text, "The last build failed, so mcpflow did not restart the server") {
		t.Fatalf("call while down: %q %v %v", text, isErr, err)
	}
	// A good build brings it back.
	h.r.NoteBuild(result.Build{Trigger: "watch", OK: true})
	if _, err := h.r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mustCall("echo", map[string]any{"text": "back"})
}

// TestNoticesOncePerState: a failed rebuild's notice is given once, even
// after two failures, and withdrawn by a good build.
func TestNoticesOncePerState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	fail := result.Build{Trigger: "watch", Err: errors.New("exit status 1")}
	h.r.NoteBuild(fail)
	h.r.NoteBuild(fail)
	text := h.mustCall("echo", map[string]any{"text": "a"})
	if n := strings.Count(text, "automatic rebuild after your last edit failed"); n != 1 {
		t.Fatalf("%d notices, want 1: %q", n, text)
	}
	if text := h.mustCall("echo", map[string]any{"text": "b"}); strings.Contains(text, "mcpflow:") {
		t.Fatalf("notice repeated: %q", text)
	}
	h.r.NoteBuild(fail)
	h.r.NoteBuild(result.Build{Trigger: "watch", OK: true}) // no longer true
	if text := h.mustCall("echo", map[string]any{"text": "c"}); strings.Contains(text, "mcpflow:") {
		t.Fatalf("stale notice: %q", text)
	}
}

// TestListChangedOnlyOnChange: the client hears list_changed when the list
// it would get changes (a new tool, the server down, the server back), and
// not after a restart that changed nothing.
func TestListChangedOnlyOnChange(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.OnCrash = "wait" }})
		h.toolNames()
		quiet := func(what string, want int32) {
			t.Helper()
			h.mustCall("echo", map[string]any{"text": "sync"})
			// The SDK client runs notification handlers on a goroutine
			// of their own: a list_changed written before the call's
			// answer may be counted after the call returned. Time let
			// pass to show that no other comes.
			time.Sleep(300 * time.Millisecond)
			if n := h.toolsChanged.Load(); n != want {
				t.Fatalf("%s: %d tools/list_changed, want %d", what, n, want)
			}
		}
		if _, err := h.r.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		quiet("restart with the same tools", 0)

		h.setVariant("v2")
		if _, err := h.r.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.waitListChanged()
		quiet("restart with a new tool", 1)

		h.call("exit", map[string]any{"code": 9})
		h.waitListChanged()
		if names := h.toolNames(); !slices.Equal(names, []string{"recompile"}) {
			t.Fatalf("tools while down: %v", names)
		}
		h.mustCall("recompile", nil)
		h.waitListChanged()
		if names := h.toolNames(); !slices.Contains(names, "reverse") {
			t.Fatalf("tools once back: %v", names)
		}
		quiet("down and back up", 3)
	})
}

// TestPromptsListChangedOnlyOnChange: prompts are compared by content too.
func TestPromptsListChangedOnlyOnChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", cfg: func(c *Config) { c.OnCrash = "wait" }})
	if _, err := h.r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mustCall("echo", map[string]any{"text": "sync"})
	// A client that never listed the prompts is told of no change to them
	// (time let pass after the call, as in TestListChangedOnlyOnChange's
	// quiet, to show that none comes).
	time.Sleep(300 * time.Millisecond)
	if n := h.promptsChanged.Load(); n != 0 {
		t.Fatalf("%d prompts/list_changed before the client listed them", n)
	}
	if _, err := h.cs.ListPrompts(h.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mustCall("echo", map[string]any{"text": "sync"})
	time.Sleep(300 * time.Millisecond) // time let pass, as above
	if n := h.promptsChanged.Load(); n != 0 {
		t.Fatalf("%d prompts/list_changed after a restart that changed nothing", n)
	}
	h.call("exit", map[string]any{"code": 9})
	testkit.Eventually(t, 20*time.Second, "prompts/list_changed when the server went down", func() bool {
		return h.promptsChanged.Load() > 0
	})
}

// TestRecompileDiffAgainstClientView: recompile reports the tools changed
// since the client last listed them, and names the current tools.
func TestRecompileDiffAgainstClientView(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		h.toolNames()
		h.setVariant("v2")
		if text := h.mustCall("recompile", nil); !strings.Contains(text, "+reverse") {
			t.Fatalf("first recompile: %q", text)
		}
		// The client did not list the tools again (as Codex CLI): the next
		// recompile still reports the new tool.
		text := h.mustCall("recompile", nil)
		if !strings.Contains(text, "Tools changed since your last tools/list: +reverse") || !strings.Contains(text, "reverse (new)") {
			t.Fatalf("second recompile, tools not re-listed: %q", text)
		}
		if !strings.Contains(text, "besides recompile): ") || !strings.Contains(text, "echo") {
			t.Fatalf("the current tools are not named: %q", text)
		}
		h.toolNames()
		if text := h.mustCall("recompile", nil); !strings.Contains(text, "Tools: unchanged since your last tools/list") {
			t.Fatalf("after re-listing: %q", text)
		}
	})
}

// TestRestartDoneOnlyWhenAnswered: a first start whose held handshake the
// child never answers is not reported up.
func TestRestartDoneOnlyWhenAnswered(t *testing.T) {
	t.Parallel()
	l := &eventLog{}
	newHarness(t, hopts{version: "2025-11-25", args: []string{"-crash-at-start"}, cfg: func(c *Config) {
		c.First.Grace = time.Minute // the client's initialize is held for the first server
		c.OnEvent = func(e Event) {
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
		}
	}})
	evs := l.waitFor(t, RestartFailed)
	for _, k := range l.kinds() {
		if k == Up {
			t.Fatalf("a server that exited before answering its handshake was reported up: %v", l.kinds())
		}
	}
	if !strings.Contains(evs[0].Report, "before answering its handshake") {
		t.Fatalf("report: %q", evs[0].Report)
	}
}

// TestDebugLogOneLinePerMessage: at debug level each message gets one
// line: where from, method or id, size, and latency for responses.
func TestDebugLogOneLinePerMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	h.mustCall("echo", map[string]any{"text": "logged"})
	var calls, answers int
	for _, l := range strings.Split(h.logs.String(), "\n") {
		switch {
		case strings.Contains(l, "from client") && strings.Contains(l, "method=tools/call"):
			calls++
			if !strings.Contains(l, "bytes=") || !strings.Contains(l, "id=") {
				t.Errorf("client line lacks size or id: %q", l)
			}
		case strings.Contains(l, "from server") && strings.Contains(l, "for=tools/call"):
			answers++
			if !strings.Contains(l, "bytes=") || !strings.Contains(l, "latency=") {
				t.Errorf("server line lacks size or latency: %q", l)
			}
		}
	}
	if calls != 1 || answers != 1 {
		t.Fatalf("%d client lines and %d server lines for one tools/call, want 1 and 1:\n%s", calls, answers, h.logs.String())
	}
}

// badJSONServer answers "good" requests and pings properly, "bigbad"
// requests with a 300 KB line that is not valid JSON, and the rest with a
// short invalid line.
const badJSONServer = `while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p')
  [ -z "$id" ] && continue
  case "$line" in
  *good*|*ping*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}\n' "$id" ;;
  *bigbad*) printf '{"jsonrpc":"2.0","id":%s,"result":{"t":"%s","x":tru}}\n' "$id" "$(head -c 300000 /dev/zero | tr '\0' a)" ;;
  *) printf '{"jsonrpc":"2.0","id":%s,"result":{"x":tru}}\n' "$id" ;;
  esac
done`

// TestInvalidServerLinesNotForwarded: a child line that starts like JSON
// but is not valid JSON never reaches the client, short or long; the
// request it answers gets an error, and the stream goes on.
func TestInvalidServerLinesNotForwarded(t *testing.T) {
	testkit.UnixOnly(t, "its server command is a sh script")
	t.Parallel()
	w := newRawPeer(t, func(c *Config) {
		c.Child.Command = []string{badJSONServer}
		c.Child.Shell = true
	})
	w.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}`)
	if m := w.recvID(5); errCode(m) != wire.CodeInternalError || !strings.Contains(errMessage(m), "not valid JSON") {
		t.Fatalf("short invalid answer: %v", m)
	}
	w.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"bigbad"}}`)
	if m := w.recvID(6); errCode(m) != wire.CodeInternalError || !strings.Contains(errMessage(m), "not valid JSON") {
		t.Fatalf("long invalid answer: %v", m)
	}
	w.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"good"}}`)
	if m := w.recvID(7); m["result"] == nil {
		t.Fatalf("valid answer: %v", m)
	}
	if !strings.Contains(w.logs.String(), "not valid JSON") {
		t.Fatal("the invalid line is not in the log")
	}
}

// TestFirstBuildFailsWhileCallHeld: a tool call waiting for the first
// build is answered with the build's errors when it fails.
func TestFirstBuildFailsWhileCallHeld(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", noStart: true, cfg: func(c *Config) { c.First.Grace = 100 * time.Millisecond }})
	called := make(chan string, 1)
	go func() {
		text, isErr, err := h.call("echo", map[string]any{"text": "x"})
		called <- fmt.Sprint(text, isErr, err)
	}()
	testkit.Eventually(t, 20*time.Second, "the tool call to be held for the first build", func() bool {
		return only(h.r).heldLen() == 1
	})
	h.r.NoteBuild(result.Build{Trigger: "startup", Err: errors.New("exit status 1"), Errors: "main.go:3:1: undefined: undefinedThing"})
	if got := <-called; !strings.Contains(got, "undefinedThing") || !strings.Contains(got, "build failed") {
		t.Fatalf("held call after the failed build: %q", got)
	}
}

// TestRecompileDiffSinceSessionStart: a client that never lists tools is
// told what changed since its session began.
func TestRecompileDiffSinceSessionStart(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		h.setVariant("v2")
		h.mustCall("recompile", nil)
		if text := h.mustCall("recompile", nil); !strings.Contains(text, "Tools changed since your last tools/list: +reverse") {
			t.Fatalf("second recompile, tools never listed: %q", text)
		}
	})
}
