//go:build unix

package proc

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
)

type groupSys struct{}

func prepare(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

func attach(*exec.Cmd) groupSys { return groupSys{} }

func (groupSys) terminate(pid int) { signal(pid, syscall.SIGTERM) }
func (groupSys) kill(pid int)      { signal(pid, syscall.SIGKILL) }
func (groupSys) release()          {}

func signal(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// GroupAlive reports whether any process of the group led by pid exists
// (zombies included: a group whose members are not reaped yet is alive).
func GroupAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(-pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// shell returns "sh -c script" with args as $1, $2, ...
func shell(ctx context.Context, script string, args ...string) *exec.Cmd {
	argv := []string{"-c", script}
	if len(args) > 0 {
		argv = append(argv, "sh")
		argv = append(argv, args...)
	}
	return exec.CommandContext(ctx, "sh", argv...)
}
