package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/ops/statedir"
)

const (
	// pollEvery is how often a waiting Acquire tries the lock again.
	pollEvery = 50 * time.Millisecond
	// holderPolls is how many polls a waiting Acquire gives the holder to
	// write its pid before it says it waits without naming the holder.
	holderPolls = 10
)

// Lock is a held build lock.
type Lock struct {
	f    *os.File
	name string
	w    *os.File // the waiters file, for Awaited; nil until then
}

// Acquire takes the build lock held in the file name (LockFile), creating
// its folder. If another process (or another Acquire in this one) holds
// it, waiting is called once with the holder's pid (0 if it cannot be
// read), and Acquire tries again until it gets the lock or ctx ends (the
// error is then ctx.Err()), holding meanwhile a shared lock on the waiters
// file (name + ".waiters") that tells the holder it is Awaited.
func Acquire(ctx context.Context, name string, waiting func(holder int)) (*Lock, error) {
	if err := makeDir(filepath.Dir(name)); err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	f, err := statedir.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	var (
		w      *os.File // the waiters file
		shared bool     // w is share-locked
		polls  int
	)
	defer func() {
		if w != nil {
			unlock(w)
			w.Close()
		}
	}()
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("build lock %s: %w", name, err)
		}
		if ok {
			f.Truncate(0)
			f.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
			return &Lock{f: f, name: name}, nil
		}
		if w == nil {
			w, _ = openWaiters(name)
		}
		if w != nil && !shared {
			// Fails only for the moment a holder probes it (Awaited):
			// tried again at the next poll.
			shared, _ = tryLockShared(w)
		}
		if waiting != nil {
			b, _ := os.ReadFile(name)
			if holder, _ := strconv.Atoi(strings.TrimSpace(string(b))); holder != 0 || polls >= holderPolls {
				waiting(holder)
				waiting = nil // once
			}
			polls++
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Awaited reports whether another Acquire waits for l now.
func (l *Lock) Awaited() bool {
	if l == nil || l.f == nil {
		return false
	}
	if l.w == nil {
		var err error
		if l.w, err = openWaiters(l.name); err != nil {
			return false
		}
	}
	free, err := tryLock(l.w)
	if free {
		unlock(l.w)
	}
	return err == nil && !free
}

func openWaiters(name string) (*os.File, error) {
	return os.OpenFile(name+".waiters", os.O_CREATE|os.O_RDWR, 0o644)
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
	if l.w != nil {
		l.w.Close()
		l.w = nil
	}
}
