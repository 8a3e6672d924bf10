//go:build !unix && !windows

package builder

import (
	"context"
	"os"
	"os/exec"
)

// On systems without process groups only the build's own process is
// stopped.
func setProcessGroup(*exec.Cmd) {}

func terminateGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func killGroup(int) {}

func shellCommand(ctx context.Context, script string, args []string) *exec.Cmd {
	return exec.CommandContext(ctx, "sh", append([]string{"-c", script, "sh"}, args...)...)
}
