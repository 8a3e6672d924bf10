package relay

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// waitStats polls Stats until ok accepts them; failing after 20s.
func waitStats(t *testing.T, r *Relay, what string, ok func(Stats) bool) Stats {
	t.Helper()
	var st Stats
	if !testkit.Wait(20*time.Second, func() bool { st = r.Stats(); return ok(st) }) {
		t.Fatalf("stats never showed %s: %+v", what, st)
	}
	return st
}

func TestStats(t *testing.T) {
	t.Parallel()
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.OnCrash = "wait" }})

		// Stats is read all along, from another goroutine: -race checks it.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = h.r.Stats()
					time.Sleep(time.Millisecond) // Stats read over and over while the relay works: -race sees any unguarded field
				}
			}
		}()
		defer func() { close(stop); wg.Wait() }()

		names := h.toolNames()
		st := h.r.Stats()
		if st.State != "running" || st.Gen != 1 || st.Pid != h.childPID() || st.Pid == 0 || st.Started.IsZero() || st.Restarts != 0 {
			t.Fatalf("after start: %+v", st)
		}
		if c := st.Client; c.Name != "test-client" || c.Version != "1" || c.Era.String() != era.Name || c.Protocol != era.Protocol {
			t.Fatalf("client: %+v", c)
		}
		if !st.ToolsKnown || st.Tools != len(names)-1 { // recompile is the relay's
			t.Fatalf("tools: %d known=%v, listed %v", st.Tools, st.ToolsKnown, names)
		}

		h.mustCall("echo", map[string]any{"text": "hi"})
		if st := h.r.Stats(); st.Served != 1 || st.InFlight != 0 {
			t.Fatalf("after one call: served %d, in flight %d", st.Served, st.InFlight)
		}

		// A slow call is in flight until it is answered.
		ctx, cancel := context.WithCancel(context.Background())
		slowDone := make(chan struct{})
		go func() {
			defer close(slowDone)
			h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 20000}})
		}()
		waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
		cancel()
		<-slowDone
		waitStats(t, h.r, "the canceled call gone", func(s Stats) bool { return s.InFlight == 0 })

		// A recompile adds a tool, counts as a call and as a restart.
		h.setVariant("v2")
		if text := h.mustCall("recompile", nil); !strings.Contains(text, "+reverse") {
			t.Fatalf("recompile: %q", text)
		}
		st = h.r.Stats()
		if st.Restarts != 1 || st.Gen != 2 || st.Pid != h.childPID() || st.Tools != len(names) || st.Served != 2 {
			t.Fatalf("after recompile: %+v (listed before: %v)", st, names)
		}

		// A crash leaves it down, with no pid.
		h.call("exit", map[string]any{"code": 3})
		st = waitStats(t, h.r, "the crash", func(s Stats) bool { return s.State == "crashed" })
		if st.Pid != 0 || !st.Started.IsZero() || st.Crashes != 1 {
			t.Fatalf("after the crash: %+v", st)
		}
		// Answered by the relay while down: still a call served.
		before := st.Served
		h.call("echo", map[string]any{"text": "x"})
		if st := h.r.Stats(); st.Served != before+1 {
			t.Fatalf("call while down: served %d, want %d", st.Served, before+1)
		}
	})
}

func TestStatsBeforeAndAfterServe(t *testing.T) {
	t.Parallel()
	r := New(Config{Child: Child{Command: []string{testkit.Fixture(t)}}})
	if st := r.Stats(); st.State != "starting" || st.Gen != 0 || st.Pid != 0 || st.ToolsKnown {
		t.Fatalf("before Serve: %+v", st)
	}
	h := newHarness(t, hopts{version: "2025-11-25"})
	h.cs.Close() // and with it the relay's stdin
	select {
	case <-h.served:
	case <-time.After(20 * time.Second):
		t.Fatal("relay did not stop")
	}
	if st := h.r.Stats(); st.State != "stopped" || st.Pid != 0 {
		t.Fatalf("after Serve: %+v", st)
	}
}

// While the first build outlasts StartupGrace the relay answers the client
// alone, yet the server is still starting; a failed first build is down.
func TestStatsSlowFirstBuild(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25", noStart: true, cfg: func(c *Config) { c.First.Grace = 50 * time.Millisecond }})
	h.toolNames() // answered by the relay alone: the grace is over
	if st := h.r.Stats(); st.State != "starting" || st.Gen != 0 {
		t.Fatalf("during a slow first build: %+v", st)
	}
	h.r.NoteBuild(result.Build{Trigger: "startup", Err: errors.New("exit status 1"), Errors: "main.go:1: bad"})
	if st := h.r.Stats(); st.State != "down" {
		t.Fatalf("after a failed first build: %+v", st)
	}
}
