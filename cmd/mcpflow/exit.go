package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"time"
)

// Why a run ends (a clean shutdown), besides stdin's end and a fatal error.
var (
	errStderrGone = errors.New("stderr closed (nobody reads the log any more)")
	errStdoutGone = errors.New("stdout closed (the client is gone)")
	errParentGone = errors.New("the parent process exited")
)

// parentPollInterval is how often the run checks that its parent is alive
// (where no pidfd tells it) and that its stdout still has a reader.
const parentPollInterval = 500 * time.Millisecond

// exitWatch cancels ctx on a stop signal, a broken stdout or stderr and the
// parent exiting; a write to a broken pipe returns EPIPE, never kills mcpflow.
type exitWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	sigs   chan os.Signal
	e      env       // a broken e.stdout or e.stderr ends the run
	stderr io.Writer // e.stderr for the logger: an EPIPE on it cancels ctx
	ppid   int       // the parent's pid when the run began
	done   chan struct{}
}

// keepSIGPIPE keeps SIGPIPE caught after a run's exitWatch stops.
var keepSIGPIPE sync.Once

// newExitWatch catches the signals; call start once the logger exists, then stop.
func newExitWatch(e env) *exitWatch {
	keepSIGPIPE.Do(func() {
		if len(pipeSignals) > 0 {
			signal.Notify(make(chan os.Signal, 1), pipeSignals...)
		}
	})
	x := &exitWatch{sigs: make(chan os.Signal, 8), e: e, ppid: os.Getppid(), done: make(chan struct{})}
	x.ctx, x.cancel = context.WithCancelCause(context.Background())
	x.stderr = &brokenPipeWriter{w: e.stderr, gone: func() { x.cancel(errStderrGone) }}
	signal.Notify(x.sigs, slices.Concat(stopSignals, pipeSignals)...)
	return x
}

// start watches for the reasons to stop, and logs the one that ends the run.
func (x *exitWatch) start(logger *slog.Logger) {
	parentGone := watchParent(x.ppid, x.done)
	pollParent := parentGone == nil
	// A client that closed mcpflow's stdout and keeps stdin open is gone
	// too, though nothing is written to find the pipe broken.
	stdoutPoll := time.NewTicker(parentPollInterval)
	go func() {
		defer stdoutPoll.Stop()
		ended := x.ctx.Done()
		for {
			select {
			case <-x.done:
				return
			case <-stdoutPoll.C:
				if pipeGone(x.e.stdout) {
					x.cancel(errStdoutGone)
				}
				if pollParent && os.Getppid() != x.ppid {
					x.cancel(errParentGone)
				}
			case <-ended:
				ended = nil
				if why := context.Cause(x.ctx); why != context.Canceled {
					logger.Info("stopping", "reason", why.Error())
				}
			case <-parentGone:
				parentGone = nil
				x.cancel(errParentGone)
			case sig := <-x.sigs:
				// Any broken pipe raises SIGPIPE, the child's stdin too:
				// only a broken stdout or stderr ends the run.
				switch {
				case !slices.Contains(pipeSignals, sig):
					x.cancel(errors.New("signal " + sigName(sig)))
				case pipeGone(x.e.stdout):
					x.cancel(errStdoutGone)
				case pipeGone(x.e.stderr):
					x.cancel(errStderrGone)
				}
			}
		}
	}()
}

// stop ends the watch and releases the signals (SIGPIPE stays caught).
func (x *exitWatch) stop() {
	signal.Stop(x.sigs)
	close(x.done)
	x.cancel(nil)
}

// brokenPipeWriter calls gone when a write fails because w's reader is gone.
type brokenPipeWriter struct {
	w    io.Writer
	gone func()
}

func (b *brokenPipeWriter) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	if err != nil && isBrokenPipe(err) {
		b.gone() // x.cancel: only the first cause counts
	}
	return n, err
}
