//go:build unix

package proc

import (
	"os/exec"
	"testing"
	"time"
)

// startTree starts a shell that leaves a grandchild behind and ignores
// stdin, so only signals stop it.
func startTree(t *testing.T, script string) (*Group, chan struct{}) {
	t.Helper()
	cmd := shell(script)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { g.Release() })
	_ = stdin
	return g, done
}

func TestStopKillsGrandchildren(t *testing.T) {
	g, done := startTree(t, "sleep 60 & sleep 60 & wait")
	time.Sleep(100 * time.Millisecond)
	if !GroupAlive(g.Pid()) {
		t.Fatal("group not alive after start")
	}
	g.Stop(nil, done, 200*time.Millisecond)
	waitGone(t, g)
}

func TestStopEscalatesToKill(t *testing.T) {
	g, done := startTree(t, `trap "" TERM; sleep 60 & wait; sleep 60`)
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	g.Stop(nil, done, 100*time.Millisecond)
	if time.Since(start) < 100*time.Millisecond {
		t.Fatal("Stop returned before the grace period of a shell that ignores SIGTERM")
	}
	waitGone(t, g)
}

func TestStopClosesStdinFirst(t *testing.T) {
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	g.Stop(stdin, done, 5*time.Second)
	if waitErr != nil {
		t.Fatalf("cat should exit cleanly on EOF, got %v", waitErr)
	}
	g.Release()
}

func TestKillAfterLeaderExitReachesOrphans(t *testing.T) {
	cmd := shell("sleep 60 & exit 0")
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if !GroupAlive(g.Pid()) {
		t.Fatal("the orphaned sleep should still be in the group")
	}
	g.Release()
	waitGone(t, g)
}

func TestShellPositionalArgs(t *testing.T) {
	out, err := shell(`printf '%s|%s' "$1" "$2"`, "a b", "$(x)").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "a b|$(x)" {
		t.Fatalf("got %q", out)
	}
}

func waitGone(t *testing.T, g *Group) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for GroupAlive(g.Pid()) {
		if time.Now().After(deadline) {
			t.Fatal("a process of the group survived")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// After Release the group's id may be reused by an unrelated group: Kill
// and terminate must not signal it. The reuse is simulated by pointing the
// released group at a live one.
func TestSignalsAfterReleaseAreNoOps(t *testing.T) {
	cmd := exec.Command("true")
	g, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	g.Release()
	other, done := startTree(t, "sleep 60 & wait")
	time.Sleep(100 * time.Millisecond)
	g.cmd.Process.Pid = other.Pid()
	g.terminate()
	g.Kill()
	g.Release()
	select {
	case <-done:
		t.Fatal("a released group's Kill or terminate reached another group")
	case <-time.After(300 * time.Millisecond):
	}
	if !GroupAlive(other.Pid()) {
		t.Fatal("the other group died")
	}
}
