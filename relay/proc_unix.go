//go:build unix

package relay

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in a process group of its own, so that
// stopping it reaches every process it started (sh -c, go run, npm run).
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the child's whole process group.
func signalGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

func terminateGroup(pid int) { signalGroup(pid, syscall.SIGTERM) }
func killGroup(pid int)      { signalGroup(pid, syscall.SIGKILL) }

// groupAlive reports whether any process of the group still exists.
func groupAlive(pid int) bool {
	return pid > 0 && syscall.Kill(-pid, 0) == nil
}

func shellCommand(script string) *exec.Cmd { return exec.Command("sh", "-c", script) }
