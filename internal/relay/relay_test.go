package relay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRecompileAddsToolAndNotifies(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		names := h.toolNames()
		if !slices.Contains(names, "recompile") || !slices.Contains(names, "echo") || slices.Contains(names, "reverse") {
			t.Fatalf("tools before: %v", names)
		}
		if got := h.mustCall("echo", map[string]any{"text": "hi"}); !strings.Contains(got, "hi") {
			t.Fatalf("echo: %q", got)
		}
		h.setVariant("v2")
		text := h.mustCall("recompile", nil)
		if !strings.Contains(text, "+reverse") {
			t.Fatalf("recompile result lacks the tool diff: %q", text)
		}
		h.waitListChanged()
		names = h.toolNames()
		if !slices.Contains(names, "reverse") || !slices.Contains(names, "recompile") {
			t.Fatalf("tools after: %v", names)
		}
		if n := count(names, "recompile"); n != 1 {
			t.Fatalf("recompile listed %d times: %v", n, names)
		}
		if got := h.mustCall("reverse", map[string]any{"text": "abc"}); !strings.Contains(got, "cba") {
			t.Fatalf("reverse: %q", got)
		}
		// And back: the diff names the removed tool.
		h.setVariant("v1")
		if text := h.mustCall("recompile", nil); !strings.Contains(text, "-reverse") {
			t.Fatalf("second recompile: %q", text)
		}
	})
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func TestCapabilitiesForced(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, args: []string{"-no-list-changed", "-no-resources"}})
		caps := h.cs.InitializeResult().Capabilities
		if caps.Tools == nil || !caps.Tools.ListChanged {
			t.Fatalf("tools.listChanged not forced: %+v", caps.Tools)
		}
		if caps.Prompts == nil || !caps.Prompts.ListChanged {
			t.Fatalf("prompts.listChanged not forced: %+v", caps.Prompts)
		}
		if caps.Resources != nil {
			t.Fatalf("resources capability invented: %+v", caps.Resources)
		}
		if got := h.cs.InitializeResult().Instructions; got != "instructions of fixture v1" {
			t.Fatalf("instructions changed: %q", got)
		}
		// The child declared no listChanged, yet the client hears of restarts.
		h.setVariant("v2")
		h.mustCall("recompile", nil)
		h.waitListChanged()
		if !slices.Contains(h.toolNames(), "reverse") {
			t.Fatal("reverse missing after restart")
		}
	})
}

func TestCrashDuringSlowCalls(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.OnCrash = "wait" }})
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = h.call("slow", map[string]any{"ms": 20000})
			}()
		}
		waitStats(t, h.r, "the calls sent to the child", func(st Stats) bool { return st.InFlight == n })
		_, _, err := h.call("panic", map[string]any{"text": "boom"})
		if err == nil || !strings.Contains(err.Error(), "fixture panic: boom") {
			t.Fatalf("panic call: want the panic text in the error, got %v", err)
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil || !strings.Contains(err.Error(), "crashed (") {
				t.Fatalf("slow call %d: want a crash error, got %v", i, err)
			}
		}
		// Down: tools/call explains, tools/list still offers recompile.
		text, isErr, err := h.call("echo", map[string]any{"text": "x"})
		if err != nil || !isErr || !strings.Contains(text, "fixture panic: boom") || !strings.Contains(text, "recompile") {
			t.Fatalf("call while down: %q %v %v", text, isErr, err)
		}
		if names := h.toolNames(); !slices.Equal(names, []string{"recompile"}) {
			t.Fatalf("tools while down: %v", names)
		}
		h.mustCall("recompile", nil)
		if got := h.mustCall("echo", map[string]any{"text": "back"}); !strings.Contains(got, "back") {
			t.Fatalf("after recovery: %q", got)
		}
	})
}

func TestCrashAutoRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	first := h.childPID()
	if _, _, err := h.call("exit", map[string]any{"code": 7}); err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Fatalf("exit call: %v", err)
	}
	testkit.Eventually(t, 20*time.Second, "the server to be restarted after the crash", func() bool {
		text, isErr, err := h.call("echo", map[string]any{"text": "again"})
		return err == nil && !isErr && strings.Contains(text, "again")
	})
	if h.childPID() == first {
		t.Fatal("same pid after crash")
	}
}

