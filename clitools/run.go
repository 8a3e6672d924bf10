package clitools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc"
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
	onStderr  func(line string) // called for each stderr line, on one goroutine
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
	stderr := &lineTail{onLine: s.onStderr}
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
	stderr.flush()
	o.stderr = stderr.tail()
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

// ReadFrom copies a process's stdout into w. os/exec copies from the pipe
// with io.Copy, which would allocate a 32 KB buffer per call; this takes
// one from a pool.
func (w *capWriter) ReadFrom(r io.Reader) (int64, error) { return copyPooled(w, r) }

// ReadFrom copies a process's stderr into w, as capWriter's does.
func (w *lineTail) ReadFrom(r io.Reader) (int64, error) { return copyPooled(w, r) }

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled is io.Copy(w, r) with a pooled buffer. Both sides are
// wrapped so that io.CopyBuffer uses the buffer: w's ReadFrom is this
// function, and an *os.File's WriteTo would copy with a buffer of its own.
func copyPooled(w io.Writer, r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, *bp)
}

// lineTail keeps the last stderrTail bytes and hands out complete lines.
type lineTail struct {
	mu     sync.Mutex
	onLine func(string)
	line   []byte
	buf    []byte
}

func (w *lineTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*stderrTail {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-stderrTail:]...)
	}
	if w.onLine != nil {
		for _, c := range p {
			if c == '\n' {
				w.onLine(strings.TrimRight(string(w.line), "\r"))
				w.line = w.line[:0]
			} else if len(w.line) < 1024 {
				w.line = append(w.line, c)
			}
		}
	}
	return len(p), nil
}

func (w *lineTail) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.onLine != nil && len(w.line) > 0 {
		w.onLine(string(w.line))
		w.line = nil
	}
}

func (w *lineTail) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	if len(b) > stderrTail {
		b = b[len(b)-stderrTail:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
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
