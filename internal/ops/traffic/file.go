package traffic

import (
	"cmp"
	"fmt"
	"os"
	"sync"

	"github.com/mcpflow/mcpflow/internal/ops/statedir"
)

// File is a file, created 0600, that is appended to and rotated by size:
// when a write would take it past its maximum, FILE is renamed FILE.1
// (replacing an older one) and a new FILE is started; a write larger than
// the maximum gets a file of its own. It is safe for concurrent use.
//
// Several processes (mcpflow instances sharing a log file) may append to
// one FILE, each write landing whole (O_APPEND, one write call). The first
// to find it full rotates it, under a lock (flock on Unix) and only if FILE
// is still its file, so one rotation happens, never two in a row; the
// others move to the new FILE when they find the old one full or removed,
// and may land a write in FILE.1 or one past the maximum until then.
// Nothing is truncated or lost unless FILE.1 is replaced while a lagging
// process still writes to it.
type File struct {
	path string
	max  int64

	mu     sync.Mutex
	f      *os.File // nil after a failed reopen (Windows) or Close
	closed bool
}

// OpenFile opens path for appending, creating it 0600, rotated past
// maxSize bytes (DefaultMaxFile when maxSize <= 0).
func OpenFile(path string, maxSize int64) (*File, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxFile
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &File{path: path, max: maxSize, f: f}, nil
}

// openAppend opens path for appending, only as a regular file
// (statedir.OpenFile): a FIFO or a link there never blocks mcpflow.
func openAppend(path string) (*os.File, error) {
	return statedir.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// Write appends p in one write call, rotating the file first when p would
// take it past its maximum; after a failed rotation p is still written.
func (r *File) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, os.ErrClosed
	}
	var rerr error
	if r.f == nil {
		f, err := openAppend(r.path)
		if err != nil {
			return 0, err
		}
		r.f = f
	}
	// The size as it is on disk: other processes append too.
	if fi, err := r.f.Stat(); err == nil && (unlinked(fi) || fi.Size() > 0 && fi.Size()+int64(len(p)) > r.max) {
		rerr = r.rotateLocked()
		if r.f == nil {
			return 0, rerr
		}
	}
	n, err := r.f.Write(p)
	return n, cmp.Or(err, rerr)
}

// rotateLocked renames FILE to FILE.1, unless another process did, and
// moves to the new FILE.
func (r *File) rotateLocked() error {
	var rerr error
	unlock := lockFile(r.f)
	if r.isCurrent() {
		if closeBeforeRename {
			unlock()
			unlock = func() {}
			r.f.Close()
			r.f = nil
		}
		if err := os.Rename(r.path, r.path+".1"); err != nil {
			rerr = fmt.Errorf("rotate: %w", err)
		}
	}
	unlock()
	f, err := openAppend(r.path)
	if err != nil {
		return cmp.Or(rerr, fmt.Errorf("rotate: %w", err)) // a file still open goes on being written
	}
	if r.f != nil {
		r.f.Close()
	}
	r.f = f
	return rerr
}

// isCurrent reports whether the path still names the open file.
func (r *File) isCurrent() bool {
	cur, err := os.Stat(r.path)
	if err != nil {
		return false
	}
	me, err := r.f.Stat()
	return err == nil && os.SameFile(cur, me)
}

// Close closes the file; later writes fail with os.ErrClosed.
func (r *File) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
