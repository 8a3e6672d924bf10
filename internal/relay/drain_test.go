package relay

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// waitDraining waits until the relay lets the calls of generation gen
// finish before stopping its child.
func waitDraining(t *testing.T, r *Relay, gen int) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "the relay to drain generation "+strconv.Itoa(gen), func() bool {
		s := only(r)
		if s == nil {
			return false
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.ids.drain.gen == gen
	})
}

// statePid calls the fixture's state tool and returns the pid of the child
// that answered.
func statePid(t *testing.T, text string) int {
	t.Helper()
	_, after, ok := strings.Cut(text, "pid=")
	if !ok {
		t.Fatalf("state: %q", text)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(after))
	if err != nil {
		t.Fatalf("state: %q", text)
	}
	return pid
}

type restartOut struct {
	res *result.Restart
	err error
}

func goRestart(h *harness) chan restartOut {
	ch := make(chan restartOut, 1)
	go func() {
		res, err := h.r.Restart(h.ctx())
		ch <- restartOut{res, err}
	}()
	return ch
}

type callOut struct {
	text  string
	isErr bool
	err   error
}

func goCall(h *harness, name string, args map[string]any) chan callOut {
	ch := make(chan callOut, 1)
	go func() {
		text, isErr, err := h.call(name, args)
		ch <- callOut{text, isErr, err}
	}()
	return ch
}

// A restart lets a call in flight finish with its real result; a call sent
// meanwhile waits and is answered by the new child.
func TestDrainLetsCallsFinish(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.Drain = 10 * time.Minute }})
			oldPid := statePid(t, h.mustCall("state", nil))
			oldGen := only(h.r).childGen()

			slow := goCall(h, "slow", map[string]any{"ms": 2000})
			waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
			restarted := goRestart(h)
			waitDraining(t, h.r, oldGen)
			during := goCall(h, "state", nil)

			got := <-slow
			if got.err != nil || got.isErr || strings.TrimSpace(got.text) != "slept 2000" {
				t.Fatalf("the call in flight: %+v, want its own result", got)
			}
			ro := <-restarted
			if ro.err != nil {
				t.Fatalf("restart: %v", ro.err)
			}
			d := <-during
			if d.err != nil || d.isErr {
				t.Fatalf("the call sent during the drain: %+v", d)
			}
			if pid := statePid(t, d.text); pid == oldPid || pid != ro.res.Pid {
				t.Fatalf("the call sent during the drain was answered by pid %d; old child %d, new %d", pid, oldPid, ro.res.Pid)
			}
			groupGone(t, oldPid)
		})
	}
}

// A call that outlasts the drain gets the restart error, once; the new
// child serves afterwards.
func TestDrainTimeOver(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.Drain = 100 * time.Millisecond }})
			oldPid := statePid(t, h.mustCall("state", nil))
			slow := goCall(h, "slow", map[string]any{"ms": 600000})
			waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
			ro := <-goRestart(h)
			if ro.err != nil {
				t.Fatalf("restart: %v", ro.err)
			}
			got := <-slow
			var werr *jsonrpc.Error
			if got.err == nil || !errors.As(got.err, &werr) || werr.Code != wire.CodeServerRestarted {
				t.Fatalf("the call longer than the drain: %+v, want the restart error", got)
			}
			if pid := statePid(t, h.mustCall("state", nil)); pid == oldPid || pid != ro.res.Pid {
				t.Fatalf("after the restart pid %d answered; old %d, new %d", pid, oldPid, ro.res.Pid)
			}
			if n := strings.Count(h.logs.String(), "drain time over"); n != 1 {
				t.Fatalf("%d drain-over warnings, want 1", n)
			}
		})
	}
}

// A call canceled by the client during the drain ends it: the restart goes
// on without waiting out Drain.
func TestDrainEndsOnCancel(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, hopts{version: era.Version, cfg: func(c *Config) { c.Drain = 10 * time.Minute }})
			oldGen := only(h.r).childGen()
			ctx, cancel := context.WithCancel(context.Background())
			slowDone := make(chan error, 1)
			go func() {
				_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 600000}})
				slowDone <- err
			}()
			waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
			restarted := goRestart(h)
			waitDraining(t, h.r, oldGen)
			cancel()
			<-slowDone
			select {
			case ro := <-restarted:
				if ro.err != nil {
					t.Fatalf("restart: %v", ro.err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the restart still waits for a canceled call")
			}
			h.mustCall("echo", map[string]any{"text": "after"})
		})
	}
}

// Without Drain a restart stops the child at once: the call in flight gets
// the restart error.
func TestNoDrain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{})
	slow := goCall(h, "slow", map[string]any{"ms": 600000})
	waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
	if ro := <-goRestart(h); ro.err != nil {
		t.Fatalf("restart: %v", ro.err)
	}
	got := <-slow
	var werr *jsonrpc.Error
	if got.err == nil || !errors.As(got.err, &werr) || werr.Code != wire.CodeServerRestarted {
		t.Fatalf("the call in flight: %+v, want the restart error", got)
	}
	if strings.Contains(h.logs.String(), "letting the calls in flight finish") {
		t.Fatal("drained with Drain = 0")
	}
}

// A child that dies while its calls drain is being replaced anyway: its
// call gets the crash report once, the restart goes on, and a call held
// meanwhile is answered by the new child.
func TestDrainChildDies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{cfg: func(c *Config) { c.Drain = 10 * time.Minute }})
	oldPid := statePid(t, h.mustCall("state", nil))
	oldGen := only(h.r).childGen()
	slow := goCall(h, "slow", map[string]any{"ms": 600000})
	waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
	restarted := goRestart(h)
	waitDraining(t, h.r, oldGen)
	during := goCall(h, "state", nil)
	waitStats(t, h.r, "the second call held", func(s Stats) bool { return s.InFlight == 2 })
	if p, err := os.FindProcess(oldPid); err != nil || p.Kill() != nil {
		t.Fatalf("cannot kill %d: %v", oldPid, err)
	}
	got := <-slow
	var werr *jsonrpc.Error
	if got.err == nil || !errors.As(got.err, &werr) || werr.Code != wire.CodeServerDown || !strings.Contains(werr.Message, "restarting it") {
		t.Fatalf("the call on the dead child: %+v (%v), want the crash report", got, got.err)
	}
	ro := <-restarted
	if ro.err != nil {
		t.Fatalf("restart: %v", ro.err)
	}
	d := <-during
	if d.err != nil || d.isErr || statePid(t, d.text) != ro.res.Pid {
		t.Fatalf("the held call: %+v, want an answer from pid %d", d, ro.res.Pid)
	}
}
