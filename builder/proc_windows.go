//go:build windows

package builder

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// setProcessGroup starts the build in a new process group.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// terminateGroup kills the build's process tree: Windows has no SIGTERM
// for console programs started this way.
func terminateGroup(pid int) error {
	kill := exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(pid))
	if err := kill.Run(); err != nil {
		p, ferr := os.FindProcess(pid)
		if ferr != nil {
			return ferr
		}
		return p.Kill()
	}
	return nil
}

// killGroup does nothing: once the tree's root is gone taskkill cannot
// find the rest, and terminateGroup already killed the tree.
func killGroup(int) {}

// shellCommand runs script with cmd /C; args are appended to it.
func shellCommand(ctx context.Context, script string, args []string) *exec.Cmd {
	line := strings.Join(append([]string{script}, args...), " ")
	cmd := exec.CommandContext(ctx, "cmd.exe")
	// cmd.exe parses its command line itself; pass it verbatim.
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `cmd.exe /S /C "` + line + `"`}
	return cmd
}
