//go:build unix

package proc

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
)

// sentinelScript is the group's first member (see the package doc): it
// stops itself, and again should anything but a SIGHUP wake it; a SIGHUP
// (the kernel's, to an orphaned group) makes it SIGKILL its whole group.
const sentinelScript = "trap 'kill -KILL 0' HUP; while :; do kill -STOP $$; done"

// groupSys is the group's sentinel, whose pid is the group's id.
type groupSys struct {
	sentinel *exec.Cmd
	pgid     int
}

// startGroup starts the sentinel, stopped, as the leader of a new group,
// tells the guard the group's id, then starts cmd in that group. From the
// fork of cmd on, mcpflow's death reaches the group however it dies.
func startGroup(cmd *exec.Cmd) (groupSys, error) {
	s := exec.Command("/bin/sh", "-c", sentinelScript)
	s.Dir = "/"
	s.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.Start(); err != nil {
		return groupSys{}, fmt.Errorf("start the group's sentinel: %w", err)
	}
	pgid := s.Process.Pid
	g := groupSys{sentinel: s, pgid: pgid}
	var st syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pgid, &st, syscall.WUNTRACED, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if !st.Stopped() {
		// It ended (and was reaped by Wait4): there is no group.
		_ = s.Process.Release()
		return groupSys{}, fmt.Errorf("the group's sentinel (sh) ended: %v", st)
	}
	guardAdd(pgid)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = pgid
	setDeathSignal(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		g.release()
		return groupSys{}, err
	}
	return g, nil
}

func (g groupSys) terminate() { signal(g.pgid, syscall.SIGTERM) }
func (g groupSys) kill()      { signal(g.pgid, syscall.SIGKILL) }

// release kills the group, sentinel included, and reaps the sentinel; the
// guard forgets the id first, as the id is free once the sentinel is
// reaped.
func (g *groupSys) release() {
	if g.sentinel == nil {
		return
	}
	guardRemove(g.pgid)
	g.kill()
	_ = g.sentinel.Wait()
	g.sentinel = nil
}

func signal(pgid int, sig syscall.Signal) {
	if pgid > 0 {
		_ = syscall.Kill(-pgid, sig)
	}
}

// ShellName is how a script is run, as messages name it.
const ShellName = "sh -c"

// shell returns "sh -c script" with args as $1, $2, ...
func shell(ctx context.Context, script string, args ...string) *exec.Cmd {
	argv := []string{"-c", script}
	if len(args) > 0 {
		argv = append(append(argv, "sh"), args...) // "sh" is $0
	}
	return exec.CommandContext(ctx, "sh", argv...)
}
