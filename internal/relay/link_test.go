package relay

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// overlapLink is the stdio link of a child that may run beside the one
// it replaces (Overlapper), as an HTTP child on a port of its own does.
type overlapLink struct{ *stdioLink }

func (*overlapLink) Overlaps() bool { return true }

// A Link that overlaps has its process started while the old child's
// calls drain; the call in flight keeps its own result, the call sent
// meanwhile is answered by the new child, and the old child is gone.
// Without overlap (stdio), the new process starts only once the old one
// stopped.
func TestLinkOverlapStartsDuringDrain(t *testing.T) {
	t.Parallel()
	for _, overlap := range []bool{true, false} {
		t.Run(map[bool]string{true: "overlap", false: "stdio"}[overlap], func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, hopts{version: testkit.Legacy.Version, cfg: func(c *Config) {
				c.Drain = 10 * time.Minute
				if overlap {
					c.Child.Link = func() Link { return &overlapLink{newStdioLink(DefaultMaxMessage)} }
				}
			}})
			oldPid := statePid(t, h.mustCall("state", nil))
			h.r.sw.mu.Lock()
			oldGen := h.r.sw.child.gen
			h.r.sw.mu.Unlock()

			slow := goCall(h, "slow", map[string]any{"ms": 1500})
			waitStats(t, h.r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
			restarted := goRestart(h)
			waitDraining(t, h.r, oldGen)
			during := goCall(h, "state", nil)
			if overlap {
				testkit.Eventually(t, 10*time.Second, "the next process started during the drain", func() bool {
					return strings.Contains(h.logs.String(), "starting the next server while the calls in flight finish")
				})
			}
			got := <-slow
			if got.err != nil || got.isErr || strings.TrimSpace(got.text) != "slept 1500" {
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
			if early := strings.Contains(h.logs.String(), "starting the next server while"); early != overlap {
				t.Errorf("started during the drain: %v", early)
			}
			groupGone(t, oldPid)
		})
	}
}

// The debug line of each message from the server names the transport.
func TestLinkKindInTrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: testkit.Legacy.Version})
	h.mustCall("echo", map[string]any{"text": "x"})
	if !strings.Contains(h.logs.String(), "via=stdio") {
		t.Fatalf("no via=stdio in the log:\n%s", h.logs.String())
	}
}

// A process started during a drain that the relay never makes its child
// (mcpflow is stopped first) is stopped with its group.
func TestLinkOverlapShutdownDuringDrain(t *testing.T) {
	t.Parallel()
	logs := &testkit.Buffer{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r := New(Config{
		Child:  Child{Command: []string{testkit.Fixture(t)}, StopTimeout: 2 * time.Second, Link: func() Link { return &overlapLink{newStdioLink(DefaultMaxMessage)} }},
		Drain:  10 * time.Minute,
		Logger: slog.New(log.NewWithOptions(logs, log.Options{Level: log.DebugLevel})),
	})
	served := make(chan struct{})
	transport := testkit.Pipes(t, func(in io.Reader, out io.Writer) error {
		err := r.Serve(ctx, wire.NewReader(in, 0), out)
		close(served)
		return err
	})
	go r.Restart(ctx)
	cs := testkit.Connect(t, testkit.Legacy.Version, nil, transport)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "state"})
	if err != nil {
		t.Fatal(err)
	}
	oldPid := statePid(t, testkit.Text(res))
	go cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 600000}})
	waitStats(t, r, "the slow call in flight", func(s Stats) bool { return s.InFlight == 1 })
	go r.Restart(ctx)
	var next int
	testkit.Eventually(t, 10*time.Second, "the next process started during the drain", func() bool {
		_, after, ok := strings.Cut(logs.String(), "starting the next server while the calls in flight finish pid=")
		if ok {
			next, _ = strconv.Atoi(strings.Fields(after)[0])
		}
		return next > 0
	})
	stop()
	select {
	case <-served:
	case <-time.After(20 * time.Second):
		t.Fatal("the relay did not end")
	}
	groupGone(t, oldPid)
	groupGone(t, next)
}
