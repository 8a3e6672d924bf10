//go:build unix

package cache

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

func tryLock(f *os.File) (bool, error) { return flock(f, unix.LOCK_EX) }

func tryLockShared(f *os.File) (bool, error) { return flock(f, unix.LOCK_SH) }

func flock(f *os.File, how int) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return false, err
	}
}

func unlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }
