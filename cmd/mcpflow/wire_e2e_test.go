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

// In every mode (watch, mux, [cli]) the binary answers what a client
// writes that is no JSON-RPC message with an error and goes on, and every
// request gets its answer under the id the client wrote, byte for byte:
// fractions, integers past 2^53, escapes (the Go SDK, on either side of
// mcpflow, would change them).
func TestEveryModeKeepsIDsAndSurvivesBadLines(t *testing.T) {
	t.Parallel()
	modes := []struct {
		name   string
		args   []string
		config string
	}{
		{"watch", []string{"watch", "--", fixtureBin}, ""},
		{"mux", []string{"mux"}, ""},
		{"cli", []string{"watch"}, "[cli]\nschema = [\"echo\", '{\"tools\":[]}']\n"},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if mode.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(mode.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, mode.args...)
			cmd.Dir = dir
			var stderr testkit.Buffer
			cmd.Stderr = &stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			defer func() {
				if t.Failed() {
					t.Logf("mcpflow stderr:\n%s", stderr.String())
				}
			}()
			send := func(line string) {
				t.Helper()
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			answer := func(line string) string {
				t.Helper()
				send(line)
				for {
					select {
					case got, ok := <-lines:
						if !ok {
							t.Fatalf("mcpflow closed stdout; no answer to %s", line)
						}
						if strings.Contains(got[:min(len(got), 60)], `"method"`) {
							continue // a notification of mcpflow's (list_changed)
						}
						return got
					case <-time.After(30 * time.Second):
						t.Fatalf("no answer to %s", line)
					}
				}
			}
			for _, bad := range []string{"{not json", "\"\xff\"", "42", `{"foo":1}`, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"method":"ping"}`} {
				if got := answer(bad); !strings.Contains(got, `"error"`) || !strings.Contains(got, `"id":null`) {
					t.Errorf("%q: %s, want an error answer with id null", bad, got)
				}
			}
			got := answer(`{"jsonrpc":"2.0","id":6.5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			if !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":6.5,"result":`) {
				t.Fatalf("initialize with id 6.5: %s", got)
			}
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			for _, id := range []string{`9007199254740993`, `"é\u0001x"`, `-0`, `12`} {
				if got := answer(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,"result":`) {
					t.Errorf("tools/list with id %s: %s", id, got)
				}
			}
			if got := answer(`[{"jsonrpc":"2.0","id":7.5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`); got != `[{"jsonrpc":"2.0","id":7.5,"result":{}}]` {
				t.Errorf("batch: %s", got)
			}
			stdin.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("mcpflow %s after stdin closed: %v", mode.name, err)
				}
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("mcpflow %s did not exit after stdin closed", mode.name)
			}
		})
	}
}
