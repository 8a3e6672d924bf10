package builder

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// selfWriteRuns is how many restarts in a row a file must be written
// during before it is taken as written by the server.
const selfWriteRuns = 2

// intents tells the changes that need a cycle from those that do not:
//
//   - A change a cycle already covers: a file last modified before the
//     latest cycle began (a save followed at once by recompile, whose
//     cycle read it, and then the watcher's report of the same save). One
//     intent, one build; a change made during a cycle still starts one
//     more.
//   - A file the server writes itself as it starts (a log, a data file it
//     saves): one whose modification time lay within each of the last
//     selfWriteRuns restarts (from the old server's stop to the new one's
//     answer), which no person's save does. It would restart the server
//     forever; from then on it starts nothing, and the log says so once,
//     naming it.
type intents struct {
	dir string
	log *slog.Logger

	mu         sync.Mutex
	started    time.Time      // when the latest cycle began
	restart    window         // the latest good restart
	suspects   map[string]int // written during this many restarts in a row
	selfWrites map[string]bool
}

func newIntents(dir string, lg *slog.Logger) *intents {
	return &intents{dir: dir, log: lg, suspects: map[string]int{}, selfWrites: map[string]bool{}}
}

func (i *intents) cycleStarted() {
	i.mu.Lock()
	i.started = time.Now()
	i.mu.Unlock()
}

// restarted records a good restart whose new server was started at spawn
// and answered by now. The kernel stamps files with a clock that lags by
// up to a tick: a file stamped within mtimeSlack of now may have been
// written after the restart, so the window ends that much earlier.
func (i *intents) restarted(spawn time.Time) {
	i.mu.Lock()
	i.restart = window{start: spawn, end: time.Now().Add(-mtimeSlack)}
	i.mu.Unlock()
}

// filter returns the paths that need a cycle.
func (i *intents) filter(paths []string) []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	var keep []string
	for _, p := range paths {
		if i.selfWrites[p] {
			continue
		}
		fi, statErr := os.Stat(i.abs(p))
		if statErr == nil && i.restart.start.Before(i.restart.end) && !fi.ModTime().Before(i.restart.start) && !fi.ModTime().After(i.restart.end) {
			i.suspects[p]++
			if i.suspects[p] >= selfWriteRuns {
				i.selfWrites[p] = true
				i.log.Warn("the server writes this file itself: it was written while each of the last restarts ran, which would restart the server forever; changes to it no longer rebuild or restart the server (add it to watch.exclude)", "file", p, "restarts", i.suspects[p])
				continue
			}
		} else {
			delete(i.suspects, p)
		}
		if statErr == nil && !i.started.IsZero() && fi.ModTime().Before(i.started.Add(-mtimeSlack)) {
			continue // the latest cycle read it already
		}
		keep = append(keep, p)
	}
	return keep
}

func (i *intents) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(i.dir, filepath.FromSlash(p))
}
