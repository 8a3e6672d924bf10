//go:build unix

package testkit

import (
	"os/exec"
	"syscall"
)

// signalAlive is kill(pid, 0): a zombie counts as alive.
func signalAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// kill sends SIGKILL to pid (to the group -pid when negative).
func kill(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

func setpgid(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
