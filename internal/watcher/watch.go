package watcher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Batch is one debounced set of changes.
type Batch struct {
	// Paths are the files whose content really changed (created,
	// modified or deleted), as sorted slash paths relative to the root.
	Paths []string
}

// Stats describes what a running Watcher holds.
type Stats struct {
	Dirs    int // directories entered
	Files   int // matching files tracked
	Watches int // fsnotify watches held; 0 in poll mode
}

// Watcher watches one tree. Create it with New and start it with Run.
type Watcher struct {
	s       *settings
	ready   chan struct{}
	started atomic.Bool
	stats   atomic.Pointer[Stats]
}

// New validates cfg and returns a Watcher that is not yet watching. A bad
// glob yields an error naming the glob and the problem; a missing root or
// watch path yields an error naming the path.
func New(cfg Config) (*Watcher, error) {
	s, err := newSettings(cfg)
	if err != nil {
		return nil, err
	}
	w := &Watcher{s: s, ready: make(chan struct{})}
	w.setStats(Stats{})
	return w, nil
}

// Ready is closed once Run has scanned the tree and set its watches:
// changes made after that are seen. If Run fails before, it never closes.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Stats reports the current size of the watched tree, from any goroutine.
func (w *Watcher) Stats() Stats { return *w.stats.Load() }

func (w *Watcher) setStats(st Stats) { w.stats.Store(&st) }

// Run scans the tree, sets its watches, closes Ready, then sends a Batch
// on out after each debounced window with real changes, until ctx is
// done; it then returns nil at once, also during the initial scan. It
// returns an error if the watches cannot be set up. Run may be called only
// once; see Guarantees in the package documentation.
func (w *Watcher) Run(ctx context.Context, out chan<- Batch) error {
	if out == nil {
		return errors.New("watcher: Run needs a non-nil channel")
	}
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("watcher: Run called twice")
	}
	var (
		dirs   dirWatcher // stays nil in poll mode
		events <-chan fsnotify.Event
		errs   <-chan error
		tick   <-chan time.Time
	)
	if w.s.Poll == 0 {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("watcher: start fsnotify: %w%s", err, watchHint(err))
		}
		defer fw.Close() // stops fsnotify's reader goroutine
		dirs, events, errs = fw, fw.Events, fw.Errors
	}
	t := newTree(newFilter(w.s), dirs, true)
	t.done = ctx.Done()
	for _, r := range w.s.roots {
		if err := t.sync(r, nil); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watcher: %w%s", err, watchHint(err))
		}
		if t.dirs[r] == nil {
			return fmt.Errorf("watcher: watch path %s vanished before it could be watched", t.f.osPath(r))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	w.setStats(t.stats())
	if w.s.Poll > 0 {
		w.s.Logger.Debug("polling", "root", w.s.Root, "every", w.s.Poll, "dirs", len(t.dirs), "files", t.nFiles)
		ticker := time.NewTicker(w.s.Poll)
		defer ticker.Stop()
		tick = ticker.C
	} else {
		w.s.Logger.Debug("watching", "root", w.s.Root, "dirs", len(t.dirs), "files", t.nFiles)
	}
	close(w.ready)

	n := &notifier{t: t, b: newBatcher(w.s.Debounce, w.s.MaxWait), dirty: make(pathSet)}
	defer n.b.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			// A vanished root is forgotten by sync and found again once back.
			found := make(pathSet)
			for _, r := range w.s.roots {
				if err := t.sync(r, found); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
			}
			if len(found) > 0 {
				maps.Copy(n.b.pending, found)
				n.b.touch()
			}
		case ev, ok := <-events:
			if !ok {
				return errors.New("watcher: fsnotify stopped unexpectedly")
			}
			if n.event(ev) {
				n.b.touch()
			}
		case err, ok := <-errs:
			if !ok {
				return errors.New("watcher: fsnotify stopped unexpectedly")
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				w.s.Logger.Warn("fsnotify error", "err", err)
				break
			}
			w.s.Logger.Warn("too many file events at once; rescanning the tree")
			for _, r := range w.s.roots {
				if t.dirs[r] != nil {
					n.syncDir(r)
				}
			}
			n.b.touch()
		case <-n.b.timer.C:
			n.evaluate()
			n.b.close()
			if len(n.b.ready) > 0 {
				w.s.Logger.Debug("changes", "paths", len(n.b.ready))
			}
		case n.b.out(out) <- n.b.batch:
			n.b.sent()
		}
		w.setStats(t.stats())
	}
}

