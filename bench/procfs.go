//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStatus reads /proc/PID/status into key → first field.
func procStatus(pid int) (map[string]string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) > 0 {
			m[k] = fields[0]
		}
	}
	return m, sc.Err()
}

// procKB reads a "NNN kB" field of /proc/PID/status, in bytes.
func procKB(pid int, key string) (float64, error) {
	m, err := procStatus(pid)
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
	}
	kb, err := strconv.ParseFloat(v, 64)
	return kb * 1024, err
}

func procThreads(pid int) (float64, error) {
	m, err := procStatus(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(m["Threads"], 64)
}

func procFDs(pid int) (float64, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	return float64(len(ents)), nil
}

// procChildren lists the live children of pid: the processes whose
// parent it is (/proc/PID/task/*/children misses those whose forking
// thread has exited).
func procChildren(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if n, err := strconv.Atoi(filepath.Base(filepath.Dir(st))); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// guardOf is the pid of mcpflow's guard ("mcpflow __guard PID", a child
// that kills what mcpflow started should mcpflow die without stopping it),
// or 0.
func guardOf(pid int) int {
	for _, c := range procChildren(pid) {
		if strings.Contains(procCmdline(c), " __guard ") {
			return c
		}
	}
	return 0
}

// servers are pid's children but its guard.
func servers(pid int) []int {
	var out []int
	g := guardOf(pid)
	for _, c := range procChildren(pid) {
		if c != g {
			out = append(out, c)
		}
	}
	return out
}

// procFDList describes pid's open fds (number → target), for a report of
// fds that were not closed.
func procFDList(pid int) map[string]string {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	m := map[string]string{}
	for _, e := range ents {
		t, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		m[e.Name()] = t
	}
	return m
}

// procPrivate is the memory pid does not share with another process
// (Private_Clean + Private_Dirty of /proc/PID/smaps_rollup), in bytes.
func procPrivate(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	var kb float64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && (f[0] == "Private_Clean:" || f[0] == "Private_Dirty:") {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, err
			}
			kb += v
		}
	}
	return kb * 1024, nil
}

// guardMem is pid's guard's VmRSS and private memory (0, 0 without one).
// The guard is mcpflow's own binary: most of its RSS is the binary's pages
// it shares with mcpflow; the pair takes mcpflow's RSS plus the guard's
// private memory.
func guardMem(pid int) (rss, private float64) {
	if g := guardOf(pid); g != 0 {
		rss, _ = procKB(g, "VmRSS")
		private, _ = procPrivate(g)
	}
	return rss, private
}

func procCmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// setSubreaper makes orphaned descendants (a server that outlived
// mcpflow) become our children, so the final sweep can find and kill them.
func setSubreaper() error {
	const prSetChildSubreaper = 36
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// sweepOrphans kills and reaps every child of ours that no exec.Cmd owns
// any more (all of ours have been waited when it runs) and describes them.
func sweepOrphans() []string {
	var out []string
	for range 3 {
		kids := procChildren(os.Getpid())
		if len(kids) == 0 {
			break
		}
		for _, pid := range kids {
			st, _ := procStatus(pid)
			state := st["State"]
			if state != "Z" {
				out = append(out, fmt.Sprintf("pid %d (%s) was still running", pid, procCmdline(pid)))
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
	return out
}

// machine describes where the benchmark ran.
func machine() []string {
	var out []string
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	mem := "?"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
					mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	out = append(out, fmt.Sprintf("CPU: %d × %s", numCPU(), model))
	out = append(out, fmt.Sprintf("kernel: Linux %s, RAM %s", kernel, mem))
	return out
}

// procCPU is the CPU time of pid's threads (not its children): the sum
// of /proc/PID/task/*/schedstat run times, in nanoseconds.
func procCPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("/proc/%d/task: no schedstat (%v)", pid, err)
	}
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		ns += v
	}
	return time.Duration(ns), nil
}

// procSwitches is the number of context switches (voluntary and not) of
// all of pid's threads.
func procSwitches(pid int) (float64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("/proc/%d/task: %v", pid, err)
	}
	var n float64
	for _, t := range tasks {
		f, err := os.Open(t)
		if err != nil {
			continue // a thread that just exited
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				x, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				n += x
			}
		}
		f.Close()
	}
	return n, nil
}
