package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/statedir"
	"github.com/mcpflow/mcpflow/internal/ops/traffic"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// logOutput is where the log goes: the log file, the ring and stderr. Each
// record arrives in one Write and reaches the file (traffic.File) in one
// write call, so the records of instances sharing a file never interleave.
// tag, when set, ends each record, before its final newline.
type logOutput struct {
	mu    sync.Mutex
	file  *traffic.File // nil: no log file
	ring  io.Writer     // nil: no ring
	queue *stderrQueue
	tag   []byte
}

func (o *logOutput) Write(p []byte) (int, error) {
	n := len(p)
	if len(o.tag) > 0 && bytes.HasSuffix(p, []byte("\n")) {
		p = append(append(p[:len(p)-1:len(p)-1], o.tag...), '\n')
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var err error
	if o.file != nil {
		_, err = o.file.Write(p)
	}
	if o.ring != nil {
		o.ring.Write(p)
	}
	o.queue.add(p)
	return n, err
}

// The bounds of a stderrQueue, and how long close waits for it to drain.
const (
	stderrQueueRecords = 1024
	stderrQueueBytes   = 256 << 10
	stderrCloseWait    = 250 * time.Millisecond
)

// stderrQueue writes the log's records to stderr from one goroutine, so
// that no logger ever waits on stderr's reader. Records that find it full
// are dropped and counted; once a write goes through again, notice logs
// how many, queued even when full. After stderr's first error (EPIPE once
// the client is gone) records are discarded uncounted.
type stderrQueue struct {
	w      io.Writer
	notice func(dropped int)
	wake   chan struct{} // capacity 1
	done   chan struct{} // closed when the goroutine returns

	mu       sync.Mutex
	buf      []byte // the queued records
	recs     int    // how many
	writing  int    // records the goroutine is writing now
	dropped  int    // since the last notice
	noticing bool   // the notice is being logged: queued even when full
	gone     bool
	closed   bool
}

func (q *stderrQueue) add(p []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.gone || q.closed:
		return
	case (q.recs >= stderrQueueRecords || len(q.buf)+len(p) > stderrQueueBytes) && !q.noticing:
		q.dropped++
		return
	}
	q.buf = append(q.buf, p...)
	q.recs++
	q.signal()
}

func (q *stderrQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *stderrQueue) run() {
	defer close(q.done)
	for range q.wake {
		q.mu.Lock()
		buf, n, closed := q.buf, q.recs, q.closed
		q.buf, q.recs, q.writing = nil, 0, n
		q.mu.Unlock()
		if n > 0 {
			_, err := q.w.Write(buf)
			q.mu.Lock()
			q.writing = 0
			dropped := 0
			if err != nil {
				q.gone, q.buf, q.recs, q.dropped = true, nil, 0, 0
			} else if !q.closed {
				dropped, q.dropped = q.dropped, 0
			}
			q.noticing = dropped > 0 // the notice is queued even when the queue is full
			q.mu.Unlock()
			if dropped > 0 {
				q.notice(dropped)
				q.mu.Lock()
				q.noticing = false
				q.mu.Unlock()
			}
		}
		if closed {
			return
		}
	}
}

// close lets the queued records reach stderr for stderrCloseWait at most,
// and counts the others in a last notice, to the file and the ring only.
func (q *stderrQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.signal()
	q.mu.Unlock()
	// When stderr's reader stalls, the goroutine stays blocked in its write.
	wire.WaitClosed(q.done, stderrCloseWait)
	q.mu.Lock()
	lost := 0
	if !q.gone {
		lost = q.dropped + q.recs + q.writing
	}
	q.dropped, q.recs, q.buf = 0, 0, nil
	q.mu.Unlock()
	if lost > 0 {
		q.notice(lost)
	}
}

// Charm returns a charmbracelet logger that logs through l: l's own
// handler for format "text", else one handing its records to l's handler.
func Charm(l *slog.Logger) *log.Logger {
	h := l.Handler()
	if c, ok := h.(*log.Logger); ok {
		return c
	}
	level := log.FatalLevel
	for _, lv := range []log.Level{log.ErrorLevel, log.WarnLevel, log.InfoLevel, log.DebugLevel} {
		if h.Enabled(context.Background(), slog.Level(lv)) {
			level = lv
		}
	}
	return log.NewWithOptions(slogWriter{h}, log.Options{Level: level, Formatter: log.JSONFormatter})
}

// slogWriter turns a charmbracelet logger's JSON records into slog records.
type slogWriter struct{ h slog.Handler }

