//go:build !unix

package testkit

import (
	"os"
	"os/exec"
)

// signalAlive reports whether pid can be opened (groups are unix's).
func signalAlive(pid int) bool {
	if pid < 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err == nil {
		p.Release()
	}
	return err == nil
}

func kill(pid int) {
	if p, err := os.FindProcess(pid); pid > 0 && err == nil {
		p.Kill()
		p.Release()
	}
}

func setpgid(*exec.Cmd) {}
