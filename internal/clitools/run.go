package clitools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/proc/tail"
)

const (
	// killGrace is how long a cut-short call's group has between SIGTERM
	// and SIGKILL, and how long pipes its leftovers hold open are read.
	killGrace  = 200 * time.Millisecond
	stderrTail = 4 << 10 // how much of a call's stderr a failed call reports
)

// outcome is how one process run ended.
type outcome struct {
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

type runSpec struct {
	argv      []string
	dir       string
	env       []string
	stdin     []byte // nil: no input (EOF at once)
	timeout   time.Duration
	maxOutput int64
	onStderr  func(line string) // each stderr line, in order (tail.New's onLine)
	shutdown  <-chan struct{}
}

// run runs one process in its own process group and reaps the whole group;
// when cut short (timeout, too much output, ctx, shutdown), outcome.err says why.
func run(ctx context.Context, s runSpec) outcome {
	ctx, cutShort := context.WithCancelCause(ctx)
	defer cutShort(nil)
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.timeout, errTimeout)
		defer cancel()
	}
	go func() {
		select {
		case <-s.shutdown:
			cutShort(errShutdown)
		case <-ctx.Done():
		}
	}()
	o := outcome{exitCode: -1}
	cmd := proc.Command(ctx, proc.Spec{Argv: s.argv, Dir: s.dir, Env: s.env}, killGrace)
	if s.stdin != nil {
		cmd.Stdin = bytes.NewReader(s.stdin)
	}
	stdout := &capWriter{max: s.maxOutput, over: func() { cutShort(errOverflow) }}
	stderr := tail.New(0, stderrTail, s.onStderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	err := cmd.Run()
	o.duration = time.Since(start)
	o.stdout = stdout.bytes()
	stderr.Flush()
	o.stderr = strings.ToValidUTF8(stderr.String(), "\uFFFD")
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.err = ctx.Err() // the caller's ctx ended
		if cause := context.Cause(ctx); slices.Contains([]error{errTimeout, errOverflow, errShutdown}, cause) {
			o.err = cause
		}
	case cmd.ProcessState == nil: // it did not start
		o.err = err
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		o.exitCode = cmd.ProcessState.ExitCode()
	case errors.As(err, &ee) && ee.Exited():
		o.exitCode = ee.ExitCode()
	case errors.As(err, &ee):
		o.err = fmt.Errorf("the process ended by %v", ee)
	default:
		o.err = err
	}
	return o
}

// capWriter keeps up to max bytes and calls over once on going over.
type capWriter struct {
	mu   sync.Mutex
	max  int64
	buf  bytes.Buffer
	over func()
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
		w.over()
		return 0, errOverflow
	}
	return w.buf.Write(p)
}

func (w *capWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf.Bytes()...)
}

// isJSONObject returns b decoded when it is one JSON object.
func isJSONObject(b []byte) (map[string]any, bool) {
	var m map[string]any
	return m, json.Unmarshal(b, &m) == nil && m != nil
}
