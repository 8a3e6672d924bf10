//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"time"
)

var bigSizes = []int{16, 64} // MiB of text

// bigSet is one server run the three ways.
type bigSet struct {
	label  string
	server []string // argv of the server
	rounds int
	ps     []*peer      // direct, floor, mcpflow
	s      [2][3]sample // size × way
	wire   [2]int       // line length per size
	hwm    [3]float64   // VmHWM per way's process after the calls
	rss    float64      // mcpflow's VmRSS right after the calls
	at     time.Time    // when rss was read
}

// large times 16 MiB and 64 MiB tool results the three ways, twice over:
// from the canned server (the fixture's exact bytes at no cost per call,
// so the relays' own cost is what varies) and from the fixture's big tool
// itself (end to end, dominated by the Go SDK's encoding time). It then
// reads the peak RSS of each mcpflow.
func large(b *bench) (res *result, err error) {
	res = &result{}
	dir, err := b.dir("large")
	if err != nil {
		return res, err
	}
	// The 64 MiB text is ~90 MiB of JSON on the wire (the fixture's
	// pattern has characters JSON escapes), above the default limit.
	sets := []*bigSet{
		{label: "canned", server: []string{b.self, "-canned"}, rounds: b.opt.bigRounds},
		{label: "fixture", server: []string{b.fixture}, rounds: fixtureRounds(b.opt.bigRounds)},
	}
	var all []*peer
	defer func() { closeAll(res, all...) }()
	for _, st := range sets {
		cfg := filepath.Join(dir, st.label+".toml")
		argv := ""
		for i, a := range st.server {
			if i > 0 {
				argv += ", "
			}
			argv += tomlStr(a)
		}
		if err := writeFile(cfg, fmt.Sprintf("[run]\ncommand = [%s]\n\n[relay]\nmax_message = \"128MiB\"\n\n[watch]\nenabled = false\n", argv)); err != nil {
			return res, err
		}
		for _, w := range []struct {
			name string
			argv []string
		}{
			{st.label + " direct", st.server},
			{st.label + " via floor", append([]string{b.self, "-floor", "--"}, st.server...)},
			{st.label + " via mcpflow", []string{b.mcpflow, "watch", "-c", cfg}},
		} {
			p, err := b.start(w.name, dir, w.argv...)
			if err != nil {
				return res, err
			}
			st.ps = append(st.ps, p)
			all = append(all, p)
		}
		for _, p := range st.ps {
			if _, err := p.handshake(30 * time.Second); err != nil {
				return res, err
			}
		}
		// Warm up every way with the largest call: servers, relays and the
		// client's line buffers fault their memory in once, not in round 1.
		for _, p := range st.ps {
			if _, err := p.call("tools/call", `{"name":"big","arguments":{"mib":64}}`, 5*time.Minute); err != nil {
				return res, err
			}
		}
	}

	for _, st := range sets {
		for r := range st.rounds {
			for si, mib := range bigSizes {
				params := fmt.Sprintf(`{"name":"big","arguments":{"mib":%d}}`, mib)
				for k := range 3 {
					j := (r + si + k) % 3
					t0 := time.Now()
					rep, err := st.ps[j].call("tools/call", params, 5*time.Minute)
					if err != nil {
						return res, err
					}
					st.s[si][j].addDur(rep.at.Sub(t0))
					switch {
					case st.wire[si] == 0:
						st.wire[si] = rep.size
					case st.wire[si] != rep.size:
						return res, st.ps[j].fail("big %d MiB: %d bytes, the other ways gave %d", mib, rep.size, st.wire[si])
					}
				}
			}
		}
		for j, p := range st.ps {
			if st.hwm[j], err = procKB(p.pid, "VmHWM"); err != nil {
				return res, p.fail("read VmHWM: %v", err)
			}
		}
		if st.rss, err = procKB(st.ps[2].pid, "VmRSS"); err != nil {
			return res, st.ps[2].fail("read VmRSS: %v", err)
		}
		st.at = time.Now()
	}
	// mcpflow keeps a long line's chunks for the next one, and lets them
	// go after 5 s without a long line (relay/pool.go).
	const settle = 6 * time.Second
	canned := sets[0]
	time.Sleep(time.Until(canned.at.Add(settle)))
	rssIdle, err := procKB(canned.ps[2].pid, "VmRSS")
	if err != nil {
		return res, canned.ps[2].fail("read VmRSS: %v", err)
	}
	if sets[0].wire != sets[1].wire {
		res.note("the canned server's lines (%v bytes) differ in length from the fixture's (%v)", sets[0].wire, sets[1].wire)
	}

	for _, st := range sets {
		for si, mib := range bigSizes {
			direct, floor, mcp := &st.s[si][0], &st.s[si][1], &st.s[si][2]
			tag := fmt.Sprintf("%s %d MiB", st.label, mib)
			res.add(stat(tag+": direct", uDur, direct))
			res.add(stat(tag+": floor", uDur, floor))
			res.add(stat(tag+": mcpflow", uDur, mcp).withRatio(ratio(mcp.median(), floor.median()) + " of floor"))
			fa := [3]float64{floor.median() - direct.median(), floor.p99() - direct.p99(), floor.min() - direct.min()}
			ma := [3]float64{mcp.median() - direct.median(), mcp.p99() - direct.p99(), mcp.min() - direct.min()}
			res.add(row{name: tag + ": added by floor", n: fmt.Sprint(floor.n()), med: fmtDur(fa[0]), p99: fmtDur(fa[1]), min: fmtDur(fa[2])})
			added := row{name: tag + ": added by mcpflow", n: fmt.Sprint(mcp.n()), med: fmtDur(ma[0]), p99: fmtDur(ma[1]), min: fmtDur(ma[2]),
				ratio: addedRatio(ma[0], fa[0])}
			if st.label == "canned" {
				added = added.judge("≤1.5× floor's (median)", addedOK(ma[0], fa[0], 1.5))
			} else {
				added.goal = "(judged on canned)"
			}
			res.add(added)
		}
	}
	largest := float64(sets[0].wire[1])
	limit := 2*largest + 15e6
	for _, st := range sets {
		res.add(single(st.label+": mcpflow peak RSS (VmHWM)", uBytes, st.hwm[2]).
			withRatio(fmt.Sprintf("%.2f× msg", st.hwm[2]/largest)).
			judge(fmt.Sprintf("≤ 2×msg + 15 MB = %s", fmtBytes(limit)), st.hwm[2] <= limit))
		res.add(single(st.label+": floor peak RSS (VmHWM)", uBytes, st.hwm[1]).withRatio(fmt.Sprintf("%.2f× msg", st.hwm[1]/largest)))
	}
	res.add(single("canned: mcpflow RSS (VmRSS) right after the last call", uBytes, canned.rss))
	res.add(single(fmt.Sprintf("canned: mcpflow RSS (VmRSS) %s after the last call", settle), uBytes, rssIdle).
		withRatio(fmt.Sprintf("%.2f× msg", rssIdle/largest)))
	res.note("wire size: 16 MiB of text → %s line, 64 MiB → %s line (JSON escapes \\ \" < > & in the fixture's pattern); \"msg\" is the largest line",
		fmtBytes(float64(sets[0].wire[0])), fmtBytes(largest))
	res.note("canned = bench -canned, a raw stdio server that writes the fixture's exact result bytes, built once per size, so the server's cost per call is ~0 and the relays' cost shows; fixture = the relay fixture's big tool (Go SDK), whose encoding time (seconds, ±10%%) dominates")
	res.note("time = request written → last byte of the response read by the client; one 64 MiB warm-up call per way; %d canned rounds, %d fixture rounds; mcpflow runs with max_message = \"128MiB\", watch off",
		sets[0].rounds, sets[1].rounds)
	return res, nil
}

// fixtureRounds: the fixture's big tool costs seconds per call, so it
// gets a third of the canned server's rounds.
func fixtureRounds(canned int) int { return max(1, (canned+2)/3) }
