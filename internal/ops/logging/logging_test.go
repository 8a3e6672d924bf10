package logging

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestLoggerText(t *testing.T) {
	t.Parallel()
	var stderr testkit.Buffer
	logger, closeLog, err := Open(&stderr, nil, config.LogConfig{Level: "info", Format: "text"})
	if err != nil {
		t.Fatal(err)
	}
	logger.Debug("hidden")
	logger.Info("started", "k", 1)
	Charm(logger).WithPrefix("build").Warn("slow")
	closeLog()
	out := stderr.String()
	// The instance ends each record, after the record's own attributes.
	pid := fmt.Sprintf(" mcpflow_pid=%d", os.Getpid())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "mcpflow: started k=1"+pid) ||
		!strings.HasSuffix(lines[1], "build: slow"+pid) {
		t.Errorf("text log:\n%s", out)
	}
}

func TestLoggerJSON(t *testing.T) {
	t.Parallel()
	var stderr testkit.Buffer
	logger, closeLog, err := Open(&stderr, nil, config.LogConfig{Level: "info", Format: "json"})
	if err != nil {
		t.Fatal(err)
	}
	logger.Debug("hidden")
	logger.Info("started", "k", 1)
	cl := Charm(logger)
	cl.Debug("hidden too")
	cl.WithPrefix("build").Error("failed", "err", errors.New("exit status 1"), "n", 2.5, "ok", false)
	closeLog()

	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines:\n%s", stderr.String())
	}
	var recs []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		if m["mcpflow_pid"] != float64(os.Getpid()) {
			t.Errorf("no pid in %q", l)
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"])); err != nil {
			t.Errorf("time in %q: %v", l, err)
		}
		recs = append(recs, m)
	}
	if recs[0]["level"] != "INFO" || recs[0]["msg"] != "started" || recs[0]["k"] != float64(1) {
		t.Errorf("slog record: %v", recs[0])
	}
	if recs[1]["level"] != "ERROR" || recs[1]["msg"] != "failed" || recs[1]["prefix"] != "build" ||
		recs[1]["err"] != "exit status 1" || recs[1]["n"] != 2.5 || recs[1]["ok"] != false {
		t.Errorf("charm record through slog: %v", recs[1])
	}
}

// failWriter fails every write and counts them.
type failWriter struct{ n int }

func (w *failWriter) Write([]byte) (int, error) { w.n++; return 0, errors.New("broken pipe") }

func TestLoggerStderrGone(t *testing.T) {
	t.Parallel()
	// A real pipe whose reader is gone: writes fail with EPIPE.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	file := filepath.Join(t.TempDir(), "logs", "mcpflow.log")
	for _, stderr := range []io.Writer{w, &failWriter{}} {
		logger, closeLog, err := Open(stderr, nil, config.LogConfig{Level: "info", Format: "text", File: file})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			logger.Info("line", "i", i)
			Charm(logger).Info("charm line", "i", i)
		}
		closeLog()
		if fw, ok := stderr.(*failWriter); ok && fw.n != 1 {
			t.Errorf("stderr written %d times after failing, want 1", fw.n)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), fmt.Sprintf(" mcpflow_pid=%d\n", os.Getpid())); n != 12 || strings.Count(string(data), "line i=") != 12 {
		t.Errorf("the file has %d lines, want 12:\n%s", n, data)
	}
}

func TestLogFileSharedByInstances(t *testing.T) {
	testkit.SkipUnderWine(t, "appends from several handles to one file lose records under Wine 8; Windows appends through FILE_APPEND_DATA (Go's O_APPEND) whole, which only a Windows machine can confirm")
	t.Parallel()
	// Several loggers (as several mcpflow instances would) append records
	// of many lines to one file at once: every record arrives whole.
	file := filepath.Join(t.TempDir(), "shared.log")
	const loggers, records = 4, 200
	msg := strings.Repeat("x", 300) + "\n" + strings.Repeat("y", 300)
	var wg sync.WaitGroup
	for i := range loggers {
		logger, closeLog, err := Open(io.Discard, nil, config.LogConfig{Level: "info", Format: "json", File: file})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer closeLog()
			for j := range records {
				logger.Info(msg, "logger", i, "j", j)
			}
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != loggers*records {
		t.Fatalf("%d lines, want %d", len(lines), loggers*records)
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["msg"] != msg {
			t.Fatalf("a record was not written whole: %.80q (%v)", l, err)
		}
	}
}
