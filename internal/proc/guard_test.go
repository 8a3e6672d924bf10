//go:build unix

package proc

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The guard tests run the test binary itself as the guard
// (TestGuardProcess), with this test process in mcpflow's place: they end
// it the way a clean exit does (closing the pipe). What a SIGKILL of
// mcpflow does is tested end to end in cmd/mcpflow (guard_e2e_test.go).

// TestGuardProcess is the guard when the test binary is started as one
// (startTestGuard): the arguments after "--" are a file to create once it
// runs (holding its pid), then mcpflow's pid. Otherwise it does nothing.
func TestGuardProcess(t *testing.T) {
	if flag.NArg() != 2 {
		t.Skip("run as the guard by the other tests")
	}
	pid, err := strconv.Atoi(flag.Arg(1))
	if err != nil || os.WriteFile(flag.Arg(0), []byte(strconv.Itoa(os.Getpid())), 0o644) != nil {
		os.Exit(2)
	}
	RunGuard(os.Stdin, pid)
	os.Exit(0)
}

// startTestGuard starts the test binary as this process's guard, waits
// for it to run, and returns its stop function, its pid, and what
// StartGuard reports should a guard die.
func startTestGuard(t *testing.T) (stop func(), pid int, died chan error) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	died = make(chan error, 4)
	stop, err := StartGuard([]string{os.Args[0], "-test.run=^TestGuardProcess$", "-test.count=1", "--", ready}, func(err error) { died <- err })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop, guardPid(t, ready, 0), died
}

// guardPid waits for a guard other than not to write its pid to ready.
func guardPid(t *testing.T, ready string, not int) (pid int) {
	t.Helper()
	eventually(t, "the guard did not start", func() bool {
		b, _ := os.ReadFile(ready)
		pid, _ = strconv.Atoi(string(b))
		return pid != 0 && pid != not
	})
	return pid
}

// startTestGroup starts script as a group of its own and returns its leader's
// pid and the group's id; the leader is waited in the background, the
// group not released.
func startTestGroup(t *testing.T, script string) (leader, id int) {
	t.Helper()
	c := Command(context.Background(), Spec{Argv: []string{script}, Shell: true}, time.Second)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Cmd.Wait() }() // the leader only: the group stays
	t.Cleanup(c.Kill)
	return c.Process.Pid, c.sys.pgid
}

// eventually waits up to 5 s for ok.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGuardKillsGroups: once its pipe closes, the guard kills the groups
// its parent started, one started before the guard and one after, a group
// whose leader runs and one whose leader exited and left a process
// behind, and only those: not a child in its parent's own group, nor a
// group led by a grandchild. Then it exits.
func TestGuardKillsGroups(t *testing.T) {
	_, running := startTestGroup(t, "sleep 60 & wait")
	stop, guard, _ := startTestGuard(t)
	leader, orphaned := startTestGroup(t, "sleep 60 & exec sleep 0.3")
	// A child in this process's group, and a grandchild leading a group
	// (and session) of its own: neither is the guard's to kill. Each ends
	// by itself once its stdin ends, the grandchild saying so: a signal
	// would have ended it at once.
	plain := exec.Command("cat")
	plainIn, err := plain.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Process.Kill(); _ = plain.Wait() })
	otherIn, otherOut := startOther(t)
	// The second group's leader leaves its sleep behind.
	eventually(t, "the second group's leader did not exit", func() bool {
		return syscall.Kill(leader, 0) != nil
	})
	if !testkit.GroupAlive(running) || !testkit.GroupAlive(orphaned) {
		t.Fatal("a group died before the guard acted")
	}
	stop()
	for _, g := range []int{running, orphaned} {
		eventually(t, "the guard left group "+strconv.Itoa(g), func() bool { return !testkit.GroupAlive(g) })
	}
	if syscall.Kill(guard, 0) == nil {
		t.Fatal("the guard is still there after stop")
	}
	plainIn.Close()
	if err := plain.Wait(); err != nil {
		t.Errorf("the guard killed a child in its parent's own group: %v", err)
	}
	otherIn.Close()
	if line, err := otherOut.ReadString('\n'); line != "eof\n" {
		t.Errorf("the guard killed a group its parent's child did not lead: %q %v", line, err)
	}
}

// startOther starts a grandchild of this process that leads a session and
// group of its own and says "eof" once its stdin ends; it returns the
// grandchild's stdin and stdout.
func startOther(t *testing.T) (io.Closer, *bufio.Reader) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outR.Close() })
	sh := exec.Command("sh", "-c", "setsid sh -c 'cat; echo eof' & echo $!")
	sh.Stdin, sh.Stdout = inR, outW
	err = sh.Run()
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outR)
	line, _ := out.ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("%q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return inW, out
}

// TestGuardDied: a guard that dies is reported, and another takes over,
// told of the groups there are: it kills them at the end.
func TestGuardDied(t *testing.T) {
	stop, guard, died := startTestGuard(t)
	_, g := startTestGroup(t, "sleep 60")
	if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-died:
		if !strings.Contains(err.Error(), "took over") {
			t.Fatalf("died: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the guard's death was not reported")
	}
	if !testkit.GroupAlive(g) {
		t.Fatal("the group died with the guard")
	}
	stop()
	eventually(t, "the new guard left the group", func() bool { return !testkit.GroupAlive(g) })
}

// TestGuardNotOurParent: a guard whose given parent is not its parent
// (that parent died before the guard started, say) kills nothing.
func TestGuardNotOurParent(t *testing.T) {
	_, g := startTestGroup(t, "sleep 60")
	done := make(chan []int)
	go func() { done <- RunGuard(strings.NewReader(fmt.Sprintf("+%d\n", g)), os.Getpid()) }()
	select {
	case killed := <-done:
		if len(killed) > 0 || !testkit.GroupAlive(g) {
			t.Fatalf("killed %v", killed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RunGuard did not return")
	}
}
