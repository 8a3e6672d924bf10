package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// wait bounds every wait on a channel; the machine may be slow and busy.
const wait = 10 * time.Second

// settle is how long "noise" is given to (wrongly) close a window of its
// own before a real change is made: a watcher that sent a batch for
// noise alone (or an empty one) shows it only if the noise's window can
// close before the real change opens another. Nothing announces that the
// watcher has seen the noise, so this is time let pass to show that
// something does not happen; tests never depend on it to pass.
const settle = 400 * time.Millisecond

type harness struct {
	t    *testing.T
	root string
	w    *Watcher
	out  chan Batch
}

// start runs a Watcher on cfg (Root defaults to a fresh temp dir, which
// setup may fill first) and waits until it is ready.
func start(t *testing.T, cfg Config, setup func(root string)) *harness {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if setup != nil {
		setup(cfg.Root)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, root: cfg.Root, w: w, out: make(chan Batch)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, h.out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after cancel", err)
			}
		case <-time.After(wait):
			t.Errorf("Run did not return after cancel")
		}
	})
	select {
	case <-w.Ready():
	case err := <-done:
		t.Fatalf("Run failed before ready: %v", err)
	case <-time.After(wait):
		t.Fatalf("watcher not ready after %v", wait)
	}
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (h *harness) path(rel string) string { return filepath.Join(h.root, filepath.FromSlash(rel)) }

func (h *harness) write(rel, content string) {
	h.t.Helper()
	mustWrite(h.t, h.path(rel), content)
}

// next waits for the next batch.
func (h *harness) next() Batch {
	h.t.Helper()
	select {
	case b := <-h.out:
		return b
	case <-time.After(wait):
		h.t.Fatalf("no batch within %v", wait)
		return Batch{}
	}
}

// expect waits for the next batch and checks its paths.
func (h *harness) expect(paths ...string) {
	h.t.Helper()
	b := h.next()
	if !slices.Equal(b.Paths, paths) {
		h.t.Fatalf("batch = %q, want %q", b.Paths, paths)
	}
}

// collect reads batches until together they hold exactly the paths
// want. Use it where a stalled machine may split one change into two
// windows; any path not in want fails the test.
func (h *harness) collect(want ...string) {
	h.t.Helper()
	seen := make(map[string]bool)
	for len(seen) < len(want) {
		for _, p := range h.next().Paths {
			if !slices.Contains(want, p) {
				h.t.Fatalf("unexpected path %q in batch, want only %q", p, want)
			}
			seen[p] = true
		}
	}
}

// realChange writes a file that must trigger, and checks that the first
// batch holds that file alone: whatever the test did before produced
// nothing.
func (h *harness) realChange() {
	h.t.Helper()
	time.Sleep(settle)
	h.write("sentinel.go", fmt.Sprintf("package sentinel // %d", time.Now().UnixNano()))
	h.expect("sentinel.go")
}

func seed(files ...string) func(string) {
	return func(root string) {
		for _, f := range files {
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
				panic(err)
			}
			if err := os.WriteFile(filepath.Join(root, f), []byte("package x // "+f), 0o644); err != nil {
				panic(err)
			}
		}
	}
}

