//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// add_server of a program that never answers the MCP handshake (a server
// that serves HTTP by default, wrong arguments: here `sleep 1000`) gets an
// error, once relay.handshake_timeout has run out, that names the command
// and tells the agent what it can do, and mcpflow mux exits on the end of
// its input, also while such an add_server is under way. The error comes
// when the timeout says (+1 s at most): no graceful stop of a program
// that never spoke, no re-list of a server that failed.
func TestAddServerOfAProgramThatNeverAnswers(t *testing.T) {
	t.Parallel()
	for _, closeEarly := range []bool{false, true} {
		name := "answered"
		if closeEarly {
			name = "input ends during add_server"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte("[mux]\nadd_server = true\n\n[relay]\nhandshake_timeout = \"2s\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd, stdin, lines, stderr := startRaw(t, dir, "mux", "-c", "mcpflow.toml")
			send := func(s string) { io.WriteString(stdin, s+"\n") }
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			start := time.Now()
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_server","arguments":{"name":"web","command":"sleep","args":["1000"]}}}`)
			if closeEarly {
				// add_server is under way: the child it named was started.
				testkit.Eventually(t, 20*time.Second, "add_server to start `sleep 1000`", func() bool {
					return strings.Contains(stderr.String(), "server started")
				})
				stdin.Close()
			}
			var answer string
			for answer == "" {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("stdout closed without an answer to add_server\n%s", stderr.String())
					}
					if strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,`) {
						answer = l
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("add_server of `sleep 1000` got no answer\n%s", stderr.String())
				}
			}
			if closeEarly {
				if !strings.Contains(answer, "shutting down") && !strings.Contains(answer, "isError") {
					t.Errorf("add_server during the end of input: %s", answer)
				}
			} else {
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("add_server's error came after %s, want ≤ relay.handshake_timeout (2s) + 1 s\n%s", took.Round(time.Millisecond), stderr.String())
				}
				for _, want := range []string{`"isError":true`, `sleep 1000`, "did not answer its MCP handshake within 2s", "the command and args given to add_server"} {
					if !strings.Contains(answer, want) {
						t.Errorf("add_server's error lacks %q: %s", want, answer)
					}
				}
				for _, not := range []string{"mcpflow_mux_internal_recompile", "run.command in mcpflow.toml"} {
					if strings.Contains(answer, not) {
						t.Errorf("add_server's error names %q, which the agent cannot act on: %s", not, answer)
					}
				}
				stdin.Close()
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("mcpflow mux did not exit after its input ended\n%s", stderr.String())
			}
		})
	}
}
