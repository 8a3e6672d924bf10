//go:build unix

package clitools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

func sh(script string) []string { return []string{"sh", "-c", script} }

func TestRunOutcome(t *testing.T) {
	o := run(context.Background(), runSpec{argv: sh(`read x; echo "got $x"; echo oops >&2; exit 3`), stdin: []byte("in\n")})
	if o.err != nil || o.exitCode != 3 || string(o.stdout) != "got in\n" || o.stderr != "oops\n" {
		t.Fatalf("outcome: %+v", o)
	}
}

// Every stderr line reaches onStderr in order, the last one even without a
// line break; the stderr kept is its valid UTF-8 tail, from a line start.
func TestRunStderrLinesAndTail(t *testing.T) {
	var lines []string
	o := run(context.Background(), runSpec{
		argv:     sh(`i=0; while [ $i -lt 1000 ]; do echo "progress $i"; i=$((i+1)); done >&2; printf 'bad \377\r\nlast' >&2`),
		onStderr: func(line string) { lines = append(lines, line) },
	})
	if o.err != nil || o.exitCode != 0 {
		t.Fatalf("outcome: %+v", o)
	}
	if len(lines) != 1002 || lines[0] != "progress 0" || lines[999] != "progress 999" || lines[1000] != "bad \377" || lines[1001] != "last" {
		t.Fatalf("%d lines, ending %q", len(lines), lines[max(0, len(lines)-3):])
	}
	if len(o.stderr) > stderrTail+2 || !strings.HasPrefix(o.stderr, "progress ") || !strings.HasSuffix(o.stderr, "progress 999\nbad \uFFFD\r\nlast") {
		t.Errorf("stderr tail (%d bytes): %q", len(o.stderr), o.stderr)
	}
}

// A call cut short (timeout, overflow, cancellation, shutdown) reports why
// and leaves nothing of its process group running, even a process that
// ignores SIGTERM.
func TestRunCutShortKillsTheGroup(t *testing.T) {
	const script = `trap '' TERM; (trap '' TERM; exec sleep 60) & echo $! > child.pid; while [ ! -s child.pid ]; do :; done; `
	for _, c := range []struct {
		name, script string
		want         error
	}{
		{"timeout", script + "wait", errTimeout},
		{"overflow", script + "echo 0123456789abcdef; wait", errOverflow},
		{"canceled", script + "wait", context.Canceled},
		{"shutdown", script + "wait", errShutdown},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			childPid := filepath.Join(dir, "child.pid")
			running := make(chan struct{}) // closed once the child runs
			go func() { waitPidFile(t, childPid); close(running) }()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := runSpec{argv: sh(c.script), dir: dir}
			switch c.want {
			case errTimeout:
				s.timeout = 300 * time.Millisecond
			case errOverflow:
				s.maxOutput = 10
			case context.Canceled:
				go func() { <-running; cancel() }()
			case errShutdown:
				s.shutdown = running
			}
			o := run(ctx, s)
			if !errors.Is(o.err, c.want) || o.exitCode != -1 {
				t.Fatalf("outcome: %+v, want err %v", o, c.want)
			}
			pid := waitPidFile(t, childPid)
			deadline := time.Now().Add(5 * time.Second)
			for testkit.Alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the call's child %d survived", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestRunStartError(t *testing.T) {
	o := run(context.Background(), runSpec{argv: []string{filepath.Join(t.TempDir(), "missing")}})
	if o.err == nil || o.exitCode != -1 {
		t.Fatalf("outcome: %+v", o)
	}
}

func waitPidFile(t *testing.T, path string) int {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("no %s", path)
	return 0
}