func TestInPlaceWrite(t *testing.T) {
	h := start(t, Config{}, seed("main.go"))
	f, err := os.OpenFile(h.path("main.go"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("package main // edited"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h.expect("main.go")
}

func TestAtomicSave(t *testing.T) {
	h := start(t, Config{Include: []string{"**/*.go"}}, seed("main.go"))
	tmp := h.path(".main.go.tmp1234")
	mustWrite(t, tmp, "package main // saved atomically")
	if err := os.Rename(tmp, h.path("main.go")); err != nil {
		t.Fatal(err)
	}
	h.expect("main.go")
}

func TestDeleteAndRecreate(t *testing.T) {
	h := start(t, Config{}, seed("main.go"))
	if err := os.Remove(h.path("main.go")); err != nil {
		t.Fatal(err)
	}
	h.write("main.go", "package main // recreated")
	h.collect("main.go")
}

func TestDeletedFile(t *testing.T) {
	h := start(t, Config{}, seed("main.go", "other.go"))
	if err := os.Remove(h.path("other.go")); err != nil {
		t.Fatal(err)
	}
	h.expect("other.go")
	if st := h.w.Stats(); st.Files != 1 {
		t.Errorf("files = %d, want 1", st.Files)
	}
}

func TestCheckoutIsOneBatch(t *testing.T) {
	var files []string
	for i := range 500 {
		files = append(files, fmt.Sprintf("pkg%d/f%03d.go", i%10, i))
	}
	h := start(t, Config{Debounce: 200 * time.Millisecond, MaxWait: time.Minute}, seed(files[:400]...))
	for _, f := range files { // 400 rewritten, 100 new
		h.write(f, "package x // checked out "+f)
	}
	want := slices.Clone(files)
	slices.Sort(want)
	h.expect(want...)
	h.realChange()
	if st := h.w.Stats(); st.Files != 501 || st.Dirs != 11 || st.Watches != 11 {
		t.Errorf("stats = %+v, want 501 files, 11 dirs and watches", st)
	}
}

func TestNewNestedDirectory(t *testing.T) {
	h := start(t, Config{}, nil)
	if err := os.MkdirAll(h.path("a/b/c"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("a/b/c/x.go", "package c")
	h.expect("a/b/c/x.go")
	h.write("a/b/c/y.go", "package c")
	h.expect("a/b/c/y.go")
	if st := h.w.Stats(); st.Watches != 4 {
		t.Errorf("watches = %d, want 4 (root, a, a/b, a/b/c)", st.Watches)
	}
}

func TestExcludedAndGitignoredPathsDoNotTrigger(t *testing.T) {
	h := start(t, Config{
		GitIgnore: true,
		Exclude:   []string{"vendor/**"},
	}, func(root string) {
		mustWrite(t, filepath.Join(root, ".gitignore"), "build/\n*.log\n")
		mustWrite(t, filepath.Join(root, "node_modules", "dep", "index.js"), "x")
		mustWrite(t, filepath.Join(root, "vendor", "v.go"), "x")
	})
	h.write("node_modules/dep/index.js", "changed")
	h.write("node_modules/newdep/index.js", "new")
	h.write("build/out/server", "binary") // build/ appears after the start
	h.write("vendor/v.go", "changed")
	h.write("vendor/more/w.go", "new")
	h.write("debug.log", "log line")
	h.write(".git/index", "git internals")
	h.realChange()
	if st := h.w.Stats(); st.Watches != 1 {
		t.Errorf("watches = %d, want 1: excluded directories are not watched", st.Watches)
	}
}

func TestGitignoreEditTakesEffect(t *testing.T) {
	h := start(t, Config{GitIgnore: true, Include: []string{"**/*.go"}}, seed("gen/a.go"))
	h.write(".gitignore", "gen/\n")
	// The window with the .gitignore edit closed: gen/ is dropped, its
	// watch and its file with it. The regeneration below then comes in a
	// window of its own, as after a real edit.
	testkit.Eventually(t, wait, "the .gitignore edit to drop gen/", func() bool {
		st := h.w.Stats()
		return st.Watches == 1 && st.Files == 0
	})
	h.write("gen/a.go", "package gen // regenerated")
	h.realChange()
	if st := h.w.Stats(); st.Watches != 1 || st.Files != 1 {
		t.Errorf("stats = %+v, want gen/ dropped", st)
	}
}

func TestNoContentChangeNoBatch(t *testing.T) {
	h := start(t, Config{}, seed("main.go", "run.sh"))
	content, err := os.ReadFile(h.path("main.go"))
	if err != nil {
		t.Fatal(err)
	}
	h.write("main.go", string(content)) // identical rewrite
	if err := os.Chmod(h.path("run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(h.path("main.go"), later, later); err != nil {
		t.Fatal(err)
	}
	h.realChange()
}

func TestBurstOfSaves(t *testing.T) {
	h := start(t, Config{}, seed("main.go"))
	for i := range 30 {
		h.write("main.go", fmt.Sprintf("package main // save %d", i))
		// Saves spread over ~300 ms on purpose, as an editor's are: each
		// comes within the debounce of the one before.
		time.Sleep(10 * time.Millisecond)
	}
	batches := [][]string{h.next().Paths}
	// Collect anything else the burst produced, until a real change.
	h.write("sentinel.go", "package sentinel")
	for {
		b := h.next()
		if slices.Contains(b.Paths, "sentinel.go") {
			if len(b.Paths) > 1 {
				batches = append(batches, b.Paths)
			}
			break
		}
		batches = append(batches, b.Paths)
	}
	if len(batches) > 2 {
		t.Errorf("30 saves produced %d batches (%q), want 1 (2 at most)", len(batches), batches)
	}
	for _, b := range batches {
		if !slices.Contains(b, "main.go") {
			t.Errorf("batch %q lacks main.go", b)
		}
	}
}

func TestIgnorePathsDoNotTrigger(t *testing.T) {
	root := t.TempDir()
	h := start(t, Config{
		Root:   root,
		Ignore: []string{"bin/server", "out", filepath.Join(root, "logs", "mcpflow.log")},
	}, seed("bin/readme.go", "logs/keep.go"))
	h.write("bin/server", "binary v2")
	h.write("out/build/x.o", "object")
	h.write("logs/mcpflow.log", "log line")
	h.realChange()
	h.write("bin/readme.go", "package bin // still watched")
	h.expect("bin/readme.go")
}

func TestEditorScratchFilesDoNotTrigger(t *testing.T) {
	h := start(t, Config{}, seed("main.go"))
	for _, f := range []string{".main.go.swp", ".main.go.swx", "main.go~", "4913", ".#main.go",
		"main.go___jb_tmp___", "main.go___jb_old___", ".DS_Store"} {
		h.write(f, "scratch")
	}
	h.write(".mcpflow/run.log", "mcpflow's own")
	h.realChange()
}

func TestRemovedDirectoryIsForgotten(t *testing.T) {
	testkit.SkipUnderWine(t, "Wine deletes on close, not with POSIX semantics: a folder whose file another handle still holds stays non-empty")
	h := start(t, Config{}, seed("main.go", "pkg/a.go", "pkg/sub/b.go"))
	if st := h.w.Stats(); st.Watches != 3 || st.Dirs != 3 || st.Files != 3 {
		t.Fatalf("stats at start = %+v", st)
	}
	if err := os.RemoveAll(h.path("pkg")); err != nil {
		t.Fatal(err)
	}
	h.collect("pkg/a.go", "pkg/sub/b.go")
	if st := h.w.Stats(); st.Watches != 1 || st.Dirs != 1 || st.Files != 1 {
		t.Errorf("stats after removal = %+v, want only the root", st)
	}
	// A new directory by the same name is watched afresh.
	h.write("pkg/a.go", "package pkg // again")
	h.expect("pkg/a.go")
	h.write("pkg/a.go", "package pkg // edited")
	h.expect("pkg/a.go")
}

func TestRenamedDirectory(t *testing.T) {
	h := start(t, Config{}, seed("pkg/a.go", "pkg/sub/b.go"))
	if err := os.Rename(h.path("pkg"), h.path("lib")); err != nil {
		t.Fatal(err)
	}
	h.collect("lib/a.go", "lib/sub/b.go", "pkg/a.go", "pkg/sub/b.go")
	h.write("lib/sub/b.go", "package sub // edited after the move")
	h.expect("lib/sub/b.go")
	if st := h.w.Stats(); st.Watches != 3 {
		t.Errorf("watches = %d, want 3", st.Watches)
	}
}

func TestExcludedDirectoriesAreNotWatched(t *testing.T) {
	h := start(t, Config{}, func(root string) {
		for i := range 20 {
			mustWrite(t, filepath.Join(root, ".git", "objects", fmt.Sprint(i), "obj"), "x")
		}
		mustWrite(t, filepath.Join(root, "src", "a.go"), "package src")
	})
	for i := range 50 {
		if err := os.MkdirAll(h.path(fmt.Sprintf("node_modules/pkg%d/lib", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.realChange()
	if st := h.w.Stats(); st.Watches != 2 || st.Dirs != 2 {
		t.Errorf("stats = %+v, want 2 watches (root, src)", st)
	}
}

func TestPollMode(t *testing.T) {
	h := start(t, Config{Poll: 50 * time.Millisecond}, seed("main.go", "pkg/a.go"))
	if st := h.w.Stats(); st.Watches != 0 || st.Files != 2 {
		t.Fatalf("stats = %+v, want 2 files and no watches", st)
	}
	h.write("main.go", "package main // polled")
	h.expect("main.go")

	content, err := os.ReadFile(h.path("pkg/a.go"))
	if err != nil {
		t.Fatal(err)
	}
	h.write("pkg/a.go", string(content)) // identical rewrite
	h.write("node_modules/x.js", "excluded")
	h.realChange()

	if err := os.RemoveAll(h.path("pkg")); err != nil {
		t.Fatal(err)
	}
	h.write("new/n.go", "package n")
	h.collect("new/n.go", "pkg/a.go")
}

func TestRunTwice(t *testing.T) {
	h := start(t, Config{}, nil)
	if err := h.w.Run(context.Background(), make(chan Batch)); err == nil {
		t.Fatal("second Run succeeded")
	}
}