func (w slogWriter) Write(p []byte) (int, error) {
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "", 0)
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return len(p), nil
	}
	for dec.More() {
		t, err := dec.Token()
		var v any
		if err != nil || dec.Decode(&v) != nil {
			break
		}
		switch key, _ := t.(string); key {
		case log.LevelKey:
			if lv, err := log.ParseLevel(fmt.Sprint(v)); err == nil {
				rec.Level = slog.Level(lv)
			}
		case log.MessageKey:
			rec.Message = fmt.Sprint(v)
		default:
			rec.AddAttrs(jsonAttr(key, v))
		}
	}
	return len(p), w.h.Handle(context.Background(), rec)
}

func jsonAttr(key string, v any) slog.Attr {
	n, ok := v.(json.Number)
	if !ok {
		return slog.Any(key, v) // a string, a bool, an object or an array
	}
	if i, err := n.Int64(); err == nil {
		return slog.Int64(key, i)
	}
	if f, err := n.Float64(); err == nil {
		return slog.Float64(key, f)
	}
	return slog.String(key, n.String())
}

// Open returns mcpflow's logger for a run, as [log] says, writing to the
// log file, to ring (nil: none) and, never waited on, to stderr; stdout
// belongs to the protocol. Every record carries mcpflow_pid, since several
// instances may share a log file. A log file that is not a regular file
// is left alone, with a warning. The function returned closes the log.
func Open(stderr, ring io.Writer, cfg config.LogConfig) (*slog.Logger, func(), error) {
	out := &logOutput{ring: ring}
	var noFile error
	if cfg.File != "" {
		if err := statedir.MkdirFor(cfg.File); err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		f, err := traffic.OpenFile(cfg.File, cfg.MaxSize)
		switch {
		case errors.Is(err, statedir.ErrNotRegular):
			noFile = err
		case err != nil:
			return nil, nil, fmt.Errorf("log file: %w", err)
		default:
			out.file = f
		}
	}
	var logger *slog.Logger
	out.queue = &stderrQueue{w: stderr, wake: make(chan struct{}, 1), done: make(chan struct{}), notice: func(n int) {
		if n == 1 {
			logger.Warn("1 log line was dropped: stderr was not read")
			return
		}
		logger.Warn(fmt.Sprintf("%d log lines were dropped: stderr was not read", n))
	}}
	go out.queue.run()
	logger = newLogger(out, cfg)
	if noFile != nil {
		logger.Warn("no log file: " + noFile.Error())
	}
	return logger, func() {
		out.queue.close()
		if out.file != nil {
			out.file.Close()
		}
	}, nil
}

func newLogger(out *logOutput, cfg config.LogConfig) *slog.Logger {
	lvl, err := log.ParseLevel(cfg.Level)
	if err != nil {
		lvl = log.InfoLevel
	}
	if cfg.Format == "json" {
		h := slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.Level(lvl)})
		return slog.New(h).With("mcpflow_pid", os.Getpid())
	}
	out.tag = fmt.Appendf(nil, " mcpflow_pid=%d", os.Getpid())
	h := log.NewWithOptions(out, log.Options{
		Level:           lvl,
		ReportTimestamp: true,
		TimeFormat:      "15:04:05.000",
		Prefix:          "mcpflow",
	})
	return slog.New(h)
}

// Cycle writes the one line a person reads per cycle, e.g.
// "changed server.go (+2) → build 1.21s ✓ → restart 38ms ✓ → tools +reverse".
func Cycle(logger *log.Logger, res result.Build) {
	parts := []string{res.Trigger}
	if len(res.Changed) > 0 {
		parts[0] = "changed " + res.Changed[0]
		if len(res.Changed) > 1 {
			parts[0] += fmt.Sprintf(" (+%d)", len(res.Changed)-1)
		}
	}
	switch {
	case res.Skipped:
	case res.OK:
		parts = append(parts, fmt.Sprintf("build %s ✓", result.Dur(res.Duration)))
	default:
		parts = append(parts, fmt.Sprintf("build %s ✗ (%v)", result.Dur(res.Duration), res.Err))
	}
	rs := res.Restart
	if rs != nil {
		if rs.Err != nil {
			first, _, _ := strings.Cut(rs.Err.Error(), "\n")
			parts = append(parts, fmt.Sprintf("restart ✗ (%s)", first))
		} else {
			parts = append(parts, fmt.Sprintf("restart %s ✓", result.Dur(rs.Duration)))
			if tools := rs.Tools.String(); tools != "" {
				parts = append(parts, "tools "+tools)
			}
		}
	}
	line := strings.Join(parts, " → ")
	if !res.OK || rs != nil && rs.Err != nil {
		logger.Error(line)
		if res.Errors != "" {
			logger.Error("build errors:\n" + res.Errors)
		}
		return
	}
	logger.Info(line)
}
