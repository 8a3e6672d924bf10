package proc

import (
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

// Cmd returns an *exec.Cmd for s, not yet started.
func (s Spec) Cmd() *exec.Cmd {
	var cmd *exec.Cmd
	switch {
	case s.Shell && len(s.Argv) > 0:
		cmd = shell(s.Argv[0], s.Argv[1:]...)
	case len(s.Argv) > 0:
		cmd = exec.Command(s.Argv[0], s.Argv[1:]...)
	default:
		cmd = exec.Command("")
	}
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	return cmd
}

// Group is a started command's process group.
type Group struct {
	cmd      *exec.Cmd
	sys      groupSys   // the platform's handle on the group
	mu       sync.Mutex // serializes signals with Release
	released bool       // after Release, the id may name someone else's group
}

// Start starts cmd as the leader of a new process group. The caller owns
// cmd: it must call cmd.Wait, then Kill or Release on the group.
func Start(cmd *exec.Cmd) (*Group, error) {
	prepare(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &Group{cmd: cmd}
	g.sys = attach(cmd)
	return g, nil
}

// Pid is the leader's process id.
func (g *Group) Pid() int { return g.cmd.Process.Pid }

// terminate asks every process of the group to stop (SIGTERM on Unix; on
// Windows, where console programs have no such request, it kills them).
// After Release it does nothing.
func (g *Group) terminate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.sys.terminate(g.Pid())
	}
}

// Kill kills every process of the group that is still alive. After Release
// it does nothing: the group's id (or, on Windows, the leader's pid) may by
// then belong to an unrelated process.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.sys.kill(g.Pid())
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
	if waitFor(done, grace) {
		return
	}
	g.Kill()
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
