//go:build unix

package traffic

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// closeBeforeRename: Unix renames an open file.
const closeBeforeRename = false

// lockFile takes an exclusive flock on f; without it (an error) rotation
// goes on unlocked.
func lockFile(f *os.File) (unlock func()) {
	fd := int(f.Fd())
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if err == nil {
			return func() { unix.Flock(fd, unix.LOCK_UN) }
		}
		if !errors.Is(err, unix.EINTR) {
			return func() {}
		}
	}
}

// unlinked reports whether the file fi describes has no name left: it
// was rotated out twice, or removed.
func unlinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
