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
	// mtimeSlack moves the start of a build's time window earlier: the
	// kernel stamps files with a coarse clock that may lag time.Now by a
	// tick. Learning an output takes a time within the window itself.
	mtimeSlack = 10 * time.Millisecond
	// deleteSettle is how long after a build ends a deletion can still
	// be the build's: the watcher reports changes after a quiet time.
	deleteSettle = 2 * time.Second
	// keptWindows is how many finished builds' time windows are kept.
	keptWindows = 8
	// selfWriteRuns is how many restarts in a row the server must be seen
	// writing files during before its writes are taken as its own.
	selfWriteRuns = 2
	// selfWriteSettle is how long after the new server answered its
	// writes still count as written while it started: a server may write
	// its log just after its handshake as well as before.
	selfWriteSettle = 500 * time.Millisecond
)

// guard tells the changes that need a cycle from those that do not:
//
//   - The build's own output: see "The build's own output" in the package
//     documentation. A build's time window is the running build's or one
//     of the last keptWindows finished ones.
//   - A change a cycle already covers: a file last modified before the
//     latest cycle began (a save followed at once by recompile, whose
//     cycle read it, then the watcher's report of that save). One intent,
//     one build; a change made during a cycle still starts one more.
//   - What the server writes into its own watched tree as it starts (a
//     log, a data file it rewrites, a new file each time): files modified
//     within a restart, from the old server's stop to the new one's answer
//     (open while the restart runs, as the watcher may report the write
//     first; never before the build ended). Once such writes were seen
//     during selfWriteRuns restarts in a row, the server restarts itself
//     in a loop: from then on the files it wrote during the latest (not
//     an edit that fell in an earlier one), and any file written within a
//     restart, start nothing, and the log says so once, naming the files
//     and the fix. A server with no build may write just after its handshake too: a
//     file modified within selfWriteSettle after the answer (and before
//     the next cycle) during selfWriteRuns restarts in a row is the
//     server's as well (the same file: an edit that falls there once is
//     not). The server so starts itself at most
//     selfWriteRuns+1 times.
type guard struct {
	dir     string
	log     *slog.Logger
	learned func([]string)

	mu      sync.Mutex
	running time.Time // start of the running build; zero when none
	windows []window  // the last finished builds, oldest first
	outputs map[string]bool
	verify  map[string]bool // written during a build, not known as outputs

	started  time.Time // when the latest cycle began
	built    time.Time // when the latest build command ended
	restart  window    // the latest restart; end zero while it runs
	settled  time.Time // the end of the time just after it (selfWriteSettle)
	restarts int       // restarts begun
	// wroteIn is the restart during which the server was last seen
	// writing, runs how many restarts in a row it was, written what (in
	// that restart).
	wroteIn, runs int
	written       []string
	late          map[string][2]int // file -> [restarts in a row written just after, the latest]
	loop          bool              // the server restarts itself: drop what it writes
	selfWrites    map[string]bool
}

type window struct{ start, end time.Time }

func newGuard(cfg Config, lg *slog.Logger) *guard {
	g := &guard{
		dir:        cfg.Dir,
		log:        lg,
		learned:    cfg.OnOutputs,
		outputs:    map[string]bool{},
		verify:     map[string]bool{},
		selfWrites: map[string]bool{},
		late:       map[string][2]int{},
	}
	for _, p := range cfg.Outputs {
		g.outputs[filepath.ToSlash(p)] = true
	}
	return g
}

// begin records that a cycle, and with build its build, starts now.
func (g *guard) begin(build bool) {
	g.mu.Lock()
	g.started = time.Now()
	if g.settled.After(g.started) {
		g.settled = g.started // what comes next is no longer the server's start
	}
	if build {
		g.running = g.started
	}
	g.mu.Unlock()
}

