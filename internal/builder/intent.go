package builder

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// selfWriteRuns is how many restarts in a row the server must be seen
// writing files during before its writes are taken as its own.
const selfWriteRuns = 2

// intents tells the changes that need a cycle from those that do not:
//
//   - A change a cycle already covers: a file last modified before the
//     latest cycle began (a save followed at once by recompile, whose
//     cycle read it, and then the watcher's report of the same save). One
//     intent, one build; a change made during a cycle still starts one
//     more.
//   - What the server writes into its own watched tree as it starts (a
//     log it appends to, a data file it rewrites, a new file each time):
//     files modified within a restart, from the old server's stop to the
//     new one's answer (the window is open while the restart runs: the
//     watcher may report the write before the restart returns; it never
//     opens before the build ended, so the build's output is never the
//     server's). Once such writes were seen during selfWriteRuns
//     restarts in a row, the server restarts itself in a loop: from then on
//     the files it wrote start nothing, whenever they change, and no file
//     written within a restart does either (a new file each start); the
//     log says so once, naming
//     the files and the fix (watch.exclude, or writing them elsewhere).
//     The server is so started at most selfWriteRuns+1 times by itself.
type intents struct {
	dir string
	log *slog.Logger

	mu       sync.Mutex
	started  time.Time // when the latest cycle began
	built    time.Time // when the latest build command ended
	restart  window    // the latest restart; end zero while it runs
	restarts int       // restarts begun
	// wroteIn is the restart during which the server was last seen
	// writing, runs how many restarts in a row it was, written what.
	wroteIn, runs int
	written       []string
	loop          bool // the server restarts itself: drop what it writes
	selfWrites    map[string]bool
}

func newIntents(dir string, lg *slog.Logger) *intents {
	return &intents{dir: dir, log: lg, selfWrites: map[string]bool{}}
}

func (i *intents) cycleStarted() {
	i.mu.Lock()
	i.started = time.Now()
	i.mu.Unlock()
}

// buildEnded records that the build command of the cycle has ended.
func (i *intents) buildEnded() {
	i.mu.Lock()
	i.built = time.Now()
	i.mu.Unlock()
}

// restarting records that a restart (the old server's stop, the new
// one's start) begins now.
func (i *intents) restarting() {
	i.mu.Lock()
	i.restarts++
	// The kernel stamps files with a clock that lags by up to a tick;
	// what the build wrote is never the server's.
	start := time.Now().Add(-mtimeSlack)
	if start.Before(i.built) {
		start = i.built
	}
	i.restart = window{start: start}
	i.mu.Unlock()
}

// restartEnded records that the restart begun last has returned. The
// kernel stamps files with a clock that lags by up to a tick: a file
// stamped within mtimeSlack of now may have been written after it, so
// the window ends that much earlier.
func (i *intents) restartEnded() {
	i.mu.Lock()
	i.restart.end = time.Now().Add(-mtimeSlack)
	i.mu.Unlock()
}

// filter returns the paths that need a cycle.
func (i *intents) filter(paths []string) []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	var keep, wrote []string
	for _, p := range paths {
		if i.selfWrites[p] {
			continue
		}
		fi, statErr := os.Stat(inDir(i.dir, p))
		if statErr == nil && i.restart.holds(fi.ModTime(), 0) {
			if i.loop {
				i.log.Debug("ignoring a file written while the server started", "file", p)
				continue
			}
			wrote = append(wrote, p)
		}
		if statErr == nil && !i.started.IsZero() && fi.ModTime().Before(i.started.Add(-mtimeSlack)) {
			continue // the latest cycle read it already
		}
		keep = append(keep, p)
	}
	if len(wrote) == 0 || i.wroteIn == i.restarts {
		i.written = appendNew(i.written, wrote)
		return keep
	}
	if i.wroteIn == i.restarts-1 {
		i.runs++
	} else {
		i.runs, i.written = 1, nil
	}
	i.wroteIn = i.restarts
	i.written = appendNew(i.written, wrote)
	if i.runs < selfWriteRuns {
		return keep
	}
	i.loop = true
	for _, p := range i.written {
		i.selfWrites[p] = true
	}
	i.log.Warn("the server writes "+strings.Join(i.written, ", ")+" in its watched folder each time it starts, which would restart it in a loop: "+
		"files it writes while it starts no longer rebuild or restart it; add them to watch.exclude in mcpflow.toml, or have the server write them outside the watched folders (e.g. under .mcpflow/)",
		"files", i.written, "restarts", i.runs)
	return slices.DeleteFunc(keep, func(p string) bool { return i.selfWrites[p] })
}

// appendNew appends to list the elements of add it does not hold.
func appendNew(list, add []string) []string {
	for _, p := range add {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
	}
	return list
}
