//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mcpflow/mcpflow/internal/watcher"
)

// treeSpec is the generated tree: a source tree, plus folders the watcher
// prunes by default.
type treeSpec struct {
	srcDirs, nmDirs, gitDirs, perDir int
}

func (t treeSpec) files() (src, nm, git int) {
	return t.srcDirs * t.perDir, t.nmDirs * t.perDir, t.gitDirs * t.perDir
}

// genTree writes the tree with a few goroutines.
func genTree(root string, t treeSpec) error {
	type job struct {
		dir, prefix string
		n           int
	}
	var jobs []job
	for i := range t.srcDirs {
		jobs = append(jobs, job{filepath.Join(root, "src", fmt.Sprintf("pkg%03d", i)), "f", t.perDir})
	}
	for i := range t.nmDirs {
		jobs = append(jobs, job{filepath.Join(root, "node_modules", fmt.Sprintf("mod%03d", i), "lib"), "m", t.perDir})
	}
	for i := range t.gitDirs {
		jobs = append(jobs, job{filepath.Join(root, ".git", "objects", fmt.Sprintf("%02x", i)), "o", t.perDir})
	}
	if err := writeFile(filepath.Join(root, ".gitignore"), "*.log\n/dist/\n"); err != nil {
		return err
	}
	ch := make(chan job)
	errc := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				if err := os.MkdirAll(j.dir, 0o755); err != nil {
					errc <- err
					continue
				}
				for k := range j.n {
					body := fmt.Sprintf("package %s\n\n// File %d of %s: generated for the watcher benchmark.\n\nfunc F%d() int { return %d }\n%s\n",
						filepath.Base(j.dir), k, j.dir, k, k, strings.Repeat("// padding line to look like source code\n", 4))
					if err := os.WriteFile(filepath.Join(j.dir, fmt.Sprintf("%s%03d.go", j.prefix, k)), []byte(body), 0o644); err != nil {
						errc <- err
						break
					}
				}
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// runningWatcher is a watcher.Watcher running on its own goroutine.
type runningWatcher struct {
	w      *watcher.Watcher
	out    chan watcher.Batch
	cancel context.CancelFunc
	errc   chan error
}

func (r *runningWatcher) stop() error {
	r.cancel()
	return <-r.errc
}

// startWatcher times watcher.New + Run until Ready.
func startWatcher(root string) (*runningWatcher, time.Duration, error) {
	t0 := time.Now()
	w, err := watcher.New(watcher.Config{Root: root, GitIgnore: true, Debounce: 100 * time.Millisecond})
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningWatcher{w: w, out: make(chan watcher.Batch, 16), cancel: cancel, errc: make(chan error, 1)}
	go func() { r.errc <- w.Run(ctx, r.out) }()
	select {
	case <-w.Ready():
		return r, time.Since(t0), nil
	case err := <-r.errc:
		cancel()
		return nil, 0, fmt.Errorf("watcher.Run before Ready: %v", err)
	case <-time.After(2 * time.Minute):
		cancel()
		<-r.errc
		return nil, 0, errors.New("watcher not Ready after 2 minutes")
	}
}

// floorWatch is the floor for the watcher: walk the tree, skipping the
// same pruned folders, and add an fsnotify watch per directory. No
// globs, no ignore files, no hashing.
func floorWatch(root string) (int, time.Duration, error) {
	t0 := time.Now()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return 0, 0, err
	}
	defer fw.Close()
	n := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch d.Name() {
		case ".git", "node_modules":
			return filepath.SkipDir
		}
		n++
		return fw.Add(p)
	})
	return n, time.Since(t0), err
}

// idleCPU is this process's CPU time over a window of doing nothing.
func idleCPU(window time.Duration) time.Duration {
	runtime.GC()
	time.Sleep(300 * time.Millisecond)
	c0 := cpuTime()
	time.Sleep(window)
	return cpuTime() - c0
}

