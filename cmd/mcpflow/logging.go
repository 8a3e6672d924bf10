package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/charmbracelet/log"
	"github.com/mcpflow/mcpflow/internal/config"
)

// logOutput is where the log goes: the log file when one is set, and
// stderr. Each record arrives in one Write (both handlers newLogger
// installs write a record at once) and reaches the file, opened with
// O_APPEND, in one write call, so the records of several mcpflow instances
// sharing a file never interleave. stderr is written after the file; after
// its first error (EPIPE once the client that read it is gone) it is
// dropped, and the file log carries on. When tag is set, it is written at
// the end of each record, before its final newline.
type logOutput struct {
	mu     sync.Mutex
	file   *os.File  // nil: stderr only
	stderr io.Writer // nil after its first error
	tag    []byte
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
	if o.stderr != nil {
		if _, serr := o.stderr.Write(p); serr != nil {
			o.stderr = nil
		}
	}
	return n, err
}

// charmLogger returns a charmbracelet logger that logs through l, for the
// parts that still take one. When l's handler is a charmbracelet logger
// (log.format "text") it is that logger; otherwise each record is written
// as JSON by charmbracelet and handed to l's handler as an slog record
// with the same level, message, prefix and attributes.
func charmLogger(l *slog.Logger) *log.Logger {
	if c, ok := l.Handler().(*log.Logger); ok {
		return c
	}
	h := l.Handler()
	level := log.FatalLevel
	for _, lv := range []log.Level{log.ErrorLevel, log.WarnLevel, log.InfoLevel, log.DebugLevel} {
		if h.Enabled(context.Background(), slog.Level(lv)) {
			level = lv
		}
	}
	return log.NewWithOptions(slogWriter{h}, log.Options{Level: level, Formatter: log.JSONFormatter})
}

// slogWriter turns the JSON records of a charmbracelet logger back into
// slog records for h.
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
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		switch key {
		case log.LevelKey:
			if s, ok := v.(string); ok {
				if lv, err := log.ParseLevel(s); err == nil {
					rec.Level = slog.Level(lv)
				}
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
	switch v := v.(type) {
	case string:
		return slog.String(key, v)
	case bool:
		return slog.Bool(key, v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return slog.Int64(key, n)
		}
		if f, err := v.Float64(); err == nil {
			return slog.Float64(key, f)
		}
		return slog.String(key, v.String())
	default:
		return slog.Any(key, v)
	}
}

// newLogger returns mcpflow's logger, configured by [log]: charmbracelet's
// handler for format "text", slog's JSON handler for "json". Every record
// names its mcpflow process with mcpflow_pid (the relay's "pid" names the
// child), since several instances may share a log file: an attribute in
// JSON, the end of the record in text. It writes to stderr and, when file
// is set, to that file too (see logOutput); stdout belongs to the protocol
// and is never written. The returned function closes the file.
func newLogger(stderr io.Writer, cfg config.LogConfig) (*slog.Logger, func(), error) {
	out := &logOutput{stderr: stderr}
	closeFn := func() {}
	if cfg.File != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.File), 0o755); err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		f, err := os.OpenFile(cfg.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		out.file = f
		closeFn = func() { f.Close() }
	}
	lvl, err := log.ParseLevel(cfg.Level)
	if err != nil {
		lvl = log.InfoLevel
	}
	if cfg.Format == "json" {
		h := slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.Level(lvl)})
		return slog.New(h).With("mcpflow_pid", os.Getpid()), closeFn, nil
	}
	out.tag = fmt.Appendf(nil, " mcpflow_pid=%d", os.Getpid())
	h := log.NewWithOptions(out, log.Options{
		Level:           lvl,
		ReportTimestamp: true,
		TimeFormat:      "15:04:05.000",
		Prefix:          "mcpflow",
	})
	return slog.New(h), closeFn, nil
}
