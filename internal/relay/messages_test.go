package relay

import (
	"testing"
)

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
	want := "mcpflow is answering for the MCP server until it runs. The server's first build is still running after 4s; its tools appear when it finishes. Call recompile to wait for it and see the result."
	if got := h.cs.InitializeResult().Instructions; got != want {
		t.Fatalf("instructions while building:\n got %q\nwant %q", got, want)
	}
}
