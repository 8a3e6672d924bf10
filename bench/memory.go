//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// procSnap is what /proc tells about a process at one moment.
type procSnap struct {
	rss, hwm, fds, threads float64
	children               int           // but the guard
	guard, guardPriv       float64       // the guard's VmRSS and private memory, 0 without one
	guardCPU               time.Duration // the guard's CPU time so far
}

func snap(pid int) (procSnap, error) {
	var s procSnap
	var err error
	if s.rss, err = procKB(pid, "VmRSS"); err != nil {
		return s, err
	}
	if s.hwm, err = procKB(pid, "VmHWM"); err != nil {
		return s, err
	}
	if s.fds, err = procFDs(pid); err != nil {
		return s, err
	}
	if s.threads, err = procThreads(pid); err != nil {
		return s, err
	}
	s.children = len(servers(pid))
	if g := guardOf(pid); g != 0 {
		s.guard, s.guardPriv = guardMem(pid)
		s.guardCPU, _ = procCPU(g)
	}
	return s, nil
}

// memory measures mcpflow's idle RSS, then its fds and threads before and
// after many restarts. The floor and the fixture alone, started the same
// way, give reference RSS values.
func memory(b *bench) (res *result, err error) {
	res = &result{}
	base, err := b.dir("memory")
	if err != nil {
		return res, err
	}
	proj := filepath.Join(base, "proj")
	cfg := filepath.Join(proj, "mcpflow.toml")
	if err := writeFile(filepath.Join(proj, "main.go"), "package main\n\nfunc main() {}\n"); err != nil {
		return res, err
	}
	if err := writeFile(cfg, fmt.Sprintf("[run]\ncommand = [%s, \"-variant-file\", \"variant\"]\n\n[watch]\ninclude = [\"**/*.go\"]\n", tomlStr(b.fixture))); err != nil {
		return res, err
	}
	mcp, err := b.start("mcpflow", proj, b.mcpflow, "watch", "-c", cfg)
	if err != nil {
		return res, err
	}
	floor, err := b.start("floor", proj, b.self, "-floor", "--", b.fixture)
	if err != nil {
		return res, err
	}
	defer func() { closeAll(res, mcp, floor) }()
	for _, p := range []*peer{mcp, floor} {
		if _, err := p.handshake(30 * time.Second); err != nil {
			return res, err
		}
		if _, err := p.call("tools/list", "{}", 30*time.Second); err != nil {
			return res, err
		}
		if _, err := p.call("tools/call", echoParams, 30*time.Second); err != nil {
			return res, err
		}
	}
	time.Sleep(time.Second) // idle
	before, err := snap(mcp.pid)
	if err != nil {
		return res, mcp.fail("read /proc: %v", err)
	}
	fdsBefore := procFDList(mcp.pid)
	idleWindow := 5 * time.Second
	if b.opt.quick {
		idleWindow = time.Second
	}
	cpu0, _ := procCPU(mcp.pid)
	time.Sleep(idleWindow)
	cpu1, _ := procCPU(mcp.pid)
	idle, err := snap(mcp.pid)
	if err != nil {
		return res, mcp.fail("read /proc: %v", err)
	}
	floorSnap, err := snap(floor.pid)
	if err != nil {
		return res, floor.fail("read /proc: %v", err)
	}
	fixtureRSS := -1.0
	if kids := procChildren(floor.pid); len(kids) == 1 {
		fixtureRSS, _ = procKB(kids[0], "VmRSS")
	}

	tenth := max(1, b.opt.leakRestarts/10)
	mid, after, restarts, err := restartMany(b, mcp, proj, tenth)
	if err != nil {
		return res, err
	}

	res.add(single("mcpflow idle RSS after start (VmRSS)", uBytes, before.rss).
		withRatio(ratio(before.rss, floorSnap.rss)+" of floor").
		judge("≤ 15 MB", before.rss <= 15e6))
	if before.guard > 0 {
		res.add(row{name: "its guard (mcpflow __guard): VmRSS / private memory", n: "1",
			med:   fmtBytes(before.guard) + " / " + fmtBytes(before.guardPriv),
			ratio: "mcpflow + guard's private = " + fmtBytes(before.rss+before.guardPriv)})
	}
	res.add(row{name: fmt.Sprintf("idle CPU over %s: mcpflow / its guard", idleWindow), n: "1",
		med:   fmtDur(float64(cpu1-cpu0)) + " / " + fmtDur(float64(idle.guardCPU-before.guardCPU)),
		ratio: fmt.Sprintf("%.2f%% / %.2f%% of a core", 100*float64(cpu1-cpu0)/float64(idleWindow), 100*float64(idle.guardCPU-before.guardCPU)/float64(idleWindow))})
	res.add(single("floor idle RSS (VmRSS)", uBytes, floorSnap.rss))
	if fixtureRSS > 0 {
		res.add(single("fixture idle RSS (VmRSS), for scale", uBytes, fixtureRSS))
	}
	n := b.opt.leakRestarts
	res.add(row{name: fmt.Sprintf("mcpflow open fds: before → %d → %d restarts", tenth, n), n: "1",
		med: fmt.Sprintf("%.0f → %.0f → %.0f", before.fds, mid.fds, after.fds)}.
		judge("flat", after.fds <= before.fds))
	if after.fds > before.fds {
		fdsAfter := procFDList(mcp.pid)
		var extra []string
		for fd, t := range fdsAfter {
			if fdsBefore[fd] != t {
				extra = append(extra, fd+" → "+t)
			}
		}
		sort.Strings(extra)
		res.note("fds open after the restarts that were not before: %s", strings.Join(extra, ", "))
	}
	res.add(row{name: fmt.Sprintf("mcpflow threads (goroutine proxy): before → %d → %d restarts", tenth, n), n: "1",
		med: fmt.Sprintf("%.0f → %.0f → %.0f", before.threads, mid.threads, after.threads)})
	res.add(row{name: fmt.Sprintf("mcpflow RSS: before → %d → %d restarts", tenth, n), n: "1",
		med: fmt.Sprintf("%s → %s → %s", fmtBytes(before.rss), fmtBytes(mid.rss), fmtBytes(after.rss))})
	res.add(row{name: fmt.Sprintf("mcpflow's servers (children but the guard): before → %d → %d restarts", tenth, n), n: "1",
		med: fmt.Sprintf("%d → %d → %d", before.children, mid.children, after.children)}.
		judge("always 1", before.children == 1 && mid.children == 1 && after.children == 1))
	if before.guard > 0 {
		res.note("the guard (mcpflow __guard, started once per run) is not counted among the servers; it is mcpflow's own binary, so most of its RSS is pages it shares with mcpflow, and what the pair adds up to is mcpflow's RSS plus the guard's private memory (smaps_rollup Private_Clean + Private_Dirty)")
	}
	res.add(single("mcpflow peak RSS over the run (VmHWM)", uBytes, after.hwm))
	res.note("%d restarts took %.1fs (%s each)", n, restarts.Seconds(), fmtDur(float64(restarts)/float64(max(n, 1))))
	res.note("goroutines cannot be seen from outside the process: the thread count (/proc/PID/status Threads) is only a proxy; Go parks goroutines without threads, so a goroutine leak shows in RSS before it shows here")
	res.note("mcpflow watches a one-file project (include **/*.go) and has served initialize, tools/list and one echo call before the idle sample, taken after 1s idle")
	return res, nil
}

// restartMany restarts mcpflow's server b.opt.leakRestarts times through
// recompile, taking a snapshot after the first tenth and one after the
// last (a call made and a second idle first), and says how long the
// restarts took.
func restartMany(b *bench, mcp *peer, proj string, tenth int) (mid, after procSnap, took time.Duration, err error) {
	t0 := time.Now()
	for i := range b.opt.leakRestarts {
		if _, _, _, err := recompile(mcp, proj); err != nil {
			return mid, after, 0, err
		}
		if i+1 == tenth {
			if mid, err = snap(mcp.pid); err != nil {
				return mid, after, 0, mcp.fail("read /proc: %v", err)
			}
		}
	}
	took = time.Since(t0)
	// Calls still work, then let it settle.
	if _, err := mcp.call("tools/call", echoParams, 30*time.Second); err != nil {
		return mid, after, 0, err
	}
	time.Sleep(time.Second)
	after, err = snap(mcp.pid)
	if err != nil {
		return mid, after, 0, mcp.fail("read /proc: %v", err)
	}
	return mid, after, took, nil
}
