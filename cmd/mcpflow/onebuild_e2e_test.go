//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// buildHolder is the pid of the mcpflow that holds dir's build lock (0:
// none yet).
func buildHolder(dir string) int {
	locks, _ := filepath.Glob(filepath.Join(dir, ".mcpflow", "cache", "*.lock"))
	for _, l := range locks {
		b, _ := os.ReadFile(l)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
	}
	return 0
}

// Four instances started at once on one cold project build it once, and
// still once when the client closes two of them mid-build, the one that
// builds among them: it finishes the build for the others, then exits.
func TestFourInstancesBuildOnce(t *testing.T) {
	t.Parallel()
	dir := firstProject(t, 8, "") // past the 4 s an unknown client waits
	hs := make(chan *e2e, 4)
	for range 4 {
		go func() { hs <- startE2E(t, dir, "", "watch") }()
	}
	var all []*e2e
	for range 4 {
		all = append(all, <-hs)
	}
	testkit.Eventually(t, time.Minute, "the build started", func() bool { return countBuilds(t, dir) == 1 && buildHolder(dir) != 0 })
	if built(dir) {
		t.Fatal("the build ended before the clients left; the test proves nothing")
	}
	holder := buildHolder(dir)
	var closed, open []*e2e
	for _, h := range all {
		if h.cmd.Process.Pid == holder || len(closed) == 1 && len(open) == 2 {
			closed = append(closed, h)
		} else {
			open = append(open, h)
		}
	}
	if len(closed) != 2 || closed[0].cmd.Process.Pid != holder && closed[1].cmd.Process.Pid != holder {
		t.Fatalf("holder %d is none of the instances", holder)
	}
	for _, h := range closed {
		h.cs.Close() // stdin EOF
	}
	for _, h := range open {
		h.waitTools("echo")
		if text, _ := h.call("echo", map[string]any{"text": "hi"}); text != "srv:hi" {
			t.Errorf("echo: %q", text)
		}
	}
	if n := countBuilds(t, dir); n != 1 {
		t.Errorf("four instances, two closed mid-build, ran %d builds, want 1\nlog:\n%s", n, readLog(dir))
	}
	if want := fmt.Sprintf("waiting for the build of mcpflow pid %d", holder); !strings.Contains(readLog(dir), want) {
		t.Errorf("the log never says %q:\n%s", want, readLog(dir))
	}
	for _, h := range closed {
		select {
		case err := <-h.exited:
			h.exited <- err
		case <-time.After(time.Minute):
			t.Fatalf("a closed instance did not exit once the build ended\n%s", h.stderr.String())
		}
	}
}

// A closed instance finishes the build only while another waits for it:
// once the last waiter is closed too, it kills the build and exits, and
// no process of any instance is left.
func TestFinishedBuildStopsWhenEveryInstanceIsGone(t *testing.T) {
	t.Parallel()
	dir := firstProject(t, 60, "")
	hs := make(chan *e2e, 2)
	for range 2 {
		go func() { hs <- startE2E(t, dir, "", "watch") }()
	}
	a, b := <-hs, <-hs
	testkit.Eventually(t, time.Minute, "the build started", func() bool { return countBuilds(t, dir) == 1 && buildHolder(dir) != 0 })
	holder, waiter := a, b
	if b.cmd.Process.Pid == buildHolder(dir) {
		holder, waiter = b, a
	}
	waitLog(t, dir, "waiting for the build of mcpflow pid", 1)
	holder.cs.Close()
	waitLog(t, dir, "finishing it for them before exiting", 1)
	select {
	case err := <-holder.exited:
		t.Fatalf("the building instance exited (%v) while another waited for its build", err)
	default:
	}
	waiter.cs.Close()
	for _, h := range []*e2e{waiter, holder} {
		select {
		case err := <-h.exited:
			h.exited <- err
		case <-time.After(30 * time.Second): // the build would take 60 s
			t.Fatalf("an instance still runs 30 s after every client left\n%s", h.stderr.String())
		}
	}
	if built(dir) || countBuilds(t, dir) != 1 {
		t.Errorf("the build ran to its end (or again) with nobody waiting for it")
	}
	testkit.NoLeftovers(t, testkit.Procs{Tag: holder.tag})
	testkit.NoLeftovers(t, testkit.Procs{Tag: waiter.tag})
}

// A waiter never waits on a stopped build-lock holder longer than
// build.timeout: with the instance that builds stopped (SIGSTOP) midway,
// another's recompile says the build of that pid has not finished in
// build.timeout, builds itself and answers within build.timeout + 1 s
// (its own build is quick).
func TestStoppedBuildHolderHoldsNoWaiter(t *testing.T) {
	t.Parallel()
	dir := firstProject(t, 60, "")
	cfg := filepath.Join(dir, "mcpflow.toml")
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "[build]\n", "[build]\ntimeout = \"5s\"\n", 1)), 0o644)
	a := startE2E(t, dir, "", "watch")
	testkit.Eventually(t, time.Minute, "the build started", func() bool { return countBuilds(t, dir) == 1 && buildHolder(dir) == a.cmd.Process.Pid })
	time.Sleep(500 * time.Millisecond) // its sleep has read "delay"
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT) })
	os.WriteFile(filepath.Join(dir, "delay"), []byte("0"), 0o644)
	w := startE2E(t, dir, "", "watch")
	w.waitTools("echo") // its startup waited 5 s, then built
	start := time.Now()
	text, isErr := w.call("recompile", nil)
	t.Logf("recompile took %s", time.Since(start))
	if took := time.Since(start); isErr || took > 6*time.Second {
		t.Errorf("recompile answered after %s (want ≤ build.timeout + 1 s), error %v:\n%s", took.Round(time.Millisecond), isErr, text)
	}
	want := fmt.Sprintf("the build of mcpflow pid %d has not finished in 5s", a.cmd.Process.Pid)
	if n := strings.Count(readLog(dir), want); n < 2 {
		t.Errorf("the log says %q %d times, want 2 (startup, recompile):\n%s", want, n, readLog(dir))
	}
}
