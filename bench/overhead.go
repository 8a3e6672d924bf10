//go:build linux

package main

import (
	"fmt"
	"time"
)

const echoParams = `{"name":"echo","arguments":{"text":"hello"}}`

// overhead times a small tools/call (echo) three ways: straight to the
// fixture, through the floor relay, and through mcpflow (watch -- fixture,
// watching an empty directory).
func overhead(b *bench) (res *result, err error) {
	res = &result{}
	if err := overheadWith(b, res, "", b.fixture); err != nil {
		return res, err
	}
	err = overheadWith(b, res, "canned: ", b.self, "-canned")
	res.note("first block: the relay fixture (a Go SDK server); \"canned:\" rows: bench -canned, a raw stdio server whose echo costs ~0, so the relays' own cost is a larger share of the round trip")
	return res, err
}

// overheadWith measures one server three ways and adds its rows to res,
// each name prefixed by label.
func overheadWith(b *bench, res *result, label string, server ...string) (err error) {
	dir, err := b.dir("overhead")
	if err != nil {
		return err
	}
	var ps []*peer
	defer func() { closeAll(res, ps...) }()
	for _, w := range []struct {
		name string
		argv []string
	}{
		{"direct", server},
		{"floor", append([]string{b.self, "-floor", "--"}, server...)},
		{"mcpflow", append([]string{b.mcpflow, "watch", "--"}, server...)},
	} {
		p, err := b.start(w.name, dir, w.argv...)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if _, err := p.handshake(30 * time.Second); err != nil {
			return err
		}
	}
	// Warm up every way (page faults, goroutine stacks, buffers).
	warm := min(300, b.opt.rounds/5+20)
	for range warm {
		for _, p := range ps {
			if _, err := p.call("tools/call", echoParams, 10*time.Second); err != nil {
				return err
			}
		}
	}
	var s [3]sample
	var pairM, pairF sample // per-round differences against direct
	var cpu0 [3]time.Duration
	var sw0 [3]float64
	for j, p := range ps {
		cpu0[j], _ = procCPU(p.pid)
		sw0[j], _ = procSwitches(p.pid)
	}
	for r := range b.opt.rounds {
		var d [3]time.Duration
		for k := range 3 {
			j := (r + k) % 3
			t0 := time.Now()
			rep, err := ps[j].call("tools/call", echoParams, 10*time.Second)
			if err != nil {
				return err
			}
			d[j] = rep.at.Sub(t0)
			s[j].addDur(d[j])
		}
		pairF.addDur(d[1] - d[0])
		pairM.addDur(d[2] - d[0])
	}
	var cpu [3]time.Duration
	var sw [3]float64
	for j, p := range ps {
		c, err1 := procCPU(p.pid)
		x, err2 := procSwitches(p.pid)
		if err1 != nil || err2 != nil {
			return p.fail("read /proc: %v %v", err1, err2)
		}
		cpu[j], sw[j] = c-cpu0[j], x-sw0[j]
	}
	// The answers must be the same through every way.
	for _, p := range ps {
		rep, err := p.call("tools/call", echoParams, 10*time.Second)
		if err != nil {
			return err
		}
		if txt, isErr, err := toolText(rep.result); err != nil || isErr || txt != "hello" {
			return p.fail("echo returned %q (isError %v, %v)", txt, isErr, err)
		}
	}

	direct, floor, mcp := &s[0], &s[1], &s[2]
	res.add(stat(label+"direct to the server", uDur, direct))
	res.add(stat(label+"floor (2× io.Copy relay)", uDur, floor))
	res.add(stat(label+"mcpflow", uDur, mcp).withRatio(ratio(mcp.median(), floor.median()) + " of floor"))
	fa := [3]float64{floor.median() - direct.median(), floor.p99() - direct.p99(), floor.min() - direct.min()}
	ma := [3]float64{mcp.median() - direct.median(), mcp.p99() - direct.p99(), mcp.min() - direct.min()}
	res.add(row{name: label + "added by floor", n: fmt.Sprint(floor.n()), med: fmtDur(fa[0]), p99: fmtDur(fa[1]), min: fmtDur(fa[2])})
	ok50, ok99 := addedOK(ma[0], fa[0], 1.25), addedOK(ma[1], fa[1], 1.5)
	added := row{name: label + "added by mcpflow", n: fmt.Sprint(mcp.n()), med: fmtDur(ma[0]), p99: fmtDur(ma[1]), min: fmtDur(ma[2]),
		ratio: "p50 " + addedRatio(ma[0], fa[0]) + " · p99 " + addedRatio(ma[1], fa[1])}
	added = added.judge("p50 ≤1.25× · p99 ≤1.5× floor's", ok50 && ok99)
	if !ok50 || !ok99 {
		switch {
		case !ok50 && !ok99:
			added.verdict = "✗ miss (p50, p99)"
		case !ok50:
			added.verdict = "✗ miss (p50)"
		default:
			added.verdict = "✗ miss (p99)"
		}
	}
	res.add(added)
	n := float64(b.opt.rounds)
	res.add(row{name: label + "CPU per call: floor process / mcpflow process", n: fmt.Sprint(b.opt.rounds),
		med: fmtDur(float64(cpu[1])/n) + " / " + fmtDur(float64(cpu[2])/n), ratio: ratio(float64(cpu[2]), float64(cpu[1]))})
	res.add(row{name: label + "context switches per call: floor / mcpflow", n: fmt.Sprint(b.opt.rounds),
		med: fmt.Sprintf("%.1f / %.1f", sw[1]/n, sw[2]/n), ratio: ratio(sw[2], sw[1])})
	res.note(label+"paired per round (same round, adjacent calls): median added by floor %s, by mcpflow %s (%s)",
		fmtDur(pairF.median()), fmtDur(pairM.median()), ratio(pairM.median(), pairF.median()))
	if label != "" {
		return nil
	}
	res.note("added = quantile(way) − quantile(direct); ratio = mcpflow's added ÷ the floor's added at the same quantile")
	res.note("CPU (sum of /proc/PID/task/*/schedstat run time) and context switches (all threads) are the relay process's own, not its child's, over the measured rounds")
	res.note("raw JSON-RPC client (one line out, one line in) for all three ways; one call per way per round, order rotating; %d warm-up calls per way", warm)
	return nil
}

// addedOK: mcpflow's added cost m is within limit × the floor's added
// cost f. When the floor adds nothing measurable (f ≤ 0), only an mcpflow
// that adds nothing either passes.
func addedOK(m, f, limit float64) bool {
	switch {
	case m <= 0:
		return true
	case f <= 0:
		return false
	}
	return m/f <= limit
}

func addedRatio(m, f float64) string {
	switch {
	case m <= 0:
		return "≤ 0"
	case f <= 0:
		return "∞ (floor ≤ 0)"
	}
	return fmt.Sprintf("%.2f×", m/f)
}
