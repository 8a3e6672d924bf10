//go:build windows

package main

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// stopSignals end a run cleanly: Ctrl-C, and the console closing or the
// session ending (delivered as SIGTERM).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// pipeSignals: Windows has no SIGPIPE; a broken pipe is an error.
var pipeSignals []os.Signal

func sigName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "SIGINT"
	}
	return sig.String()
}

// errNoData is ERROR_NO_DATA: the pipe is being closed.
const errNoData = syscall.Errno(232)

func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.ERROR_BROKEN_PIPE) || errors.Is(err, errNoData) || errors.Is(err, syscall.EPIPE)
}

func pipeGone(io.Writer) bool { return false }

// watchParent: Windows keeps an orphan's parent pid, nothing to poll (a
// channel never closed); the child's Job Object still dies with mcpflow.
func watchParent(int, <-chan struct{}) <-chan struct{} { return make(chan struct{}) }

// pollable: Windows' pipes take no deadline; w as it is.
func pollable(w io.Writer, _ io.Reader) (io.Writer, func()) { return w, func() {} }
