//go:build windows

package relay

import (
	"os"
	"os/exec"
)

// Windows has no process groups in the unix sense; the child itself is
// killed. mcpflow supports Windows as a build target only.
func setProcessGroup(*exec.Cmd) {}

func terminateGroup(pid int) { killGroup(pid) }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func groupAlive(int) bool { return false }

func shellCommand(script string) *exec.Cmd { return exec.Command("cmd", "/C", script) }