// watcherBench times the watcher's start-up on a large tree against the
// floor, then measures its idle CPU in this process.
func watcherBench(b *bench) (res *result, err error) {
	res = &result{}
	root, err := b.dir("tree")
	if err != nil {
		return res, err
	}
	sc := b.opt.treeScale
	spec := treeSpec{srcDirs: int(500 * sc), nmDirs: int(200 * sc), gitDirs: int(50 * sc), perDir: 100}
	t0 := time.Now()
	if err := genTree(root, spec); err != nil {
		return res, fmt.Errorf("generate tree: %v", err)
	}
	gen := time.Since(t0)
	srcN, nmN, gitN := spec.files()

	var ws, fl sample
	var stats watcher.Stats
	var floorN int
	for r := range b.opt.watchRounds {
		for k := range 2 {
			if (r+k)%2 == 0 {
				rw, d, err := startWatcher(root)
				if err != nil {
					return res, err
				}
				stats = rw.w.Stats()
				if err := rw.stop(); err != nil {
					return res, fmt.Errorf("watcher.Run: %v", err)
				}
				ws.addDur(d)
				continue
			}
			n, d, err := floorWatch(root)
			if err != nil {
				return res, fmt.Errorf("floor watch: %v", err)
			}
			floorN = n
			fl.addDur(d)
		}
	}

	// Idle CPU: first this process alone, then with a watcher sitting on
	// the tree.
	window := b.opt.idle
	base := idleCPU(window)
	rw, _, err := startWatcher(root)
	if err != nil {
		return res, err
	}
	idle := idleCPU(window)
	// It still works after idling: a change yields a batch.
	changed := filepath.Join(root, "src", "pkg000", "f000.go")
	t1 := time.Now()
	if err := os.WriteFile(changed, []byte("package pkg000\n// changed\n"), 0o644); err != nil {
		rw.stop()
		return res, err
	}
	var seen time.Duration
	select {
	case bt := <-rw.out:
		seen = time.Since(t1)
		if len(bt.Paths) != 1 || bt.Paths[0] != "src/pkg000/f000.go" {
			rw.stop()
			return res, fmt.Errorf("watcher batch after one write: %v", bt.Paths)
		}
	case <-time.After(5 * time.Second):
		rw.stop()
		return res, errors.New("watcher: no batch within 5s of a write")
	}
	if err := rw.stop(); err != nil {
		return res, fmt.Errorf("watcher.Run: %v", err)
	}

	res.add(stat("watcher.New + Run → Ready", uDur, &ws).
		withRatio(ratio(ws.median(), fl.median())+" of floor").
		judge("≤ 1s (median)", ws.median() <= float64(time.Second)))
	res.add(stat("floor: WalkDir + fsnotify.Add per dir", uDur, &fl))
	res.add(single("watches held (Stats().Watches)", uCount, float64(stats.Watches)).
		judge(fmt.Sprintf("= floor's %d dirs", floorN), stats.Watches == floorN))
	res.add(single("files tracked (Stats().Files)", uCount, float64(stats.Files)).
		judge(fmt.Sprintf("= %d source files + .gitignore", srcN), stats.Files == srcN+1))
	pct := func(d time.Duration) float64 { return 100 * float64(d) / float64(window) }
	res.add(row{name: fmt.Sprintf("idle CPU over %s, watcher idle", window), n: "1", med: fmtDur(float64(idle)),
		ratio: fmt.Sprintf("%.2f%% of a core", pct(idle))}.
		judge("≈ 0 (≤ 1% of a core)", pct(idle) <= 1))
	res.add(row{name: fmt.Sprintf("idle CPU over %s, no watcher (this process)", window), n: "1", med: fmtDur(float64(base)),
		ratio: fmt.Sprintf("%.2f%% of a core", pct(base))})
	res.add(single("one write → Batch after idling (debounce 100ms)", uDur, float64(seen)))
	cs, err := scanCancel(b)
	if err != nil {
		return res, err
	}
	res.add(stat("cancel during the start-up scan → Run returns", uDur, &cs).
		judge("≤ 250ms (p99)", cs.p99() <= float64(250*time.Millisecond)))
	res.note("tree: %d source files in %d dirs, node_modules with %d files, .git with %d files, root .gitignore; generated in %.1fs",
		srcN, spec.srcDirs, nmN, gitN, gen.Seconds())
	res.note("the watcher hashes every matching file at start-up (content fingerprints); the floor does not read files")
	res.note("cancel: a tree of 40 sparse files of 60 MiB (2.4 GB to hash), Run's context canceled 100 ms into its scan; internal/watcher/scan_cancel_test.go checks the same stop by the bytes read, untimed")
	res.note("Stats after Ready: %d dirs, %d files, %d watches; idle CPU is getrusage(RUSAGE_SELF) user+sys, in-process", stats.Dirs, stats.Files, stats.Watches)
	return res, nil
}

// scanCancel times how soon watcher.Run returns when its context is
// canceled in the middle of its start-up scan (hashing large files).
func scanCancel(b *bench) (sample, error) {
	var s sample
	root, err := b.dir("bigtree")
	if err != nil {
		return s, err
	}
	for i := range 40 {
		p := filepath.Join(root, fmt.Sprintf("f%02d.bin", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return s, err
		}
		if err := os.Truncate(p, 60<<20); err != nil {
			return s, err
		}
	}
	for range max(b.opt.watchRounds, 1) * 5 {
		w, err := watcher.New(watcher.Config{Root: root})
		if err != nil {
			return s, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx, make(chan watcher.Batch, 1)) }()
		time.Sleep(100 * time.Millisecond)
		select {
		case <-w.Ready():
			cancel()
			<-ran
			return s, errors.New("scan cancel: the scan was over in 100ms; the tree is too small")
		default:
		}
		t0 := time.Now()
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				return s, fmt.Errorf("watcher.Run after cancel: %v", err)
			}
		case <-time.After(time.Minute):
			return s, errors.New("scan cancel: Run did not return within a minute of the cancel")
		}
		s.addDur(time.Since(t0))
	}
	return s, nil
}