func TestCrashLoopStops(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	// Every new child serves, then crashes soon after starting.
	h.r.setCommand(append(h.r.command(), "-exit-after-ms=1500"))
	h.call("exit", map[string]any{"code": 1})
	testkit.Eventually(t, 20*time.Second, "the crash loop to be detected", func() bool {
		h.r.mu.Lock()
		defer h.r.mu.Unlock()
		return h.r.health.crashes.stopped
	})
	text, isErr, err := h.call("echo", map[string]any{"text": "x"})
	if err != nil || !isErr || !strings.Contains(text, "crashed (exit status 5) 3 times") || !strings.Contains(text, "exit-after-ms") {
		t.Fatalf("call during crash loop: %q %v %v", text, isErr, err)
	}
	// Fix and recompile.
	h.r.setCommand(h.r.command()[:len(h.r.command())-1])
	h.mustCall("recompile", nil)
	h.mustCall("echo", map[string]any{"text": "fixed"})
}

func TestLargeResultIntact(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		got := h.mustCall("big", map[string]any{"mib": 20})
		want := bigText(20 << 20)
		if strings.TrimSuffix(got, "\n") != want {
			t.Fatalf("20 MiB result altered: got %d bytes", len(got))
		}
	})
}

// TestLargeRequestIntact: a client line longer than the read buffer (a 3
// MiB argument) reaches the server whole, its answer (as long) comes back
// whole, and the stream goes on.
func TestLargeRequestIntact(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		text := bigText(3 << 20)
		if got := strings.TrimSuffix(h.mustCall("echo", map[string]any{"text": text}), "\n"); got != text {
			t.Fatalf("3 MiB echo altered: got %d bytes, want %d", len(got), len(text))
		}
		if got := strings.TrimSuffix(h.mustCall("echo", map[string]any{"text": "after"}), "\n"); got != "after" {
			t.Fatalf("echo after the long line: %q", got)
		}
	})
}

// bigText mirrors the fixture's.
func bigText(n int) string {
	const pat = "0123456789abcdefghijklmnopqrstuvwxyz\\\"<>&"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(pat)
	}
	return b.String()[:n]
}

func TestJunkOnStdoutIgnored(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, args: []string{"-junk-at-start"}})
		if got := h.mustCall("junk", map[string]any{"text": "xyz"}); !strings.Contains(got, "ok") {
			t.Fatalf("junk call: %q", got)
		}
		h.mustCall("echo", map[string]any{"text": "still fine"})
		if !strings.Contains(h.logs.String(), "not JSON-RPC") {
			t.Fatal("no warning about stdout junk in the log")
		}
	})
}

func TestNoOrphansAfterClientCloses(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		pidFile := filepath.Join(h.dir, "grandchild.pid")
		h.mustCall("spawn", map[string]any{"path": pidFile})
		b, _ := os.ReadFile(pidFile)
		gpid, _ := strconv.Atoi(string(b))
		leader := h.childPID()
		if gpid == 0 || !testkit.Alive(gpid) {
			t.Fatalf("grandchild %d not running", gpid)
		}
		h.cs.Close() // and with it the relay's stdin
		select {
		case <-h.served:
		case <-time.After(20 * time.Second):
			t.Fatal("relay did not exit on stdin EOF")
		}
		groupGone(t, leader)
		if testkit.Alive(gpid) {
			t.Fatalf("grandchild %d survived", gpid)
		}
	})
}

func TestRestartKillsGrandchildren(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	pidFile := filepath.Join(h.dir, "grandchild.pid")
	h.mustCall("spawn", map[string]any{"path": pidFile})
	b, _ := os.ReadFile(pidFile)
	gpid, _ := strconv.Atoi(string(b))
	leader := h.childPID()
	h.mustCall("recompile", nil)
	groupGone(t, leader)
	if testkit.Alive(gpid) {
		t.Fatalf("grandchild %d survived a restart", gpid)
	}
}

func TestPendingCallsGetRestartError(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version})
		errc := make(chan error, 1)
		go func() {
			_, _, err := h.call("slow", map[string]any{"ms": 30000})
			errc <- err
		}()
		waitStats(t, h.r, "the slow call sent to the child", func(st Stats) bool { return st.InFlight == 1 })
		h.mustCall("recompile", nil)
		select {
		case err := <-errc:
			if err == nil || !strings.Contains(err.Error(), "restarted") {
				t.Fatalf("pending call: want a restart error, got %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("pending call never answered")
		}
	})
}

func TestSamplingRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", sampling: true})
	if got := h.mustCall("legacy_sample", map[string]any{"text": "hello"}); !strings.Contains(got, "model said: HELLO") {
		t.Fatalf("sample: %q", got)
	}
	// And again after a restart, when the new child numbers from 0 again.
	h.mustCall("recompile", nil)
	if got := h.mustCall("legacy_sample", map[string]any{"text": "again"}); !strings.Contains(got, "model said: AGAIN") {
		t.Fatalf("sample after restart: %q", got)
	}
}

