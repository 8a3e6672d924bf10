package relay

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// eventLog records what OnEvent and Traffic receive.
type eventLog struct {
	mu      sync.Mutex
	events  []Event
	traffic []tapped
}

type tapped struct {
	hop      string
	toServer bool
	gen      int
	msg      string
}

// seen counts the recorded messages on hop in direction toServer of
// generation gen that contain every one of parts.
func (l *eventLog) seen(hop string, toServer bool, gen int, parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, m := range l.traffic {
		if m.hop != hop || m.toServer != toServer || m.gen != gen {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(m.msg, p) {
				continue next
			}
		}
		n++
	}
	return n
}

func (l *eventLog) kinds() []EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []EventKind
	for _, e := range l.events {
		out = append(out, e.Kind)
	}
	return out
}

// waitFor waits until the events end with want.
func (l *eventLog) waitFor(t *testing.T, want ...EventKind) []Event {
	t.Helper()
	var evs []Event
	var kinds []EventKind
	if !testkit.Wait(20*time.Second, func() bool {
		l.mu.Lock()
		evs = slices.Clone(l.events)
		l.mu.Unlock()
		kinds = kinds[:0]
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
		}
		return len(kinds) >= len(want) && slices.Equal(kinds[len(kinds)-len(want):], want)
	}) {
		t.Fatalf("events %v, want them to end with %v", kinds, want)
	}
	return evs[len(evs)-len(want):]
}

func TestEventsAndTraffic(t *testing.T) {
	t.Parallel()
	l := &eventLog{}
	var relay atomic.Pointer[Relay]
	h := newHarness(t, hopts{version: "2025-11-25", cfg: func(c *Config) {
		c.OnEvent = func(e Event) {
			// Never called with the relay's lock held: this would deadlock.
			if r := relay.Load(); r != nil {
				r.mu.Lock()
				r.mu.Unlock() //lint:ignore SA2001 taking the lock is the test
			}
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
		}
		c.Traffic = func(hop string, toServer bool, gen int, msg []byte) {
			l.mu.Lock()
			l.traffic = append(l.traffic, tapped{hop, toServer, gen, string(msg)})
			l.mu.Unlock()
		}
	}})
	relay.Store(h.r)
	up := l.waitFor(t, Starting, Up)
	if up[0].Gen != 1 || up[0].Pid == 0 || up[1].Gen != 1 || up[1].Restart == nil || !up[1].Restart.OK() {
		t.Fatalf("startup events: %+v", up)
	}
	h.mustCall("echo", map[string]any{"text": "tapped-text"})
	// A forwarded call and its answer: once each way (the client hop is
	// the front's to record).
	for _, hop := range []string{"server"} {
		if n := l.seen(hop, true, 1, "tapped-text", `"method":"tools/call"`); n != 1 {
			t.Errorf("call recorded %d times on the %s hop, want 1", n, hop)
		}
		if n := l.seen(hop, false, 1, "tapped-text", `"result"`); n != 1 {
			t.Errorf("answer recorded %d times on the %s hop, want 1", n, hop)
		}
	}

	h.setVariant("v2")
	h.mustCall("recompile", nil)
	evs := l.waitFor(t, Starting, Up, Starting, Up) // the start's, the restart's
	if evs[2].Gen != 2 || evs[3].Gen != 2 {
		t.Fatalf("restart events: %+v", evs)
	}
	if rs := evs[3].Restart; rs == nil || !slices.Equal(rs.Tools.Added, []string{"reverse"}) {
		t.Fatalf("Up carries no tool diff: %+v", rs)
	}
	// mcpflow's own messages: the handshake replayed into the new child
	// (server hop only) and the list_changed it tells the client.
	if n := l.seen("server", true, 2, `"method":"initialize"`); n != 1 {
		t.Errorf("replayed initialize recorded %d times on the server hop, want 1", n)
	}

	if _, _, err := h.call("exit", map[string]any{"code": 7}); err == nil {
		t.Fatal("exit call succeeded")
	}
	var crash Event
	testkit.Eventually(t, 20*time.Second, "a Crashed event", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, e := range l.events {
			if e.Kind == Crashed {
				crash = e
			}
		}
		return crash.Kind == Crashed
	})
	if crash.Gen != 2 || !strings.Contains(crash.Report, "exit status 7") {
		t.Fatalf("crash event: %+v", crash)
	}
}

func TestRecompileStructuredContent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: "2025-11-25"})
	h.setVariant("v2")
	res, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: "recompile"})
	if err != nil || res.IsError {
		t.Fatalf("recompile: %v %+v", err, res)
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("structuredContent: %#v", res.StructuredContent)
	}
	if m["trigger"] != "recompile" {
		t.Errorf("trigger: %v", m["trigger"])
	}
	build, _ := m["build"].(map[string]any)
	for _, k := range []string{"ok", "skipped", "duration_ms", "errors"} {
		if _, ok := build[k]; !ok {
			t.Errorf("build.%s missing: %v", k, build)
		}
	}
	restart, _ := m["restart"].(map[string]any)
	if restart["ok"] != true || restart["error"] != "" {
		t.Errorf("restart: %v", restart)
	}
	if _, ok := restart["duration_ms"].(float64); !ok {
		t.Errorf("restart.duration_ms: %v", restart)
	}
	tools, _ := m["tools"].(map[string]any)
	if a, _ := tools["added"].([]any); len(a) != 1 || a[0] != "reverse" {
		t.Errorf("tools.added: %v", tools)
	}
	for _, k := range []string{"removed", "changed"} {
		if v, ok := tools[k].([]any); !ok || len(v) != 0 {
			t.Errorf("tools.%s: %v", k, tools[k])
		}
	}
	if c, _ := tools["current"].([]any); !slices.Contains(c, any("echo")) || !slices.Contains(c, any("reverse")) {
		t.Errorf("tools.current: %v", tools)
	}
	var text bytes.Buffer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !strings.Contains(text.String(), "+reverse") {
		t.Errorf("text lost the diff: %q", text.String())
	}
}
