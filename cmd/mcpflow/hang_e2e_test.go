//go:build unix

package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// add_server of a program that never answers the MCP handshake (a server
// that serves HTTP by default, wrong arguments: here `sleep 1000`) gets an
// error within relay.handshake_timeout that names the command and tells
// the agent what it can do, and mcpflow mux exits within 5 s of the end of
// its input, also while such an add_server is under way.
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
			cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, "mux", "-c", "mcpflow.toml")
			cmd.Dir = dir
			var stderr testkit.Buffer
			cmd.Stderr = &stderr
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			send := func(s string) { io.WriteString(stdin, s+"\n") }
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_server","arguments":{"name":"web","command":"sleep","args":["1000"]}}}`)
			t0 := time.Now()
			var closed time.Time
			if closeEarly {
				time.Sleep(300 * time.Millisecond)
				stdin.Close()
				closed = time.Now()
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
				if d := time.Since(t0); d > 15*time.Second {
					t.Errorf("add_server answered after %s", d)
				}
				stdin.Close()
				closed = time.Now()
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("mcpflow mux did not exit after its input ended\n%s", stderr.String())
			}
			if d := time.Since(closed); d > 5*time.Second {
				t.Errorf("mcpflow mux took %s to exit after its input ended", d)
			}
		})
	}
}
