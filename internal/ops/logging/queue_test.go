package logging

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// gateWriter is a stderr whose reader stalls until open is closed.
type gateWriter struct {
	open chan struct{}
	mu   sync.Mutex
	b    bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.Write(p)
}

func (g *gateWriter) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.String()
}

// TestRunLoggerStalledStderr: while stderr's reader stalls, logging never
// waits; the file and the ring get every record; once stderr is read
// again, one line says how many lines it missed.
func TestRunLoggerStalledStderr(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mcpflow.log")
	stderr := &gateWriter{open: make(chan struct{})}
	var ring testkit.Buffer
	logger, closeLog, err := Open(stderr, &ring, config.LogConfig{Level: "info", Format: "text", File: file, MaxSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	// The lines are all logged while stderr is still stalled: a logger
	// that waited on stderr would never get through them, since the gate
	// opens only after they are. (How fast it logs is make bench's.)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for i := range n {
			logger.Info("line", "i", i)
		}
	}()
	select {
	case <-logged:
	case <-time.After(60 * time.Second):
		close(stderr.open)
		t.Fatalf("logging %d lines with stderr stalled did not finish: it waits on stderr", n)
	}
	close(stderr.open)
	testkit.Eventually(t, 10*time.Second, "stderr to say how many lines it missed", func() bool {
		return strings.Contains(stderr.String(), " dropped: stderr was not read")
	})
	closeLog()
	got := stderr.String()
	shown := strings.Count(got, " line i=")
	var dropped, notices int
	for _, l := range strings.Split(got, "\n") {
		if _, rest, ok := strings.Cut(l, "WARN mcpflow: "); ok {
			var d int
			fmt.Sscanf(rest, "%d log lines were dropped", &d)
			dropped += d
			notices++
		}
	}
	// Every line logged while stderr stalled, and none after: one notice.
	if shown+dropped != n || dropped == 0 || notices != 1 {
		t.Errorf("stderr shows %d lines and %d notices saying %d were dropped; want %d lines in all, one notice", shown, notices, dropped, n)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"the file": string(data), "the ring": ring.String()} {
		if c := strings.Count(text, " line i="); c != n {
			t.Errorf("%s has %d lines, want %d", name, c, n)
		}
		if !strings.Contains(text, fmt.Sprintf("%d log lines were dropped: stderr was not read", dropped)) {
			t.Errorf("%s does not say how many lines stderr missed", name)
		}
	}
}

// TestRunLoggerCloseStalled: closing the log while stderr's reader stalls
// takes stderrCloseWait at most; the file says how many lines stderr
// missed.
func TestRunLoggerCloseStalled(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mcpflow.log")
	stderr := &gateWriter{open: make(chan struct{})}
	defer close(stderr.open)
	logger, closeLog, err := Open(stderr, nil, config.LogConfig{Level: "info", Format: "json", File: file})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		logger.Info("line", "i", i)
	}
	start := time.Now()
	closeLog()
	if d := time.Since(start); d > stderrCloseWait+time.Second {
		t.Errorf("closing the log took %v", d)
	}
	data, _ := os.ReadFile(file)
	if c := strings.Count(string(data), `"msg":"line"`); c != 3000 {
		t.Errorf("the file has %d lines, want 3000", c)
	}
	// Every line missed stderr: the one being written, the queued ones,
	// the dropped ones.
	if !strings.Contains(string(data), `"msg":"3000 log lines were dropped: stderr was not read"`) {
		t.Errorf("the file does not say that 3000 lines missed stderr:\n%s", data[max(0, len(data)-500):])
	}
}
