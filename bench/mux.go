//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// modernMeta is the session _meta of a 2026-07-28 request: the mux's
// pass-through applies when the client and the child speak the same era,
// and the fixture (a Go SDK server) speaks 2026-07-28 to the mux.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcpflow-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// muxOverhead times a small tools/call (echo) four ways, every request in
// the 2026-07-28 era: straight to the fixture, through the floor relay,
// through mcpflow's mux serving the fixture as server fx (fx__echo), and,
// for scale, through mcpflow watch (the relay alone, which the mux puts
// behind its front).
// Issue 11's goal: the mux's added latency ≤ 2× the floor's at p50.
func muxOverhead(b *bench) (*result, error) {
	res := &result{}
	dir, err := b.dir("mux")
	if err != nil {
		return res, err
	}
	cfg := fmt.Sprintf("[servers.fx.run]\ncommand = [%q]\n[servers.fx.watch]\nenabled = false\n[log]\nlevel = \"warn\"\n", b.fixture)
	if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(cfg), 0o644); err != nil {
		return res, err
	}
	ways := []struct {
		name, params string
		argv         []string
	}{
		{"direct", `{"name":"echo","arguments":{"text":"hello"},` + modernMeta + `}`, []string{b.fixture}},
		{"floor", `{"name":"echo","arguments":{"text":"hello"},` + modernMeta + `}`, []string{b.self, "-floor", "--", b.fixture}},
		{"mux", `{"name":"fx__echo","arguments":{"text":"hello"},` + modernMeta + `}`, []string{b.mcpflow, "mux", "-c", filepath.Join(dir, "mcpflow.toml")}},
		{"watch", `{"name":"echo","arguments":{"text":"hello"},` + modernMeta + `}`, []string{b.mcpflow, "watch", "--", b.fixture}},
	}
	var ps []*peer
	defer func() { closeAll(res, ps...) }()
	for _, w := range ways {
		p, err := b.start(w.name, dir, w.argv...)
		if err != nil {
			return res, err
		}
		ps = append(ps, p)
	}
	call := func(j int) (time.Duration, error) {
		t0 := time.Now()
		rep, err := ps[j].call("tools/call", ways[j].params, 30*time.Second)
		if err != nil {
			return 0, err
		}
		if txt, isErr, err := toolText(rep.result); err != nil || isErr || txt != "hello" {
			return 0, ps[j].fail("echo returned %q (isError %v, %v)", txt, isErr, err)
		}
		return rep.at.Sub(t0), nil
	}
	warm := min(300, b.opt.rounds/5+20)
	for range warm {
		for j := range ps {
			if _, err := call(j); err != nil {
				return res, err
			}
		}
	}
	const nways = 4
	var s [nways]sample
	var pairF, pairM sample
	var cpu [nways]time.Duration
	for j, p := range ps {
		c, _ := procCPU(p.pid)
		cpu[j] = -c
	}
	for r := range b.opt.rounds {
		var d [nways]time.Duration
		for k := range nways {
			j := (r + k) % nways
			if d[j], err = call(j); err != nil {
				return res, err
			}
			s[j].addDur(d[j])
		}
		pairF.addDur(d[1] - d[0])
		pairM.addDur(d[2] - d[0])
	}
	for j, p := range ps {
		c, err := procCPU(p.pid)
		if err != nil {
			return res, p.fail("read /proc: %v", err)
		}
		cpu[j] += c
	}
	direct, floor, mux, watch := &s[0], &s[1], &s[2], &s[3]
	res.add(stat("direct to the server (2026-07-28)", uDur, direct))
	res.add(stat("floor (2× io.Copy relay)", uDur, floor))
	res.add(stat("mcpflow watch (the relay alone, for scale)", uDur, watch))
	res.add(stat("mcpflow mux (fx__echo)", uDur, mux).withRatio(ratio(mux.median(), direct.median()) + " of direct"))
	fa := floor.median() - direct.median()
	ma := mux.median() - direct.median()
	wa := watch.median() - direct.median()
	res.add(row{name: "added by floor", n: fmt.Sprint(floor.n()), med: fmtDur(fa), p99: fmtDur(floor.p99() - direct.p99())})
	res.add(row{name: "added by the relay alone", n: fmt.Sprint(watch.n()), med: fmtDur(wa), p99: fmtDur(watch.p99() - direct.p99()), ratio: "p50 " + addedRatio(wa, fa)})
	res.add(row{name: "added by the mux", n: fmt.Sprint(mux.n()), med: fmtDur(ma), p99: fmtDur(mux.p99() - direct.p99()),
		ratio: "p50 " + addedRatio(ma, fa)}.judge("p50 ≤2× floor's", addedOK(ma, fa, 2)))
	n := float64(b.opt.rounds)
	res.add(row{name: "CPU per call: floor / relay alone / mux process", n: fmt.Sprint(b.opt.rounds),
		med: fmtDur(float64(cpu[1])/n) + " / " + fmtDur(float64(cpu[3])/n) + " / " + fmtDur(float64(cpu[2])/n), ratio: ratio(float64(cpu[2]), float64(cpu[1])) + " of floor's"})
	res.note("paired per round (same round, adjacent calls): median added by floor %s, by the mux %s (%s)",
		fmtDur(pairF.median()), fmtDur(pairM.median()), ratio(pairM.median(), pairF.median()))
	res.note("every request carries the 2026-07-28 session _meta (no handshake), so the mux passes the call through to the fixture (same era on both sides); %d warm-up calls per way, then one call per way per round, order rotating", warm)
	return res, nil
}
