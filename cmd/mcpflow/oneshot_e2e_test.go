//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// A one-shot client writes its requests and closes its input before it
// reads: every request gets its answer, in every mode, and mcpflow exits
// on the end of its input, having answered them all. (How soon it exits
// is not asserted here: timing belongs to make bench.)
func TestOneShotPipeIsAnswered(t *testing.T) {
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
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}, "\n") + "\n"
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if mode.config != "" {
				if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(mode.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr := oneShot(t, dir, input, 15*time.Second, mode.args...)
			for _, id := range []string{`"id":1,"result"`, `"id":2,"result"`, `"id":3,"result"`} {
				if strings.Count(out, id) != 1 {
					t.Errorf("mcpflow %s: want one %s in its output:\n%s\nstderr:\n%s", mode.name, id, out, stderr)
				}
			}
		})
	}
}

// oneShot runs mcpflow with args in dir as a one-shot client does: input
// written and closed at once; it must exit (status 0) within bound. It
// returns what mcpflow wrote to stdout and stderr.
func oneShot(t *testing.T, dir, input string, bound time.Duration, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(input)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(bound):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("mcpflow %v did not exit after its input ended\n%s", args, errOut.String())
	}
	return out.String(), errOut.String()
}

// A one-shot pipe on a cold build: the client writes its requests and
// closes its input at once, and the build outlasts the client's wait
// (4 s for a client mcpflow does not know). Closing stdin does not mean
// the client stopped reading: each request gets its real answer once the
// server is up (tools/list lists the server's tools, not only
// recompile), then mcpflow exits, in watch and in the mux.
func TestOneShotPipeColdBuild(t *testing.T) {
	t.Parallel()
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	const build = "sleep 6 && echo built > built"
	modes := []struct{ name, config string }{
		{"watch", "[build]\ncommand = \"" + build + "\"\n[run]\ncommand = [\"" + fixtureBin + "\"]\n"},
		{"mux", "[servers.one.build]\ncommand = \"" + build + "\"\n[servers.one.run]\ncommand = [\"" + fixtureBin + "\"]\n"},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(mode.config), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr := oneShot(t, dir, input, 60*time.Second, "watch")
			if _, err := os.Stat(filepath.Join(dir, "built")); err != nil {
				t.Errorf("the build did not finish: %v", err)
			}
			var list string
			for _, line := range strings.Split(stdout, "\n") {
				if strings.Contains(line, `"id":2,`) {
					list = line
				}
			}
			if !strings.Contains(list, `"result"`) || !strings.Contains(list, `echo"`) {
				t.Fatalf("mcpflow %s: tools/list was not answered with the server's tools: %s\nstdout:\n%s\nstderr:\n%s", mode.name, list, stdout, stderr)
			}
		})
	}
}
