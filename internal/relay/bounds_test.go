package relay

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// A child that never answers its handshake (a server that serves HTTP by
// default, say) is stopped after HandshakeTimeout; the client's initialize
// is answered by the relay, whose instructions and tool results say why,
// with the child's stderr.
func TestHandshakeTimeoutStopsTheChild(t *testing.T) {
	testkit.UnixOnly(t, "its server command is a sh script")
	t.Parallel()
	w := newRawPeer(t, func(c *Config) {
		c.Child = Child{Command: []string{"echo listening on http://127.0.0.1:8080 >&2; exec sleep 1000"}, Shell: true, StopTimeout: time.Second}
		c.HandshakeTimeout = time.Second
	})
	t0 := time.Now()
	w.send(legacyInit)
	init := w.recvID(0)
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("initialize answered after %s", d)
	}
	res, _ := init["result"].(map[string]any)
	instr, _ := res["instructions"].(string)
	for _, want := range []string{"did not answer its MCP handshake within 1s", "listening on http://127.0.0.1:8080", "relay.handshake_timeout"} {
		if !strings.Contains(instr, want) {
			t.Errorf("instructions lack %q: %q", want, instr)
		}
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(toolCall(2, "", "echo", `{"text":"x"}`))
	if m := w.recvID(2); !strings.Contains(mustMarshal(m), "did not answer its MCP handshake") {
		t.Errorf("a call after the timeout: %v", m)
	}
	if st := w.r.Stats(); st.Pid != 0 || st.State == "running" {
		t.Errorf("the child still runs: %+v", st)
	}
}

// A child that closes its stdout and keeps running can answer nothing: it
// is stopped, the call pending on it gets the true reason, and on_crash
// brings a new one.
func TestChildClosingStdoutIsGone(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil)
	w.handshake("legacy")
	pid := w.r.Stats().Pid
	w.send(toolCall(1, "", "closestdout", `{}`))
	m := w.recvID(1)
	if s := mustMarshal(m); !strings.Contains(s, "closed its stdout") {
		t.Errorf("the pending call got %s, want the true reason", s)
	}
	waitStats(t, w.r, "a new server after the old one closed its stdout", func(st Stats) bool {
		return st.State == "running" && st.Pid != 0 && st.Pid != pid
	})
	w.send(toolCall(2, "", "echo", `{"text":"back"}`))
	if s := mustMarshal(w.recvID(2)); !strings.Contains(s, "back") {
		t.Errorf("echo after the restart: %s", s)
	}
}

// A working directory that does not exist is named as such, not taken for
// a missing program.
func TestMissingWorkingDirectory(t *testing.T) {
	t.Parallel()
	r := New(Config{Child: Child{Command: []string{testkit.Fixture(t)}, Dir: "/nonexistent/srv"}})
	_, err := r.Restart(t.Context())
	if err == nil || !strings.Contains(err.Error(), "working directory does not exist: /nonexistent/srv") || strings.Contains(err.Error(), "no such file") {
		t.Errorf("Restart in a missing directory: %v", err)
	}
}
