package proc

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// Spec is a command to run: an argv, or a script for the platform's shell.
type Spec struct {
	// Argv is the program and its arguments. With Shell, Argv[0] is the
	// script and Argv[1:] are its positional arguments ($1, $2, ...).
	Argv  []string
	Shell bool
	Dir   string   // working directory; "" = the caller's
	Env   []string // environment; nil = the caller's
}

// Cmd is a command run as the leader of a process group of its own. Set
// the embedded exec.Cmd's fields (Stdin, Stdout, ...) before Start; start
// and wait it with Cmd's Start and Wait (or Run), not exec.Cmd's.
type Cmd struct {
	*exec.Cmd
	cancel context.CancelFunc
	done   chan struct{} // closed once Wait returned or Start failed

	mu       sync.Mutex // serializes signals with Start and Wait's release
	sys      groupSys   // the platform's handle on the group
	released bool       // after Wait released it, the id may name someone else's group
}

// Command returns the command of spec. Once ctx is done (or Stop cancels
// the command), the group is asked to terminate: exec.Cmd.Cancel sends
// SIGTERM to the group (on Windows, where there is no such request, it
// kills the Job Object). If the leader still runs grace later, it is
// killed, and grace after the leader exited or ctx was done, whichever
// came first, the output pipes are closed, whoever holds them
// (exec.Cmd.WaitDelay). Wait kills what is left of the group; as with
// exec.CommandContext, it returns ctx's error for a command canceled
// that then exited with status 0.
func Command(ctx context.Context, spec Spec, grace time.Duration) *Cmd {
	ctx, cancel := context.WithCancel(ctx)
	var cmd *exec.Cmd
	switch {
	case spec.Shell && len(spec.Argv) > 0:
		cmd = shell(ctx, spec.Argv[0], spec.Argv[1:]...)
	case len(spec.Argv) > 0:
		cmd = exec.CommandContext(ctx, Program(spec.Argv[0], spec.Dir), spec.Argv[1:]...)
	default:
		cmd = exec.CommandContext(ctx, "")
	}
	cmd.Dir, cmd.Env, cmd.WaitDelay = spec.Dir, spec.Env, grace
	c := &Cmd{Cmd: cmd, cancel: cancel, done: make(chan struct{})}
	cmd.Cancel = func() error { c.signal(groupSys.terminate); return nil }
	return c
}

// Program is the program name as a person typing it in dir runs it: on
// Windows, where cmd.exe runs a bare name found in the current folder
// before one on PATH, a bare name found in dir (with PATHEXT's
// extensions) is that file's absolute path; otherwise name itself.
func Program(name, dir string) string {
	if runtime.GOOS != "windows" || filepath.Base(name) != name {
		return name
	}
	if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return name
}

// Start starts the command as the leader of a new process group.
func (c *Cmd) Start() error {
	c.mu.Lock()
	sys, err := startGroup(c.Cmd)
	c.sys = sys
	c.mu.Unlock()
	if err != nil {
		c.cancel()
		close(c.done)
	}
	return err
}

// Wait waits for the command to exit and its output to be copied
// (exec.Cmd.Wait), then kills what is left of its group and frees the
// platform's handle on it (the group is released). Call it once.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	c.mu.Lock()
	c.released = true
	c.sys.release()
	c.mu.Unlock()
	c.cancel()
	close(c.done)
	return err
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Kill kills every process of the group at once, even after the leader
// exited; after Wait it does nothing.
func (c *Cmd) Kill() { c.signal(groupSys.kill) }

// signal sends the group terminate (SIGTERM on Unix; on Windows, where
// console programs have no such request, a kill) or kill, unless the
// group was released: its id (on Windows, the leader's pid) may then
// belong to an unrelated process.
func (c *Cmd) signal(send func(groupSys)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.released {
		send(c.sys)
	}
}

// Stop stops the started command, which someone waits, and returns once
// Wait returned. It closes stdin (when not nil) and gives the command
// grace to exit, then cancels it: SIGTERM to the group, and SIGKILL grace
// later, or WaitDelay later should that be sooner. Stop may be called
// more than once, and at the same time.
func (c *Cmd) Stop(stdin io.Closer, grace time.Duration) {
	if stdin != nil {
		_ = stdin.Close()
		if wire.WaitClosed(c.done, grace) {
			return
		}
	}
	c.cancel()
	if grace < c.WaitDelay && !wire.WaitClosed(c.done, grace) {
		c.Kill()
	}
	<-c.done
}