// end records that the running build ended. When it succeeded, the paths
// awaiting a check are classified: those it wrote are outputs from now on.
func (g *guard) end(good bool) {
	g.mu.Lock()
	w := window{start: g.running, end: time.Now()}
	g.running, g.built = time.Time{}, w.end
	g.windows = append(g.windows[max(0, len(g.windows)-keptWindows+1):], w)
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

// dropOutputs returns the paths that must start a build, dropping the
// build's own output.
func (g *guard) dropOutputs(paths []string) []string {
	now := time.Now()
	g.mu.Lock()
	keep := make([]string, 0, len(paths))
	var dropped []string
	changed := false
	for _, p := range paths {
		fi, err := os.Stat(inDir(g.dir, p))
		exists := err == nil
		during := exists && g.duringBuild(fi.ModTime()) ||
			!exists && (!g.running.IsZero() || len(g.windows) > 0 && now.Sub(g.windows[len(g.windows)-1].end) < deleteSettle)
		switch {
		case !during:
			changed = changed || g.outputs[p]
			delete(g.outputs, p)
			delete(g.verify, p)
			keep = append(keep, p)
		case g.outputs[p] || slices.ContainsFunc(OutputDirs(), func(d string) bool { return strings.HasPrefix(p, d+"/") }):
			if exists && !g.outputs[p] {
				g.outputs[p], changed = true, true
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

// snapshot returns the sorted outputs if want, else nil; g.mu must be held.
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

func inDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, filepath.FromSlash(p))
}

// restarting records that a restart (the old server's stop, the new
// one's start) begins now; ended records that it returned. The kernel
// stamps files with a clock that lags by up to a tick: the window opens
// that much earlier, though never before the build ended (what the build
// wrote is never the server's), and ends that much earlier (a file
// stamped within mtimeSlack of the end may have been written after it).
func (g *guard) restarting() (ended func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.restarts++
	start := time.Now().Add(-mtimeSlack)
	if start.Before(g.built) {
		start = g.built
	}
	g.restart = window{start: start}
	return func() {
		g.mu.Lock()
		g.restart.end = time.Now().Add(-mtimeSlack)
		g.settled = g.restart.end.Add(selfWriteSettle)
		g.mu.Unlock()
	}
}

// dropCovered returns the paths that need a cycle, dropping those a cycle
// covers and the server's own writes.
func (g *guard) dropCovered(paths []string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var keep, wrote, late []string
	for _, p := range paths {
		if g.selfWrites[p] {
			continue
		}
		fi, statErr := os.Stat(inDir(g.dir, p))
		if statErr == nil && g.writtenLate(p, fi.ModTime()) {
			late = append(late, p)
		}
		if statErr == nil && g.restart.holds(fi.ModTime(), 0) {
			if g.loop {
				g.log.Debug("ignoring a file written while the server started", "file", p)
				continue
			}
			wrote = append(wrote, p)
		}
		if statErr == nil && !g.started.IsZero() && fi.ModTime().Before(g.started.Add(-mtimeSlack)) {
			continue // the latest cycle read it already
		}
		keep = append(keep, p)
	}
	if len(wrote) > 0 && g.wroteIn != g.restarts {
		if g.wroteIn == g.restarts-1 {
			g.runs++
		} else {
			g.runs = 1
		}
		g.written = nil
		g.wroteIn = g.restarts
	}
	for _, p := range wrote {
		if !slices.Contains(g.written, p) {
			g.written = append(g.written, p)
		}
	}
	switch {
	case len(late) > 0: // written just after the answer, again
		g.written, g.runs = late, selfWriteRuns
	case len(wrote) == 0 || g.runs < selfWriteRuns:
		return keep
	}
	g.loop = true
	for _, p := range g.written {
		g.selfWrites[p] = true
	}
	g.log.Warn("the server writes "+strings.Join(g.written, ", ")+" in its watched folder each time it starts, which would restart it in a loop: "+
		"files it writes while it starts no longer rebuild or restart it; add them to watch.exclude in mcpflow.toml, or have the server write them outside the watched folders (e.g. under .mcpflow/)",
		"files", g.written, "restarts", g.runs)
	return slices.DeleteFunc(keep, func(p string) bool { return g.selfWrites[p] })
}

// writtenLate reports whether p, modified at mt just after the latest
// restart's answer, was so during selfWriteRuns restarts in a row. Not
// after a build: there a file saved just after the answer is as likely
// the next edit of a source, and a self-writer is caught while it starts.
// g.mu is held.
func (g *guard) writtenLate(p string, mt time.Time) bool {
	after := g.restart.end.Add(mtimeSlack) // the answer
	if after.Before(g.built) {
		after = g.built
	}
	if g.loop || g.outputs[p] || g.restart.end.IsZero() || !mt.After(after) || mt.After(g.settled) || !g.built.Before(g.started) {
		return false
	}
	if w := g.late[p]; w[1] != g.restarts {
		if w[1] != g.restarts-1 {
			w[0] = 0
		}
		g.late[p] = [2]int{w[0] + 1, g.restarts}
	}
	return g.late[p][0] >= selfWriteRuns
}
