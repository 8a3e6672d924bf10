package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Alive reports whether pid is a live process. A zombie (exited, not yet
// reaped by whoever adopted it) is dead: on Linux its state in
// /proc/PID/stat is Z; elsewhere only kill(pid, 0) can tell, and it counts
// zombies as alive.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if st, ok := readStat(pid); ok {
		return st.state != 'Z' && st.state != 'X'
	}
	if procMounted() {
		return false // no /proc/PID: gone
	}
	return signalAlive(pid)
}

// GroupAlive reports whether a live process (zombies are dead) is in the
// process group pgid.
func GroupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	if procMounted() {
		for _, pid := range allPids() {
			if st, ok := readStat(pid); ok && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
				return true
			}
		}
		return false
	}
	return signalAlive(-pgid)
}

// Tag returns an environment entry (KEY=VALUE) that names this test: put
// it in the environment of a process the test starts (Command does), and
// Procs{Tag: tag} finds that process and every descendant that inherited
// it, whoever its parent is by then. When the test ends, what is left of
// them is killed (so that a failed test leaves no process behind; the
// check is NoLeftovers').
func Tag(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	tag := "MCPFLOW_TESTKIT_TAG=" + hex.EncodeToString(b)
	tb.Cleanup(func() { Procs{Tag: tag}.Kill() })
	return tag
}

// Command is exec.Command with the process in a process group of its
// own and tag (from Tag; "" for none) added to its environment, which is
// the test binary's plus env.
func Command(tag string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	setpgid(cmd)
	cmd.Env = append(os.Environ(), env...)
	if tag != "" {
		cmd.Env = append(cmd.Env, tag)
	}
	return cmd
}

// Procs names the processes a test is answerable for; each field adds
// processes to the set.
type Procs struct {
	Pids   []int  // these processes
	Groups []int  // every process in these process groups
	Dir    string // every process working in Dir or below it (Linux)
	Tag    string // every process with Tag (KEY=VALUE) in its environment (Linux)
	// Except are processes not to count (mcpflow itself, say, while it
	// still runs).
	Except []int
}

// Live describes the live processes of the set, one "pid N cmdline" each.
func (p Procs) Live() []string {
	var left []string
	seen := map[int]bool{}
	for _, pid := range p.Except {
		seen[pid] = true
	}
	add := func(pid int) {
		if !seen[pid] {
			seen[pid] = true
			left = append(left, describe(pid))
		}
	}
	for _, pid := range p.Pids {
		if Alive(pid) {
			add(pid)
		}
	}
	if !procMounted() {
		for _, g := range p.Groups {
			if GroupAlive(g) {
				left = append(left, fmt.Sprintf("process group %d", g))
			}
		}
		return left
	}
	dir := filepath.Clean(p.Dir)
	var tag []byte
	if p.Tag != "" {
		tag = []byte(p.Tag)
	}
	for _, pid := range allPids() {
		if seen[pid] {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.state == 'Z' || st.state == 'X' {
			continue
		}
		switch {
		case slices.Contains(p.Groups, st.pgrp):
			add(pid)
		case p.Dir != "" && inDir(pid, dir):
			add(pid)
		case tag != nil && hasEnv(pid, tag):
			add(pid)
		}
	}
	return left
}

// Kill sends SIGKILL to every live process of the set.
func (p Procs) Kill() {
	for _, l := range p.Live() {
		var pid int
		if _, err := fmt.Sscanf(l, "pid %d", &pid); err == nil && pid > 0 {
			kill(pid)
		}
	}
	for _, g := range p.Groups {
		if g > 0 {
			kill(-g)
		}
	}
}

// NoLeftovers fails the test unless, within ten seconds (a killed process
// takes a moment to be reaped), no process of p is alive.
func NoLeftovers(tb testing.TB, p Procs) {
	tb.Helper()
	if left := waitGone(p, 10*time.Second); len(left) > 0 {
		tb.Fatalf("processes survived: %s", strings.Join(left, "; "))
	}
}

// waitGone waits up to d for p to be empty and returns what is left.
func waitGone(p Procs, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		left := p.Live()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type stat struct {
	state byte
	ppid  int
	pgrp  int
}

// readStat reads /proc/PID/stat: "pid (comm) state ppid pgrp ...", where
// comm may hold spaces and parentheses.
func readStat(pid int) (stat, bool) {
	if !procMounted() {
		return stat{}, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return stat{}, false
	}
	var st stat
	st.state = f[0][0]
	fmt.Sscan(f[1], &st.ppid)
	fmt.Sscan(f[2], &st.pgrp)
	return st, true
}

// BytesRead is how many bytes process pid has read so far, through any
// read call (rchar in /proc/PID/io; pid 0 is the test binary itself): a
// count a test can order events by, such as "the scan had begun" or "it
// stopped before it had read the whole tree". ok is false where there is
// no /proc/PID/io (not Linux, or the process is gone).
func BytesRead(pid int) (n int64, ok bool) {
	if !procMounted() {
		return 0, false
	}
	path := "/proc/self/io"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/io", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(l, "rchar: "); found {
			_, err := fmt.Sscan(v, &n)
			return n, err == nil
		}
	}
	return 0, false
}

// procMounted: Wine shows the Linux /proc to Windows programs (as Z:\proc),
// whose pids are not theirs.
func procMounted() bool {
	if runtime.GOOS == "windows" {
		return false
	}
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

func allPids() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Children lists the live children of pid (Linux).
func Children(pid int) []int {
	var kids []int
	for _, p := range allPids() {
		if st, ok := readStat(p); ok && st.ppid == pid && st.state != 'Z' && st.state != 'X' {
			kids = append(kids, p)
		}
	}
	return kids
}

func inDir(pid int, dir string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)))
}

// hasEnv reports whether pid's environment holds entry (a zombie's
// environment reads empty).
func hasEnv(pid int, entry []byte) bool {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if kv == string(entry) {
			return true
		}
	}
	return false
}

func describe(pid int) string {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(fmt.Sprintf("pid %d %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
}
