//go:build unix

package clitools

import (
	"io"
	"os"
	"syscall"
)

// pollable returns, when in is a pipe or a socket (mcpflow's stdin as a
// client starts it), a non-blocking duplicate of it that the Go runtime's
// poller waits on, and a func that restores blocking mode and closes it.
// A blocking stdin holds an OS thread in read(2) with the scheduler's P
// until the runtime notices, so every message read is handed to the
// goroutine that serves it only after another thread wakes up: about
// 0.1 ms a message. Anything else (a terminal, a regular file, a reader
// that is not a file) is returned as it is.
func pollable(in io.Reader) (io.Reader, func()) {
	f, ok := in.(*os.File)
	if !ok || !pollStdin {
		return in, func() {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return in, func() {}
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return in, func() {}
	}
	fd := -1
	if err := raw.Control(func(orig uintptr) { fd, err = dupCloexec(int(orig)) }); err != nil || fd < 0 {
		return in, func() {}
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return in, func() {}
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	return nf, func() {
		nf.Close() // wakes a read in progress
		// The file description is shared with in (and whoever else holds
		// it): leave it blocking, as it was.
		_ = raw.Control(func(orig uintptr) { _ = syscall.SetNonblock(int(orig), false) })
	}
}

// pollStdin is false only in benchmarks that compare with a blocking read.
var pollStdin = true

func dupCloexec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}
