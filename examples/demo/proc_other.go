//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// Without Unix process groups the demo can only signal mcpflow itself.

func ownGroup(cmd *exec.Cmd) {}

func terminateGroup(pid int) error { return killGroup(pid) }

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func killProcess(pid int) error { return killGroup(pid) }

func groupAlive(pid int) bool { return false }

func processAlive(pid int) bool { return false }

func processesIn(dir string) []int { return nil }
