package relay

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestMaxChildren: a stdio server runs one process per client session, at
// most MaxChildren; a session beyond is told why, with the setting's
// name, and is served by a process of its own once another session ends.
func TestMaxChildren(t *testing.T) {
	h := newHarness(t, hopts{cfg: func(c *Config) { c.MaxChildren = 2 }})
	h.mustCall("echo", map[string]any{"text": "a"})
	first := h.childPID()
	open := func(version string) *mcp.ClientSession {
		return testkit.Connect(t, version, nil, wire.SessionTransport(h.r, slog.New(slog.DiscardHandler)))
	}
	second := open("")
	if _, err := second.ListTools(h.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	cs := open(testkit.Legacy.Version)
	call := func() (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "b"}})
		if err != nil {
			t.Fatalf("second session's call: %v", err)
		}
		return testkit.Text(res), res.IsError
	}
	if text, isErr := call(); !isErr || !strings.Contains(text, "relay.max_children") {
		t.Fatalf("the second session's call beyond the limit: %q (error %v), want the limit named", text, isErr)
	}
	if n := liveChildren(h.r); n != 2 {
		t.Errorf("%d processes run, want 2", n)
	}
	second.Close()
	testkit.Eventually(t, 30*time.Second, "the third session served once the second ended", func() bool {
		text, isErr := call()
		return !isErr && strings.Contains(text, "b")
	})
	if n := liveChildren(h.r); n != 2 {
		t.Errorf("%d processes run, want 2", n)
	}
	h.mustCall("echo", map[string]any{"text": "a"})
	if pid := h.childPID(); pid != first {
		t.Errorf("the first session's process changed: %d, was %d", pid, first)
	}
}

// liveChildren counts the sessions that have a child connected.
func liveChildren(r *Relay) int {
	n := 0
	for _, s := range r.openSessions() {
		s.mu.Lock()
		if s.child != nil {
			n++
		}
		s.mu.Unlock()
	}
	return n
}
