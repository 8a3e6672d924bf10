//go:build unix

package builder

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// One intent, one build: a save followed at once by recompile builds once,
// though the watcher reports the save after its debounce, when the
// recompile's build is under way or done; a save made during a build
// still starts exactly one more.
func TestSaveThenRecompileBuildsOnce(t *testing.T) {
	h := newHarness(t, Config{Command: []string{"cat src > out; sleep 0.2"}, Shell: true}, nil, true)
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	time.Sleep(20 * time.Millisecond) // the save comes well after the startup build began
	h.write("src", "v1")
	time.Sleep(30 * time.Millisecond) // the agent's next tool call
	call := h.recompile(context.Background())
	time.Sleep(100 * time.Millisecond) // the debounce: the build has begun
	h.b.Changed([]string{"src"})
	call.wait(t)
	h.expect(2, TriggerRecompile)
	h.noMoreResults() // the watcher's report of the save built nothing more
	// A save made while a build runs cancels it and starts one more, which
	// reads it.
	call = h.recompile(context.Background())
	time.Sleep(50 * time.Millisecond) // the save comes while that build runs (it sleeps 0.2 s)
	h.write("src", "v2")
	h.b.Changed([]string{"src"})
	call.wait(t)
	for res := h.next(); !res.OK; res = h.next() {
		if !res.Canceled {
			t.Fatalf("a build failed: %+v", res)
		}
	}
	if got := h.read("out"); got != "v2" {
		t.Errorf("the last build read %q, want v2", got)
	}
	h.noMoreResults()
}

// writingRestarter is a server that writes a file into the watched tree
// while it starts.
type writingRestarter struct {
	path  string
	calls atomic.Int32
}

func (w *writingRestarter) Restart(ctx context.Context) (*result.Restart, error) {
	n := w.calls.Add(1)
	time.Sleep(20 * time.Millisecond) // its start-up, during which it writes
	if err := os.WriteFile(w.path, []byte(time.Now().String()), 0o644); err != nil {
		return nil, err
	}
	time.Sleep(20 * time.Millisecond) // the rest of its start-up, after the write
	return &result.Restart{Gen: int(n)}, nil
}

// A file the server writes while it starts restarts it at most twice more
// (then it is known as the server's and starts nothing); another file
// still does.
func TestServerWrittenFileStopsTheLoop(t *testing.T) {
	dir := t.TempDir()
	w := &writingRestarter{path: filepath.Join(dir, "server.log")}
	h := &harness{t: t, dir: dir, results: make(chan result.Build, 100), done: make(chan struct{})}
	h.b = New(Config{Dir: dir, OnResult: func(res result.Build) { h.results <- res }}, w)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { h.cancel(); <-h.done })
	h.run()
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	for range 5 {
		h.b.Changed([]string{"server.log"}) // what the watcher reports
		// Time for the restart it may start (no more than 3 do: no
		// event to wait for once they stop, which is the subject).
		time.Sleep(150 * time.Millisecond)
	}
	if n := w.calls.Load(); n > 3 {
		t.Errorf("the server was started %d times, want at most 3", n)
	}
	before := w.calls.Load()
	h.write("main.go", "package main")
	h.b.Changed([]string{"main.go"})
	for w.calls.Load() == before {
		select {
		case <-time.After(5 * time.Second):
			t.Fatal("a save of another file no longer restarts the server")
		case <-h.results:
		}
	}
}

// newFileRestarter is a server that writes a new file into the watched
// tree each time it starts.
type newFileRestarter struct {
	dir   string
	calls atomic.Int32
}

func (w *newFileRestarter) Restart(ctx context.Context) (*result.Restart, error) {
	n := w.calls.Add(1)
	if err := os.WriteFile(filepath.Join(w.dir, fmt.Sprintf("run-%d.log", n)), []byte("started\n"), 0o644); err != nil {
		return nil, err
	}
	time.Sleep(20 * time.Millisecond) // the rest of its start-up
	return &result.Restart{Gen: int(n)}, nil
}

// A server that writes a new file at each start, reported by the watcher
// while the restart still runs or after, is started at most 3 times.
func TestServerWritingNewFilesStopsTheLoop(t *testing.T) {
	dir := t.TempDir()
	w := &newFileRestarter{dir: dir}
	h := &harness{t: t, dir: dir, results: make(chan result.Build, 100), done: make(chan struct{})}
	h.b = New(Config{Dir: dir, OnResult: func(res result.Build) { h.results <- res }}, w)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { h.cancel(); <-h.done })
	h.run()
	h.b.Startup(context.Background())
	h.expect(1, triggerStartup)
	for range 5 {
		h.b.Changed([]string{fmt.Sprintf("run-%d.log", w.calls.Load())})
		select {
		case <-h.results:
		case <-time.After(300 * time.Millisecond):
		}
	}
	if n := w.calls.Load(); n > 3 {
		t.Errorf("the server was started %d times, want at most 3", n)
	}
}
