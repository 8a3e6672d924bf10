package testkit

import (
	"os"
	"os/exec"

	"golang.org/x/sys/windows"
)

// signalAlive reports whether pid runs: it can be opened and has no exit
// code yet (an exited process stays openable while a handle to it is
// held). Groups are Unix's: a negative pid is never alive.
func signalAlive(pid int) bool {
	if pid < 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code == 259 // STILL_ACTIVE
}

func kill(pid int) {
	if p, err := os.FindProcess(pid); pid > 0 && err == nil {
		p.Kill()
		p.Release()
	}
}

func setpgid(*exec.Cmd) {}
