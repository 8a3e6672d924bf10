//go:build unix

package builder

import (
	"context"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the build in a process group of its own, so that
// canceling it reaches every process it started.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// terminateGroup asks the build's whole process group to stop.
func terminateGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGTERM)
}

// killGroup kills what is left of the build's process group.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// shellCommand runs script with sh -c; args become $1, $2, ...
func shellCommand(ctx context.Context, script string, args []string) *exec.Cmd {
	argv := []string{"-c", script}
	if len(args) > 0 {
		argv = append(argv, "sh")
		argv = append(argv, args...)
	}
	return exec.CommandContext(ctx, "sh", argv...)
}
