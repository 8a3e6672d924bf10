//go:build linux || darwin

package proc

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// guardStopWait bounds how long the stop function of StartGuard waits for
// the guard to exit before killing it.
const guardStopWait = 2 * time.Second

// StartGuard starts argv, with the calling process's pid appended, as the
// calling process's guard (a program whose whole work is RunGuard on its
// stdin and that pid). It returns the function that ends the guard at the
// end of a clean run: close the pipe and wait for the guard to exit (it
// kills whatever the caller left of its groups first).
func StartGuard(argv []string) (stop func(), err error) {
	if err := guardable(); err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], append(argv[1:], strconv.Itoa(os.Getpid()))...)
	cmd.Dir = "/"
	// It needs no environment (nor a profile file to share, say) but the
	// race detector's settings, for a -race build.
	cmd.Env = []string{}
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	// A session of its own: neither the client killing mcpflow's group
	// nor a terminal's hangup reaches it. Stdout and stderr are /dev/null
	// (nil), so it holds none of the client's pipes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_ = w.Close()
		if !waitFor(done, guardStopWait) {
			_ = cmd.Process.Kill()
			<-done
		}
	}, nil
}

// RunGuard is the guard's work: until r reaches EOF it remembers the
// groups led by the children of parent, then it kills those that still
// have a process and returns their ids. It returns at once, killing
// nothing, unless parent is the calling process's parent (should the
// parent have died before the guard started, its children are someone
// else's now).
func RunGuard(r io.Reader, parent int, every time.Duration) (killed []int) {
	if os.Getppid() != parent {
		return nil
	}
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, r); close(eof) }()
	self := os.Getpid()
	kids := newChildLister(parent)
	defer kids.close()
	groups := map[int]bool{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for g := range groups {
			if !GroupAlive(g) {
				delete(groups, g)
			}
		}
		for _, c := range kids.list() {
			// A child that leads its group is one proc.Start started; the
			// rest are in mcpflow's own group, which is not ours to kill.
			if pgid, err := syscall.Getpgid(c); err == nil && pgid == c && c != self {
				groups[c] = true
			}
		}
		select {
		case <-eof:
			for g := range groups {
				if syscall.Kill(-g, syscall.SIGKILL) == nil {
					killed = append(killed, g)
				}
			}
			return killed
		case <-t.C:
		}
	}
}
