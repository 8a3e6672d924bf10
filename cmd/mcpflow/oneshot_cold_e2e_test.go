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
			cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, "watch")
			cmd.Dir = dir
			cmd.Stdin = strings.NewReader(input)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
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
			case <-time.After(60 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Fatalf("mcpflow %s did not exit after answering\n%s", mode.name, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "built")); err != nil {
				t.Errorf("the build did not finish: %v", err)
			}
			var list string
			for _, line := range strings.Split(stdout.String(), "\n") {
				if strings.Contains(line, `"id":2,`) {
					list = line
				}
			}
			if !strings.Contains(list, `"result"`) || !strings.Contains(list, `echo"`) {
				t.Fatalf("mcpflow %s: tools/list was not answered with the server's tools: %s\nstdout:\n%s\nstderr:\n%s", mode.name, list, stdout.String(), stderr.String())
			}
		})
	}
}
