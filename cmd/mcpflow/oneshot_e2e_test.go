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
			cmd := testkit.Command(testkit.Tag(t), nil, mcpflowBin, mode.args...)
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
			case <-time.After(15 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Fatalf("mcpflow %s did not exit after its input ended\n%s", mode.name, stderr.String())
			}
			out := stdout.String()
			for _, id := range []string{`"id":1,"result"`, `"id":2,"result"`, `"id":3,"result"`} {
				if strings.Count(out, id) != 1 {
					t.Errorf("mcpflow %s: want one %s in its output:\n%s\nstderr:\n%s", mode.name, id, out, stderr.String())
				}
			}
		})
	}
}
