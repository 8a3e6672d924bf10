package clitools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/proc/tail"
)

// killGrace is how long a call's process group has, after SIGTERM, before
// SIGKILL when the call is cut short.
const killGrace = 200 * time.Millisecond

// stderrTail is how much of a call's stderr a failed call reports.
const stderrTail = 4 << 10

// outcome is how one process run ended.
type outcome struct {
	argv     []string
	stdout   []byte
	stderr   string // tail
	exitCode int    // -1 when it did not exit by itself
	err      error  // start error, or why it was cut short (errTimeout, errOverflow, ctx.Err(), errShutdown)
	duration time.Duration
}

var (
	errTimeout  = errors.New("timed out")
	errOverflow = errors.New("output too large")
	errShutdown = errors.New("server shutting down")
)

// runSpec is one process to run.
type runSpec struct {
	argv      []string
	dir       string
	env       []string
	stdin     []byte // nil: no input (EOF at once)
	timeout   time.Duration
	maxOutput int64
	onStderr  func(line string) // called for each stderr line, in order, one call at a time (tail.New's onLine)
	shutdown  <-chan struct{}
}

// run runs one process in its own process group and reaps the whole group
// before returning.
func run(ctx context.Context, s runSpec) outcome {
	start := time.Now()
	o := outcome{argv: s.argv, exitCode: -1}
	cmd := proc.Spec{Argv: s.argv, Dir: s.dir, Env: s.env}.Cmd()
	if s.stdin != nil {
		cmd.Stdin = bytes.NewReader(s.stdin)
	}
	overflow := make(chan struct{})
	stdout := &capWriter{max: s.maxOutput, over: overflow}
	stderr := tail.New(0, stderrTail, s.onStderr)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	g, err := proc.Start(cmd)
	if err != nil {
		o.err = err
		o.duration = time.Since(start)
		return o
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	var timer <-chan time.Time
	if s.timeout > 0 {
		t := time.NewTimer(s.timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-done:
	case <-timer:
		o.err = errTimeout
	case <-overflow:
		o.err = errOverflow
	case <-ctx.Done():
		o.err = ctx.Err()
	case <-s.shutdown:
		o.err = errShutdown
	}
	if o.err != nil {
		g.Stop(nil, done, killGrace)
	}
	<-done
	g.Release()
	o.duration = time.Since(start)
	o.stdout = stdout.bytes()
	stderr.Flush()
	o.stderr = strings.ToValidUTF8(stderr.String(), "\uFFFD")
	if o.err == nil {
		var ee *exec.ExitError
		switch {
		case waitErr == nil:
			o.exitCode = 0
		case errors.As(waitErr, &ee) && ee.Exited():
			o.exitCode = ee.ExitCode()
		case errors.As(waitErr, &ee):
			o.err = fmt.Errorf("the process ended by %v", ee)
		case errors.Is(waitErr, exec.ErrWaitDelay):
			o.exitCode = cmd.ProcessState.ExitCode()
		default:
			o.err = waitErr
		}
		if stdout.overflowed() {
			o.err = errOverflow
		}
	}
	return o
}

// capWriter keeps up to max bytes and reports going over once.
type capWriter struct {
	mu   sync.Mutex
	max  int64
	buf  bytes.Buffer
	over chan struct{}
	done bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return 0, errOverflow
	}
	if w.max > 0 && int64(w.buf.Len()+len(p)) > w.max {
		w.buf.Write(p[:w.max-int64(w.buf.Len())])
		w.done = true
		close(w.over)
		return 0, errOverflow
	}
	return w.buf.Write(p)
}

func (w *capWriter) overflowed() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.done }

func (w *capWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf.Bytes()...)
}

// isJSONObject reports whether b (trimmed) is one JSON object, and returns
// it decoded.
func isJSONObject(b []byte) (map[string]any, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false
	}
	return m, true
}
