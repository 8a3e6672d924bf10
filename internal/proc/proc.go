package proc

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"time"
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
	group  Group
	cancel context.CancelFunc
	done   chan struct{} // closed once Wait returned or Start failed
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
	c := &Cmd{Cmd: spec.command(ctx), cancel: cancel, done: make(chan struct{})}
	c.group.cmd = c.Cmd
	c.Cmd.Cancel = func() error { c.group.terminate(); return nil }
	c.Cmd.WaitDelay = grace
	return c
}

func (s Spec) command(ctx context.Context) *exec.Cmd {
	var cmd *exec.Cmd
	switch {
	case s.Shell && len(s.Argv) > 0:
		cmd = shell(ctx, s.Argv[0], s.Argv[1:]...)
	case len(s.Argv) > 0:
		cmd = exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	default:
		cmd = exec.CommandContext(ctx, "")
	}
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	return cmd
}

// Start starts the command as the leader of a new process group.
func (c *Cmd) Start() error {
	if err := c.group.start(); err != nil {
		c.cancel()
		close(c.done)
		return err
	}
	return nil
}

// Wait waits for the command to exit and its output to be copied
// (exec.Cmd.Wait), then kills what is left of its group. Call it once.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	c.group.Release()
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

// Done is closed once Wait returned (or Start failed).
func (c *Cmd) Done() <-chan struct{} { return c.done }

// Kill kills every process of the group at once; after Wait it does
// nothing.
func (c *Cmd) Kill() { c.group.Kill() }

// Stop stops the started command, which someone waits, and returns once
// Wait returned. It closes stdin (when not nil) and gives the command
// grace to exit, then cancels it: SIGTERM to the group, and SIGKILL grace
// later, or WaitDelay later should that be sooner. Stop may be called
// more than once, and at the same time.
func (c *Cmd) Stop(stdin io.Closer, grace time.Duration) {
	if stdin != nil {
		_ = stdin.Close()
		if waitFor(c.done, grace) {
			return
		}
	}
	c.cancel()
	if grace < c.WaitDelay && !waitFor(c.done, grace) {
		c.Kill()
	}
	<-c.done
}

// Group is a started command's process group.
type Group struct {
	cmd      *exec.Cmd
	mu       sync.Mutex // serializes signals with start and Release
	sys      groupSys   // the platform's handle on the group
	released bool       // after Release, the id may name someone else's group
}

// Start starts cmd as the leader of a new process group. The caller owns
// cmd: it must call cmd.Wait, then Kill or Release on the group.
func Start(cmd *exec.Cmd) (*Group, error) {
	g := &Group{cmd: cmd}
	if err := g.start(); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *Group) start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	sys, err := startGroup(g.cmd)
	if err != nil {
		return err
	}
	g.sys = sys
	return nil
}

// Pid is the leader's process id.
func (g *Group) Pid() int { return g.cmd.Process.Pid }

// ID is the group's id: on Unix its sentinel's pid, what kill(-ID)
// reaches; on Windows the leader's pid.
func (g *Group) ID() int { return g.sys.id() }

// terminate asks every process of the group to stop (SIGTERM on Unix; on
// Windows, where console programs have no such request, it kills them).
// After Release it does nothing.
func (g *Group) terminate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.sys.terminate()
	}
}

// Kill kills every process of the group that is still alive. After Release
// it does nothing: the group's id (or, on Windows, the leader's pid) may by
// then belong to an unrelated process.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.sys.kill()
	}
}

// Release kills what is left of the group and frees the platform's handle
// on it. Call it once the leader has been waited.
func (g *Group) Release() {
	g.Kill()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.released = true
		g.sys.release()
	}
}

// Stop stops the group gracefully and returns once the leader exited
// (done is closed by whoever waits the command): close stdin and wait
// grace (skipped when stdin is nil), SIGTERM the group, wait grace, Kill.
// What is left of the group once the leader exited is killed too.
func (g *Group) Stop(stdin io.Closer, done <-chan struct{}, grace time.Duration) {
	defer g.Kill()
	if stdin != nil {
		_ = stdin.Close()
		if waitFor(done, grace) {
			return
		}
	}
	g.terminate()
	if !waitFor(done, grace) {
		g.Kill()
	}
	<-done
}

func waitFor(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
