package builder

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// OutputDirs are the folders (relative to Config.Dir) whose files,
// when written while a build runs, are taken as that build's output at
// once, before the builder has seen the build write them.
func OutputDirs() []string {
	return []string{"dist", "build", "out", "target", "bin", ".next", ".output"}
}

const (
	// mtimeSlack moves the start of a build's time window earlier when
	// telling whether a change happened during a build: the kernel
	// stamps files with a coarse clock that may lag time.Now by a tick.
	// Learning an output takes a modification time within the window
	// itself.
	mtimeSlack = 10 * time.Millisecond
	// deleteSettle is how long after a build ends a deletion can still
	// be the build's: the watcher reports changes after a quiet time.
	deleteSettle = 2 * time.Second
	// keptWindows is how many finished builds' time windows are kept.
	keptWindows = 8
)

// guard tells the files a build writes from the files a person saves, so
// that the build's own output never starts another build while a save
// made during a build still starts exactly one more.
//
// A changed path is "written during a build" when its modification time
// lies within a build's time window (the running build's, or one of the
// last few finished ones), or, for a deleted path, when a build runs or
// ended moments ago. Such a path is dropped when it is a known output: it
// lies under one of the output folders, or a build was seen writing it
// before. Any other path written during a build still starts a build, and
// is checked after the next good build: if that build wrote it again (its
// modification time lies within that build's window), it is the build's
// output from then on. A known output changed outside every build window
// is someone else's edit: it starts a build and is forgotten as an output.
type guard struct {
	dir     string
	log     *slog.Logger
	learned func([]string)

	mu      sync.Mutex
	running time.Time // start of the running build; zero when none
	windows []window  // the last finished builds, oldest first
	outputs map[string]bool
	verify  map[string]bool // written during a build, not known as outputs
}

type window struct{ start, end time.Time }

func newGuard(cfg Config, lg *slog.Logger) *guard {
	g := &guard{
		dir:     cfg.Dir,
		log:     lg,
		learned: cfg.OnOutputs,
		outputs: map[string]bool{},
		verify:  map[string]bool{},
	}
	for _, p := range cfg.Outputs {
		g.outputs[filepath.ToSlash(p)] = true
	}
	return g
}

// begin records that a build starts now.
func (g *guard) begin() {
	g.mu.Lock()
	g.running = time.Now()
	g.mu.Unlock()
}

// end records that the running build ended. When it succeeded, the paths
// awaiting a check are classified: those it wrote are outputs from now on.
func (g *guard) end(good bool) {
	g.mu.Lock()
	w := window{start: g.running, end: time.Now()}
	g.running = time.Time{}
	g.windows = append(g.windows, w)
	if len(g.windows) > keptWindows {
		g.windows = slices.Delete(g.windows, 0, len(g.windows)-keptWindows)
	}
	var learned []string
	if good {
		for p := range g.verify {
			if fi, err := os.Stat(inDir(g.dir, p)); err == nil && w.holds(fi.ModTime(), 0) {
				g.outputs[p] = true
				learned = append(learned, p)
			}
		}
		clear(g.verify)
	}
	all := g.snapshot(len(learned) > 0)
	g.mu.Unlock()
	for _, p := range learned {
		g.log.Info("the build writes "+p+": its changes no longer start a build (add it to watch.exclude to say so in the config)", "path", p)
	}
	if all != nil && g.learned != nil {
		g.learned(all)
	}
}

// filter returns the paths that must start a build, dropping the build's
// own output.
func (g *guard) filter(paths []string) []string {
	now := time.Now()
	g.mu.Lock()
	keep := make([]string, 0, len(paths))
	var dropped []string
	changed := false
	for _, p := range paths {
		during, exists := false, false
		if fi, err := os.Stat(inDir(g.dir, p)); err == nil {
			during, exists = g.duringBuild(fi.ModTime()), true
		} else {
			during = !g.running.IsZero() || len(g.windows) > 0 && now.Sub(g.windows[len(g.windows)-1].end) < deleteSettle
		}
		switch {
		case !during:
			if g.outputs[p] {
				delete(g.outputs, p)
				changed = true
			}
			delete(g.verify, p)
			keep = append(keep, p)
		case g.outputs[p]:
			dropped = append(dropped, p)
		case g.underOutDir(p):
			if exists {
				g.outputs[p] = true
				changed = true
			}
			dropped = append(dropped, p)
		default:
			g.verify[p] = true
			keep = append(keep, p)
		}
	}
	all := g.snapshot(changed)
	g.mu.Unlock()
	if len(dropped) > 0 {
		g.log.Debug("ignoring files the build wrote", "paths", dropped)
	}
	if all != nil && g.learned != nil {
		g.learned(all)
	}
	return keep
}

// Outputs returns the paths (relative to Config.Dir, slash-separated) the
// builder knows as written by builds, sorted.
func (b *Builder) Outputs() []string {
	b.guard.mu.Lock()
	defer b.guard.mu.Unlock()
	return b.guard.snapshot(true)
}

// snapshot returns the sorted outputs when want is set, else nil. g.mu
// must be held.
func (g *guard) snapshot(want bool) []string {
	if !want {
		return nil
	}
	return slices.Sorted(maps.Keys(g.outputs))
}

// duringBuild reports whether mt lies within a build's time window. g.mu
// must be held.
func (g *guard) duringBuild(mt time.Time) bool {
	return window{start: g.running}.holds(mt, mtimeSlack) ||
		slices.ContainsFunc(g.windows, func(w window) bool { return w.holds(mt, mtimeSlack) })
}

// holds reports whether mt lies within w, its start moved slack earlier.
// A zero start is no window; a zero end is a window still open.
func (w window) holds(mt time.Time, slack time.Duration) bool {
	return !w.start.IsZero() && !mt.Before(w.start.Add(-slack)) && (w.end.IsZero() || !mt.After(w.end))
}

func (g *guard) underOutDir(p string) bool {
	return slices.ContainsFunc(OutputDirs(), func(d string) bool { return strings.HasPrefix(p, d+"/") })
}

// inDir returns p, relative to dir unless absolute, as an OS path.
func inDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}
