//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopSignals end a run cleanly: Ctrl-C, a polite kill, and a hangup (the
// terminal closed, or the client was killed by its parent).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// pipeSignals are caught so that a write to a broken pipe returns EPIPE.
// Caught, never ignored: an ignored signal stays ignored in the children.
var pipeSignals = []os.Signal{syscall.SIGPIPE}

func sigName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok && unix.SignalName(s) != "" {
		return unix.SignalName(s)
	}
	return sig.String()
}

func isBrokenPipe(err error) bool { return errors.Is(err, syscall.EPIPE) }

// pipeGone reports whether w's other end is gone (POLLERR or POLLHUP).
func pipeGone(w io.Writer) bool {
	sc, ok := w.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd)}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			gone = fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
		}
	})
	return gone
}

// watchParent returns a channel closed when the parent ppid exits, until
// done, by a pidfd on Linux; nil without one: the caller polls for a new
// parent pid (the orphan's).
func watchParent(ppid int, done <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	if os.Getppid() == ppid && parentExit(ppid, done, gone) {
		return gone
	}
	return nil
}

// pollable is w, when it is a pipe or a socket, switched to non-blocking
// under a descriptor of its own, so that its writes take a deadline: a
// client that stopped reading cannot hold mcpflow's shutdown (Serve bounds
// its last writes). Not when it is in as well (one socket both ways):
// in's reads would find it non-blocking. restore puts it back.
func pollable(w io.Writer, in io.Reader) (out io.Writer, restore func()) {
	f, ok := w.(*os.File)
	if !ok {
		return w, func() {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return w, func() {}
	}
	if inf, ok := in.(*os.File); ok {
		if ini, err := inf.Stat(); err == nil && os.SameFile(fi, ini) {
			return w, func() {}
		}
	}
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(u uintptr) { fd, _ = unix.Dup(int(u)) })
	}
	if fd < 0 || unix.SetNonblock(fd, true) != nil {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
		return w, func() {}
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	return nf, func() { _ = unix.SetNonblock(fd, false); _ = nf.Close() }
}
