//go:build unix

package proc

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// guardStopWait bounds how long the stop function of StartGuard waits for
// the guard to exit before killing it.
const guardStopWait = 2 * time.Second

// guarded is this process's guard, if any, and the groups it is told of.
var guarded = struct {
	mu     sync.Mutex
	w      *os.File // the write end of the guard's stdin; nil = no guard
	groups map[int]bool
}{groups: map[int]bool{}}

// guardAdd tells the guard of a new group, before its first command runs.
func guardAdd(pgid int) {
	guarded.mu.Lock()
	defer guarded.mu.Unlock()
	guarded.groups[pgid] = true
	tell(guarded.w, '+', pgid)
}

// guardRemove tells the guard to forget a group, before its id is freed.
func guardRemove(pgid int) {
	guarded.mu.Lock()
	defer guarded.mu.Unlock()
	delete(guarded.groups, pgid)
	tell(guarded.w, '-', pgid)
}

// tell writes "+ID" or "-ID" to the guard. A guard that died is noticed
// by its waiter, not here.
func tell(w *os.File, op byte, pgid int) {
	if w != nil {
		_, _ = w.Write(append(strconv.AppendInt([]byte{op}, int64(pgid), 10), '\n'))
	}
}

// StartGuard starts argv, with the calling process's pid appended, as the
// calling process's guard (a program whose whole work is RunGuard on its
// stdin and that pid), and tells it every group the process has and will
// have. Should the guard die before stop, died is called with why, and
// another guard is started and told the groups (died is called again
// should that fail). stop ends the guard at the end of a clean run: it
// closes the pipe and waits for the guard to exit.
func StartGuard(argv []string, died func(error)) (stop func(), err error) {
	var mu sync.Mutex // serializes stop with re-arming
	stopped := false
	var cmd *exec.Cmd
	var done chan struct{}
	var start func() error
	start = func() error {
		c, w, err := startGuard(argv)
		if err != nil {
			return err
		}
		cmd, done = c, make(chan struct{})
		go func(done chan struct{}) {
			err := c.Wait()
			close(done)
			guarded.mu.Lock()
			if guarded.w == w {
				guarded.w = nil
			}
			guarded.mu.Unlock()
			_ = w.Close()
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				return
			}
			if err == nil {
				err = fmt.Errorf("exit status 0")
			}
			if serr := start(); serr != nil {
				died(fmt.Errorf("the guard (pid %d) ended: %v; no new guard: %w", c.Process.Pid, err, serr))
				return
			}
			died(fmt.Errorf("the guard (pid %d) ended: %v; guard pid %d took over", c.Process.Pid, err, cmd.Process.Pid))
		}(done)
		return nil
	}
	mu.Lock()
	err = start()
	mu.Unlock()
	if err != nil {
		return nil, err
	}
	return func() {
		mu.Lock()
		stopped = true
		c, d := cmd, done
		mu.Unlock()
		guarded.mu.Lock()
		w := guarded.w
		guarded.w = nil
		guarded.mu.Unlock()
		if w != nil {
			_ = w.Close()
		}
		if !wire.WaitClosed(d, guardStopWait) {
			_ = c.Process.Kill()
			<-d
		}
	}, nil
}

// startGuard starts one guard and tells it the groups there are.
func startGuard(argv []string) (*exec.Cmd, *os.File, error) {
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
	// The write end is close-on-exec: only this process holds it.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdin = r
	guarded.mu.Lock()
	defer guarded.mu.Unlock()
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	for pgid := range guarded.groups {
		tell(w, '+', pgid)
	}
	guarded.w = w
	return cmd, w, nil
}

// RunGuard is the guard's work: it reads "+ID" (a new group) and "-ID"
// (a group to forget) lines from r until EOF, then kills the groups it
// was told of and not told to forget, and returns those it reached. It
// returns at once, killing nothing, unless parent is the calling
// process's parent (should the parent have died before the guard
// started, its groups may be someone else's by now).
func RunGuard(r io.Reader, parent int) (killed []int) {
	if os.Getppid() != parent {
		return nil
	}
	groups := map[int]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(string(line[1:]))
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for g := range groups {
		if syscall.Kill(-g, syscall.SIGKILL) == nil {
			killed = append(killed, g)
		}
	}
	return killed
}