func TestStartupFailureThenRecover(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, args: []string{"-crash-at-start"}, cfg: func(c *Config) { c.OnCrash = "wait" }})
		text, isErr, err := h.call("echo", map[string]any{"text": "x"})
		if err != nil || !isErr || !strings.Contains(text, "crash-at-start") {
			t.Fatalf("call while down: %q %v %v", text, isErr, err)
		}
		if names := h.toolNames(); !slices.Equal(names, []string{"recompile"}) {
			t.Fatalf("tools while down: %v", names)
		}
		h.r.setCommand(h.r.command()[:len(h.r.command())-1])
		h.mustCall("recompile", nil)
		h.waitListChanged()
		if names := h.toolNames(); !slices.Contains(names, "echo") {
			t.Fatalf("tools after recovery: %v", names)
		}
		h.mustCall("echo", map[string]any{"text": "up"})
	})
}

func TestQueueDuringRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", cfg: func(c *Config) { c.Child.StopTimeout = 300 * time.Millisecond }})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.r.Restart(context.Background())
	}()
	// Calls made while the restart runs wait and then succeed.
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, isErr, err := h.call("echo", map[string]any{"text": strconv.Itoa(i)})
			if err != nil && strings.Contains(err.Error(), "restarted") {
				return // it reached the old child before the swap: fine
			}
			if err != nil || isErr || !strings.Contains(text, strconv.Itoa(i)) {
				t.Errorf("call %d: %q %v %v", i, text, isErr, err)
			}
		}()
	}
	wg.Wait()
	<-done
}

var _ = mcp.Implementation{}

func TestSlowFirstBuildAnsweredAlone(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		// No server for now: the first build is "still running".
		h := newHarness(t, hopts{version: era.Version, noStart: true, cfg: func(c *Config) { c.First.Grace = 200 * time.Millisecond }})
		if info := h.cs.InitializeResult().ServerInfo; info == nil || info.Name != "mcpflow" {
			t.Fatalf("want mcpflow's own initialize answer, got %+v", info)
		}
		if names := h.toolNames(); !slices.Equal(names, []string{"recompile"}) {
			t.Fatalf("tools while building: %v", names)
		}
		// A tool call waits for the first build.
		called := make(chan string, 1)
		go func() {
			text, isErr, err := h.call("echo", map[string]any{"text": "waited"})
			called <- fmt.Sprintln(text, isErr, err)
		}()
		testkit.Eventually(t, 20*time.Second, "the tool call to be held for the first build", func() bool {
			return only(h.r).heldLen() == 1
		})
		// The build finishes: the server gets the replayed session, the
		// held call is answered and the client is told.
		if _, err := h.r.Restart(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := <-called; got != "waited false <nil>\n" {
			t.Fatalf("call held for the first build: %q", got)
		}
		h.waitListChanged()
		if got := h.mustCall("echo", map[string]any{"text": "up"}); !strings.Contains(got, "up") {
			t.Fatalf("echo once up: %q", got)
		}
	})
}

// TestHeldUntilReplayed: requests held while the old child stops reach the
// new child only after its session was replayed (a legacy server refuses
// requests before initialize).
func TestHeldUntilReplayed(t *testing.T) {
	testkit.UnixOnly(t, "its server command is a sh script")
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", cfg: func(c *Config) {
		// The old child takes a second to stop after its stdin closes, so
		// that the calls below are held.
		c.Child.Command = []string{"'" + strings.Join(c.Child.Command, "' '") + "'; sleep 1"}
		c.Child.Shell = true
	}})
	h.mustCall("echo", map[string]any{"text": "before"})
	done := make(chan error, 1)
	go func() {
		_, err := h.r.Restart(context.Background())
		done <- err
	}()
	testkit.Eventually(t, 10*time.Second, "the restart to begin", func() bool {
		h.r.mu.Lock()
		defer h.r.mu.Unlock()
		return h.r.health.state == stateRestarting
	})
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, isErr, err := h.call("echo", map[string]any{"text": "held" + strconv.Itoa(i)})
			if err != nil || isErr || !strings.Contains(text, "held"+strconv.Itoa(i)) {
				t.Errorf("held call %d: %q %v %v", i, text, isErr, err)
			}
		}()
	}
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatalf("restart: %v", err)
	}
}