// notifier turns fsnotify events into changes.
type notifier struct {
	t     *tree
	b     *batcher
	dirty pathSet // paths with events since the window opened, to check when it closes
}

// event handles one fsnotify event and reports whether it is relevant,
// which restarts the quiet time. Directories are handled at once (a new
// one is watched and scanned before files in it can be missed; a removed
// or renamed one is forgotten before a new directory can reuse its
// watch); files are only noted, and checked when the window closes.
func (n *notifier) event(ev fsnotify.Event) bool {
	t := n.t
	rel, ok := t.f.relOf(ev.Name)
	if !ok {
		return false
	}
	if _, isDir := t.dirs[rel]; isDir {
		if !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
			return false
		}
		t.forget(rel, n.b.pending)
		fi, err := os.Lstat(ev.Name)
		back := err == nil && fi.IsDir()
		root := slices.Contains(t.f.s.roots, rel)
		switch {
		case root && !back:
			t.f.s.Logger.Warn("a watched path was removed; restart mcpflow to watch it again", "path", ev.Name)
		case root || (back && t.dirs[path.Dir(rel)] != nil && !t.f.skipDir(rel)):
			n.syncDir(rel) // it is back already
		}
		return true
	}
	parent := t.dirs[path.Dir(rel)]
	if parent == nil || rel == "." {
		return false // late event from a forgotten directory
	}
	_, known := parent.files[path.Base(rel)]
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			replaced := known && t.check(rel, true) // a file became a directory
			if replaced {
				n.b.pending.add(rel)
			}
			if t.f.skipDir(rel) {
				return replaced
			}
			n.syncDir(rel)
			return true
		}
	}
	if known || t.f.isIgnoreFile(rel) || t.f.matchFile(rel) {
		n.dirty.add(rel)
		return true
	}
	return false
}

func (n *notifier) syncDir(rel string) {
	if err := n.t.sync(rel, n.b.pending); err != nil && err != errStopped {
		n.t.f.s.Logger.Error("cannot watch a directory; changes in it are missed", "err", err.Error()+watchHint(err))
	}
}

// evaluate checks the paths noted since the window opened. Changed
// .gitignore files go first, since they decide what the others are.
func (n *notifier) evaluate() {
	t := n.t
	for p := range n.dirty {
		dir := path.Dir(p)
		if t.f.isIgnoreFile(p) && t.dirs[dir] != nil && t.f.git.load(t.f.abs(dir)) {
			n.syncDir(dir)
		}
	}
	for p := range n.dirty {
		if t.stopped() {
			break
		}
		if _, isDir := t.dirs[p]; isDir || t.dirs[path.Dir(p)] == nil {
			continue // a directory, or forgotten with its directory, which reported it
		}
		switch {
		case !t.f.matchFile(p):
			t.drop(p, n.b.pending)
		case t.check(p, true):
			n.b.pending.add(p)
		}
	}
	clear(n.dirty)
}

// watchHint suggests a fix for running out of inotify resources.
func watchHint(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return " (the inotify watch limit is reached: exclude large directories, raise fs.inotify.max_user_watches, or use polling)"
	case errors.Is(err, syscall.EMFILE):
		return " (too many inotify instances: raise fs.inotify.max_user_instances, or use polling)"
	}
	return ""
}
