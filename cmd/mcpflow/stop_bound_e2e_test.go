//go:build unix

package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// stopBound is how soon mcpflow is gone after SIGTERM or SIGINT, whatever
// is in flight.
const stopBound = 5 * time.Second

// SIGTERM and SIGINT stop mcpflow within stopBound whatever is in flight
// — an add_server whose program never answers its handshake, a reload
// whose build runs, a first start whose server never answers — and the
// request in flight gets its one answer first.
func TestSignalStopsWithinBound(t *testing.T) {
	t.Parallel()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initialized := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	cases := []struct {
		name   string
		config string
		args   []string
		send   []string
		ready  string // a line of mcpflow's stderr that says the server runs
		then   string // a request sent once ready
		flight string // a file whose existence says the request is in flight; "" = ready says so
	}{
		{
			name:   "add_server pending",
			config: "[mux]\nadd_server = true\n",
			args:   []string{"mux", "-c", "mcpflow.toml"},
			send:   []string{initialize, initialized, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_server","arguments":{"name":"web","command":"sleep","args":["1000"]}}}`},
			ready:  "server started",
		},
		{
			name:   "reload_server pending",
			config: "[servers.one.build]\ncommand = \"test -e built || { touch built; exit 0; }; touch reloading; sleep 1000\"\n[servers.one.run]\ncommand = [\"" + fixtureBin + "\"]\n[servers.one.watch]\nenabled = false\n",
			args:   []string{"watch"},
			send:   []string{initialize, initialized},
			ready:  "startup →",
			then:   `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reload_server","arguments":{"name":"one"}}}`,
			flight: "reloading",
		},
		{
			name:   "a handshake the server never answers",
			config: "[run]\ncommand = [\"sleep\", \"1000\"]\n[watch]\nenabled = false\n",
			args:   []string{"watch"},
			send:   []string{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"1"}}}`},
			ready:  "server started",
		},
	}
	for _, c := range cases {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(c.name+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(c.config), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd, stdin, lines, stderr := startRaw(t, dir, c.args...)
				for _, l := range c.send {
					io.WriteString(stdin, l+"\n")
				}
				testkit.Eventually(t, 60*time.Second, "mcpflow's log to say "+c.ready, func() bool { return strings.Contains(stderr.String(), c.ready) })
				var early []string // lines read before the signal
				if c.then != "" {
					// The server is up once the mux lists its tools.
					deadline := time.After(60 * time.Second)
					for up := false; !up; {
						io.WriteString(stdin, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`+"\n")
						for answered := false; !answered; {
							select {
							case l := <-lines:
								early = append(early, l)
								answered = strings.HasPrefix(l, `{"jsonrpc":"2.0","id":9,`)
								up = answered && strings.Contains(l, "one__echo")
							case <-deadline:
								t.Fatalf("the server's tools were never listed\n%s", stderr.String())
							}
						}
					}
					io.WriteString(stdin, c.then+"\n")
				}
				if c.flight != "" {
					testkit.Eventually(t, 60*time.Second, "the reload's build to run", func() bool {
						_, err := os.Stat(filepath.Join(dir, c.flight))
						return err == nil
					})
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				cmd.Process.Signal(sig)
				select {
				case <-done:
				case <-time.After(stopBound):
					t.Fatalf("mcpflow still runs %s after %s\n%s", stopBound, sig, stderr.String())
				}
				var answers []string
				for _, l := range early {
					if strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,`) {
						answers = append(answers, l)
					}
				}
				for l := range lines {
					if strings.HasPrefix(l, `{"jsonrpc":"2.0","id":2,`) {
						answers = append(answers, l)
					}
				}
				if len(answers) != 1 || !strings.Contains(answers[0], "shutting down") {
					t.Errorf("the request in flight got %d answers, want 1 saying mcpflow is shutting down: %q\nstderr:\n%s", len(answers), answers, stderr.String())
				}
			})
		}
	}
}

// startRaw starts mcpflow with args in dir for a client that writes raw
// JSON-RPC lines: its stdin, the lines of its stdout (closed at their
// end) and its stderr. The process group is killed when the test ends.
func startRaw(t *testing.T, dir string, args ...string) (*exec.Cmd, io.WriteCloser, <-chan string, *testkit.Buffer) {
	t.Helper()
	cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, args...)
	cmd.Dir = dir
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, stdin, lines, stderr
}
