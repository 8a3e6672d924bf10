//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ownGroup makes cmd the leader of a new process group, so that the demo
// can signal mcpflow and everything it started as one, and so that a
// Ctrl-C in the terminal reaches the demo (which cleans up) and not mcpflow
// directly.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup sends SIGTERM to the process group led by pid.
func terminateGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGTERM)
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// killProcess sends SIGKILL to the process pid alone.
func killProcess(pid int) error {
	return syscall.Kill(pid, syscall.SIGKILL)
}

// groupAlive reports whether any process of the group led by pid is left.
func groupAlive(pid int) bool {
	return signalable(syscall.Kill(-pid, 0)) && !zombie(pid)
}

// processAlive reports whether the process pid still runs (a zombie that
// nobody reaped yet counts as gone).
func processAlive(pid int) bool {
	return signalable(syscall.Kill(pid, 0)) && !zombie(pid)
}

func signalable(err error) bool {
	return err == nil || errors.Is(err, syscall.EPERM)
}

// zombie reports whether pid is a zombie, where /proc says so (Linux). In a
// container whose init does not reap orphans, a dead server lingers as a
// zombie that kill(pid, 0) still finds.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain ") ".
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// processesIn lists the live processes whose working directory is dir or
// below it, where /proc tells (Linux); elsewhere it finds none. A build
// that outlived mcpflow would show up here.
func processesIn(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+string(os.PathSeparator))) {
			continue
		}
		if !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
