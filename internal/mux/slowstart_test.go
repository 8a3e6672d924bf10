package mux

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestFirstBuildLongerThanQueueTimeout: a configured server whose first
// build outlasts its relay's queue_timeout is listed as starting
// meanwhile and comes up, with its tools, when the build ends: the mux
// does not send its handshake into a queue that would expire.
func TestFirstBuildLongerThanQueueTimeout(t *testing.T) {
	testkit.UnixOnly(t, "its build or server is a sh script")
	const queueTimeout = 200 * time.Millisecond
	dir := t.TempDir()
	bin := filepath.Join(dir, "srv")
	release := filepath.Join(dir, "release")
	// The build ends when the test creates release: its length is the
	// test's to choose, not the machine's.
	build := fmt.Sprintf("while [ ! -e %[1]s ]; do sleep 0.02; done; cp %[2]s %[3]s.tmp && mv %[3]s.tmp %[3]s", release, testkit.Fixture(t), bin)
	e := start(t, envOpts{cfg: Config{
		Servers:   []ServerSpec{{Name: "slow", Command: []string{bin}, Build: build, Env: map[string]string{"FIXTURE_NAME": "slow"}}},
		StartWait: 50 * time.Millisecond,
		NewBackend: NewRelayBackends(RelayOptions{
			NewHooks:  testHooks,
			Configure: func(_ ServerSpec, c *relay.Config) { c.Queue.Timeout = queueTimeout },
		}),
	}})
	// The client lists, as clients do after their handshake: the server
	// still building, its tools are not there yet.
	if e.toolNames()["slow__echo"] != nil {
		t.Fatal("the tools of a server still building are listed")
	}
	// Several queue timeouts pass while the build runs: time let pass is
	// the subject (none of them may mark the server failed).
	time.Sleep(5 * queueTimeout)
	if s := e.server("slow"); s.Status != StatusStarting {
		t.Fatalf("during the first build: status %q, want %q (%s)", s.Status, StatusStarting, s.Report)
	}
	e.mustFail("slow__echo", map[string]any{"text": "x"}, "slow")
	e.mustFail("reload_server", map[string]any{"name": "slow"}, "still starting")
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the server to come up after its long build", func() bool {
		s := e.server("slow")
		return s.Status == StatusRunning && len(s.Tools) > 0
	})
	if got := e.mustOK("slow__echo", map[string]any{"text": "x"}); got != "slow:x" {
		t.Fatalf("slow__echo after the build: %q", got)
	}
	testkit.Eventually(t, 10*time.Second, "tools/list_changed when the server came up", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.changed > 0
	})
}

// TestStartWaitsAsLongAsTheClient: the client's first messages wait for
// the configured servers as long as the client waits for a server (Codex:
// 8 s, by its name), so a build of a second and a half is invisible: the
// first tools/list holds the server's tools. With StartWait shorter than
// the build, the first list goes without them.
func TestStartWaitsAsLongAsTheClient(t *testing.T) {
	testkit.UnixOnly(t, "its build or server is a sh script")
	for _, tc := range []struct {
		name      string
		startWait time.Duration
		listed    bool
	}{
		{"by the client", 0, true},
		{"StartWait", 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "srv")
			build := fmt.Sprintf("sleep 1.5; cp %[1]s %[2]s.tmp && mv %[2]s.tmp %[2]s", testkit.Fixture(t), bin)
			e := start(t, envOpts{client: "codex-mcp-client", cfg: Config{
				Servers:    []ServerSpec{{Name: "slow", Command: []string{bin}, Build: build}},
				StartWait:  tc.startWait,
				NewBackend: NewRelayBackends(RelayOptions{NewHooks: testHooks}),
			}})
			if listed := e.toolNames()["slow__echo"] != nil; listed != tc.listed {
				t.Fatalf("the first tools/list has slow__echo: %v, want %v", listed, tc.listed)
			}
		})
	}
}
