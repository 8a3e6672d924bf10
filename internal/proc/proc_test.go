//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	ossignal "os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// helperEnv, in the environment of the test binary, makes it the child of
// the stop tests (TestHelperProcess); its value is the event it exits on.
const helperEnv = "MCPFLOW_PROC_HELPER_EXIT"

// TestHelperProcess is the child of the stop tests when the test binary is
// started as one: once it writes "ready" on its stdout, it writes there
// each event it sees, "eof" when its stdin ends and "term" on each
// SIGTERM, and exits (status 0) after the event named by helperEnv.
func TestHelperProcess(t *testing.T) {
	exitOn, ok := os.LookupEnv(helperEnv)
	if !ok {
		t.Skip("run as a child by the stop tests")
	}
	events := make(chan string)
	sigs := make(chan os.Signal, 1)
	ossignal.Notify(sigs, syscall.SIGTERM)
	go func() {
		for range sigs {
			events <- "term"
		}
	}()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); events <- "eof" }()
	fmt.Println("ready")
	for ev := range events {
		fmt.Println(ev)
		if ev == exitOn {
			os.Exit(0)
		}
	}
}

// helper is the argv and environment of TestHelperProcess exiting on exitOn.
func helper(exitOn string) Spec {
	return Spec{
		Argv: []string{os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1"},
		Env:  append(os.Environ(), helperEnv+"="+exitOn, "GORACE=atexit_sleep_ms=0"),
	}
}

// recorder is a child's stdout: ready is closed at its first write.
type recorder struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
}

func newRecorder() *recorder { return &recorder{ready: make(chan struct{})} }

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buf.Len() == 0 {
		close(r.ready)
	}
	return r.buf.Write(p)
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Fields(r.buf.String())
}

// started starts c, waits it in the background, and waits for its first
// output.
func started(t *testing.T, c *Cmd) (*recorder, <-chan error) {
	t.Helper()
	out := newRecorder()
	c.Stdout = out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	<-out.ready
	return out, waited
}

// killedBy reports whether the process ended by sig.
func killedBy(ps *os.ProcessState, sig syscall.Signal) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// gone waits until no live process is left in the group pgid.
func gone(t *testing.T, pgid int) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "the end of group "+strconv.Itoa(pgid), func() bool { return !testkit.GroupAlive(pgid) })
}

// A canceled command's group is stopped whole: the leader and a
// grandchild that both ignore SIGTERM are killed, and Wait returns though
// the grandchild held the output pipe.
func TestCancelKillsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := Command(ctx, Spec{Argv: []string{`trap '' TERM; sleep 60 & echo $!; wait`}, Shell: true}, 100*time.Millisecond)
	out, waited := started(t, c)
	cancel()
	if err := <-waited; err == nil || !killedBy(c.ProcessState, syscall.SIGKILL) {
		t.Fatalf("Wait: %v (%v), want the leader killed by SIGKILL", err, c.ProcessState)
	}
	grandchild, err := strconv.Atoi(out.lines()[0])
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the grandchild's end", func() bool { return !testkit.Alive(grandchild) })
	gone(t, c.sys.pgid)
}

// A command that exited while a process it left in its group holds its
// output: Wait closes the pipes and returns exec.ErrWaitDelay, and the
// process is killed.
func TestWaitClosesHeldPipes(t *testing.T) {
	c := Command(context.Background(), Spec{Argv: []string{`sleep 60 & echo $!`}, Shell: true}, 100*time.Millisecond)
	out := newRecorder()
	c.Stdout = out
	if err := c.Run(); !errors.Is(err, exec.ErrWaitDelay) || c.ProcessState.ExitCode() != 0 {
		t.Fatalf("Run: %v (%v), want exit status 0 and ErrWaitDelay", err, c.ProcessState)
	}
	grandchild, err := strconv.Atoi(out.lines()[0])
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the grandchild's end", func() bool { return !testkit.Alive(grandchild) })
	gone(t, c.sys.pgid)
}

// A command whose start fails is over at once.
func TestStartError(t *testing.T) {
	c := Command(context.Background(), Spec{Argv: []string{"/nonexistent/program"}}, time.Second)
	if err := c.Run(); err == nil {
		t.Fatal("Run of a missing program succeeded")
	}
	<-c.done
}

