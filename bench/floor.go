//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// runFloor is `bench -floor -- CMD ARGS`: the floor a relay is compared
// with. It starts CMD and carries bytes with two io.Copy loops, client →
// child and child → client, and nothing else: no framing, no parsing, no
// buffering beyond io.Copy's own. It exits when the client closes stdin
// and the child has exited.
func runFloor(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "bench -floor: no command after --")
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench -floor:", err)
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench -floor:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "bench -floor:", err)
		return 1
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(os.Stdout, out)
		close(copied)
	}()
	_, _ = io.Copy(in, os.Stdin)
	in.Close()
	<-copied
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "bench -floor: child:", err)
	}
	return 0
}
