package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/statedir"
)

// pollEvery is how often a waiting Acquire tries the lock again.
const pollEvery = 50 * time.Millisecond

// Lock is a held build lock.
type Lock struct{ f *os.File }

// Acquire takes the build lock held in the file path (LockFile), creating
// its folder. If another process (or another Acquire in this one) holds it,
// waiting is called once and Acquire tries again until it gets the lock
// or ctx ends (the error is then ctx.Err()).
func Acquire(ctx context.Context, name string, waiting func()) (*Lock, error) {
	if err := makeDir(filepath.Dir(name)); err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	f, err := statedir.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	var t *time.Ticker
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("build lock %s: %w", name, err)
		}
		if ok {
			if t != nil {
				t.Stop()
			}
			f.Truncate(0)
			fmt.Fprintf(f, "%d\n", os.Getpid())
			return &Lock{f: f}, nil
		}
		if t == nil {
			t = time.NewTicker(pollEvery)
			defer t.Stop()
			if waiting != nil {
				waiting()
			}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// LockFile is the build lock of the build whose state file is stateFile
// (StateFile): one lock per build, so that two instances never run the
// same build at once, while different builds of one folder (two servers
// of a mux) run side by side.
func LockFile(stateFile string) string {
	return strings.TrimSuffix(stateFile, ".json") + ".lock"
}

// Release gives the lock up. It may be called more than once.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	unlock(l.f)
	l.f.Close()
	l.f = nil
}