// stopCase is how a child meets a stop and what it sees of it.
var stopCases = []struct {
	name    string
	exitOn  string   // the helper's exit event
	noStdin bool     // Stop is given no stdin to close
	want    []string // the events the child sees, in order
	killed  bool     // it ends by SIGKILL
}{
	{"exits at eof", "eof", false, []string{"eof"}, false},
	{"exits at term", "term", false, []string{"eof", "term"}, false},
	{"exits never", "never", false, []string{"eof", "term"}, true},
	{"no stdin", "term", true, []string{"term"}, false},
}

// Stop ends a command in order: its stdin closed first, then SIGTERM to
// its group, then SIGKILL, each step only if the last one did not end it.
func TestCmdStop(t *testing.T) {
	const grace = time.Second
	for _, tc := range stopCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Command(context.Background(), helper(tc.exitOn), grace)
			stdin, err := c.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			out, waited := started(t, c)
			if tc.noStdin {
				c.Stop(nil, grace)
			} else {
				c.Stop(stdin, grace)
			}
			checkStop(t, <-waited, c.ProcessState, out, tc.want, tc.killed)
		})
	}
}

// With a grace shorter than WaitDelay, Stop kills the group grace after
// SIGTERM.
func TestCmdStopShorterGrace(t *testing.T) {
	c := Command(context.Background(), helper("never"), time.Hour)
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, waited := started(t, c)
	c.Stop(stdin, 500*time.Millisecond)
	checkStop(t, <-waited, c.ProcessState, out, []string{"eof", "term"}, true)
}

func checkStop(t *testing.T, err error, ps *os.ProcessState, out *recorder, want []string, killed bool) {
	t.Helper()
	if got := out.lines(); strings.Join(got, " ") != "ready "+strings.Join(want, " ") {
		t.Errorf("the child saw %q, want ready then %q", got, want)
	}
	switch {
	case killed && !killedBy(ps, syscall.SIGKILL):
		t.Errorf("it ended by %v (%v), want SIGKILL", ps, err)
	case !killed && (ps.ExitCode() != 0 || err != nil && !errors.Is(err, context.Canceled)):
		t.Errorf("it ended by %v (%v), want exit status 0", ps, err)
	}
}

// Stop kills what the leader left in its group.
func TestCmdStopKillsGrandchildren(t *testing.T) {
	c := Command(context.Background(), Spec{Argv: []string{"sleep 60 & sleep 60 & echo started; wait"}, Shell: true}, 200*time.Millisecond)
	_, waited := started(t, c)
	c.Stop(nil, 200*time.Millisecond)
	<-waited
	gone(t, c.sys.pgid)
}

// Kill reaches what the leader left in its group after it exited.
func TestKillAfterLeaderExitReachesOrphans(t *testing.T) {
	c := Command(context.Background(), Spec{Argv: []string{"sleep 60 & exit 0"}, Shell: true}, time.Second)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.sys.release()                // the group, as Wait releases it
	if err := c.Cmd.Wait(); err != nil { // the leader only: the group stays
		t.Fatal(err)
	}
	if !testkit.GroupAlive(c.sys.pgid) {
		t.Fatal("the orphaned sleep should still be in the group")
	}
	c.Kill()
	gone(t, c.sys.pgid)
}

func TestShellPositionalArgs(t *testing.T) {
	out, err := shell(context.Background(), `printf '%s|%s' "$1" "$2"`, "a b", "$(x)").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "a b|$(x)" {
		t.Fatalf("got %q", out)
	}
}

// After Wait the group's id may be reused by an unrelated group: Kill
// and terminate must not signal it. The reuse is simulated by
// pointing the waited command at a live group, a cat's, which SIGTERM or
// SIGKILL would end at once: it must exit by itself once its stdin ends.
func TestSignalsAfterReleaseAreNoOps(t *testing.T) {
	c := Command(context.Background(), Spec{Argv: []string{"true"}}, time.Second)
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	cat := Command(context.Background(), Spec{Argv: []string{"cat"}}, time.Second)
	stdin, err := cat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	defer cat.Kill()
	c.sys.pgid = cat.sys.pgid
	c.signal(groupSys.terminate)
	c.Kill()
	stdin.Close()
	if err := cat.Wait(); err != nil {
		t.Fatalf("a released group's Kill or terminate reached another group: cat ended by %v", err)
	}
}
