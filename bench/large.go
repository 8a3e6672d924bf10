//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

var bigSizes = []int{16, 64} // MiB of text

// The ways of the large-message section.
const (
	bigDirect = iota
	bigFloor
	bigWatch
	bigMux
	bigWays
)

var bigWayNames = [bigWays]string{"direct", "floor", "watch", "mux"}

// bigSet is one server run the four ways.
type bigSet struct {
	label  string
	server []string // argv of the server
	rounds int
	ps     [bigWays]*peer
	s      [2][bigWays]sample      // size × way
	wire   [2]int                  // line length per size (the direct way's)
	sizes  [2][bigWays]int         // line length per size and way
	base   [bigWays]float64        // VmRSS per way's process before its first large message
	first  [bigWays]float64        // VmHWM per way's process after its first (64 MiB) call
	hwm    [bigWays]float64        // VmHWM per way's process after the calls
	rss    [bigWays][]float64      // VmRSS of watch and the mux after each round
	idle   [bigWays]<-chan float64 // VmRSS of watch and the mux idleAfter after the rounds
	at     time.Time               // when the last round ended
}

// large times 16 MiB and 64 MiB tool results four ways (direct, the floor,
// mcpflow watch, mcpflow mux), twice over: from the canned server (the
// fixture's exact bytes at no cost per call, so the relays' own cost is
// what varies) and from the fixture's big tool itself (end to end,
// dominated by the Go SDK's encoding time). It then reads the peak RSS of
// each process and how much watch and the mux keep between and after
// large messages.
func large(b *bench) (res *result, err error) {
	res = &result{}
	dir, err := b.dir("large")
	if err != nil {
		return res, err
	}
	// The 64 MiB text is ~95 MB of JSON on the wire (the fixture's
	// pattern has characters JSON escapes), above the default limit.
	sets := []*bigSet{
		{label: "canned", server: []string{b.self, "-canned"}, rounds: b.opt.bigRounds},
		{label: "fixture", server: []string{b.fixture}, rounds: fixtureRounds(b.opt.bigRounds)},
	}
	var all []*peer
	defer func() { closeAll(res, all...) }()
	for _, st := range sets {
		if err := st.start(b, dir, &all); err != nil {
			return res, err
		}
	}

	for _, st := range sets {
		if err := st.run(); err != nil {
			return res, err
		}
	}
	// What watch and the mux keep once large messages stop: the canned
	// set's processes have been idle since its last round (the fixture's
	// rounds ran meanwhile): issue 41 judges idleAfter (read by run),
	// this is 2 min 30 s (40 s in a quick run).
	canned := sets[0]
	settles := []time.Duration{150 * time.Second}
	if b.opt.quick {
		settles[0] = 40 * time.Second
	}
	idle := make([][bigWays]float64, len(settles))
	idleFor := make([]time.Duration, len(settles))
	for i, d := range settles {
		time.Sleep(time.Until(canned.at.Add(d)))
		idleFor[i] = time.Since(canned.at).Round(time.Second)
		for _, j := range []int{bigWatch, bigMux} {
			if idle[i][j], err = procKB(canned.ps[j].pid, "VmRSS"); err != nil {
				return res, canned.ps[j].fail("read VmRSS: %v", err)
			}
		}
	}
	if sets[0].wire != sets[1].wire {
		res.note("the canned server's lines (%v bytes) differ in length from the fixture's (%v)", sets[0].wire, sets[1].wire)
	}

	for _, st := range sets {
		st.report(res)
	}
	largest := float64(sets[0].wire[1])
	res.add(row{name: fmt.Sprintf("64 MiB result (%s line) through watch and the mux, canned and fixture", fmtBytes(largest)), n: fmt.Sprint(2 * (sets[0].rounds + sets[1].rounds + 2)),
		med: "whole"}.judge("passes", true))
	limit := 2.5*largest + 15e6
	bound := fmt.Sprintf("≤ 2.5×msg + 15 MB = %s", fmtBytes(limit))
	for _, st := range sets {
		for j := bigFloor; j < bigWays; j++ {
			x := single(st.label+": "+bigWayNames[j]+" peak RSS (VmHWM) relaying its first 64 MiB result", uBytes, st.first[j]).
				withRatio(fmt.Sprintf("%.2f× msg", st.first[j]/largest))
			if j != bigFloor {
				x = x.judge(bound, st.first[j] <= limit)
			}
			res.add(x)
		}
		for _, j := range []int{bigWatch, bigMux} {
			if st == canned {
				memRows(res, st.label+": "+bigWayNames[j], st.rounds, st.base[j], st.hwm[j], <-st.idle[j], largest)
				continue
			}
			res.add(single(fmt.Sprintf("%s: %s peak RSS (VmHWM) after %d rounds of 16 + 64 MiB", st.label, bigWayNames[j], st.rounds), uBytes, st.hwm[j]).
				withRatio(fmt.Sprintf("%.2f× msg", st.hwm[j]/largest)).judge(bound, st.hwm[j] <= limit))
		}
	}
	for _, j := range []int{bigWatch, bigMux} {
		rs := canned.rss[j]
		name := fmt.Sprintf("canned: %s RSS (VmRSS) after round 1 → %d", bigWayNames[j], len(rs))
		med := fmtBytes(rs[0]) + " → " + fmtBytes(rs[len(rs)-1])
		for i := range settles {
			name += fmt.Sprintf(" → %s idle", idleFor[i])
			med += " → " + fmtBytes(idle[i][j])
		}
		last := idle[len(idle)-1][j]
		res.add(row{name: name, n: "1", med: med, ratio: fmt.Sprintf("%.2f× msg at the end", last/largest)})
	}
	if err := bigHTTP(b, res, dir, largest); err != nil {
		return res, err
	}
	res.note("wire size: 16 MiB of text → %s line, 64 MiB → %s line (JSON escapes \\ \" < > & in the fixture's pattern); \"msg\" is the largest line; every way returned the same text (the mux's lines are up to %d bytes longer: the envelope fields it adds)",
		fmtBytes(float64(sets[0].wire[0])), fmtBytes(largest), max(sets[0].sizes[1][bigMux]-sets[0].wire[1], sets[1].sizes[1][bigMux]-sets[1].wire[1]))
	res.note("canned = bench -canned, a raw stdio server that writes the fixture's exact result bytes, built once per size, so the server's cost per call is ~0 and the relays' cost shows; fixture = the relay fixture's big tool (Go SDK), whose encoding time (seconds, ±10%%) dominates")
	res.note("time = request written → last byte of the response read by the client; one 64 MiB warm-up call per way; %d canned rounds, %d fixture rounds, each round 16 then 64 MiB; watch and the mux run with max_message = \"128MiB\", watch off; the mux's server is fx (fx__big)",
		sets[0].rounds, sets[1].rounds)
	return res, nil
}

// checkSize checks that way j returned the same line for a size every
// time, and one as long as the direct way's but for a few envelope fields
// (the mux adds the child's serverInfo _meta and resultType when the
// child speaks 2026-07-28).
func (st *bigSet) checkSize(si, j, mib, size int) error {
	switch have := st.sizes[si][j]; {
	case have == 0:
		st.sizes[si][j] = size
	case have != size:
		return st.ps[j].fail("big %d MiB: %d bytes, %d the time before", mib, size, have)
	}
	if j == bigDirect {
		st.wire[si] = size
	}
	if d := st.sizes[si][bigDirect]; d != 0 && (size < d || size > d+1024) {
		return st.ps[j].fail("big %d MiB: %d bytes, the direct way gave %d", mib, size, d)
	}
	return nil
}

// bigParams is the params of a big call of mib MiB for way j.
func bigParams(j, mib int) string {
	name := "big"
	if j == bigMux {
		name = "fx__big"
	}
	return fmt.Sprintf(`{"name":%q,"arguments":{"mib":%d}}`, name, mib)
}

// fixtureRounds: the fixture's big tool costs seconds per call, so it
// gets a third of the canned server's rounds.
func fixtureRounds(canned int) int { return max(1, (canned+2)/3) }

// start writes the set's configs and starts its four ways in dir
// (appending them to all), each handshaken and warmed up with one 64 MiB
// call, whose peak RSS is the way's first.
func (st *bigSet) start(b *bench, dir string, all *[]*peer) error {
	var argv []string
	for _, a := range st.server {
		argv = append(argv, tomlStr(a))
	}
	cmd := strings.Join(argv, ", ")
	single := filepath.Join(dir, st.label+".toml")
	if err := writeFile(single, fmt.Sprintf("[run]\ncommand = [%s]\n\n[relay]\nmax_message = \"128MiB\"\n\n[watch]\nenabled = false\n", cmd)); err != nil {
		return err
	}
	mux := filepath.Join(dir, st.label+"-mux.toml")
	if err := writeFile(mux, fmt.Sprintf("[relay]\nmax_message = \"128MiB\"\n\n[servers.fx.run]\ncommand = [%s]\n\n[servers.fx.watch]\nenabled = false\n\n[log]\nlevel = \"warn\"\n", cmd)); err != nil {
		return err
	}
	argvs := [bigWays][]string{
		bigDirect: st.server,
		bigFloor:  append([]string{b.self, "-floor", "--"}, st.server...),
		bigWatch:  {b.mcpflow, "watch", "-c", single},
		bigMux:    {b.mcpflow, "mux", "-c", mux},
	}
	for j, a := range argvs {
		p, err := b.start(st.label+" "+bigWayNames[j], dir, a...)
		if err != nil {
			return err
		}
		st.ps[j] = p
		*all = append(*all, p)
	}
	for j, p := range st.ps {
		if _, err := p.handshake(30 * time.Second); err != nil {
			return err
		}
		// As a client does before it calls: the mux answers a call made
		// at once after the handshake, before it read its server's tools,
		// with "no tool" now and then (seen on a loaded machine).
		if _, err := p.call("tools/list", "{}", 30*time.Second); err != nil {
			return err
		}
		var err error
		if st.base[j], err = procKB(p.pid, "VmRSS"); err != nil {
			return p.fail("read VmRSS: %v", err)
		}
	}
	// Warm up every way with the largest call: servers, relays and the
	// client's line buffers fault their memory in once, not in round 1.
	for j, p := range st.ps {
		rep, err := p.call("tools/call", bigParams(j, 64), 5*time.Minute)
		if err != nil {
			return err
		}
		if err := st.checkSize(1, j, 64, rep.size); err != nil {
			return fmt.Errorf("warm-up: %w (result: %.300s)", err, rep.result)
		}
		if st.first[j], err = procKB(p.pid, "VmHWM"); err != nil {
			return p.fail("read VmHWM: %v", err)
		}
	}
	return nil
}

// run times the set's rounds, each 16 then 64 MiB every way, the order
// rotating, and reads the RSS of watch and the mux after each round and
// every way's peak at the end.
func (st *bigSet) run() error {
	for r := range st.rounds {
		for si, mib := range bigSizes {
			for k := range bigWays {
				j := (r + si + k) % bigWays
				t0 := time.Now()
				rep, err := st.ps[j].call("tools/call", bigParams(j, mib), 5*time.Minute)
				if err != nil {
					return err
				}
				st.s[si][j].addDur(rep.at.Sub(t0))
				if err := st.checkSize(si, j, mib, rep.size); err != nil {
					return fmt.Errorf("%w (result: %.300s)\n%s", err, rep.result, st.ps[j].stderrTail())
				}
			}
		}
		for _, j := range []int{bigWatch, bigMux} {
			v, err := procKB(st.ps[j].pid, "VmRSS")
			if err != nil {
				return st.ps[j].fail("read VmRSS: %v", err)
			}
			st.rss[j] = append(st.rss[j], v)
		}
	}
	st.at = time.Now()
	for _, j := range []int{bigWatch, bigMux} {
		st.idle[j] = idleRSS(st.ps[j].pid, st.at.Add(idleAfter))
	}
	for j, p := range st.ps {
		var err error
		if st.hwm[j], err = procKB(p.pid, "VmHWM"); err != nil {
			return p.fail("read VmHWM: %v", err)
		}
	}
	return nil
}

// report adds the set's timing rows: each way, and what the floor, watch
// and the mux add to the direct way.
func (st *bigSet) report(res *result) {
	for si, mib := range bigSizes {
		s := &st.s[si]
		tag := fmt.Sprintf("%s %d MiB", st.label, mib)
		for j := range bigWays {
			r := stat(tag+": "+bigWayNames[j], uDur, &s[j])
			if j != bigDirect {
				r = r.withRatio(ratio(s[j].median(), s[bigFloor].median()) + " of floor")
			}
			res.add(r)
		}
		added := func(j int) [3]float64 {
			return [3]float64{s[j].median() - s[bigDirect].median(), s[j].p99() - s[bigDirect].p99(), s[j].min() - s[bigDirect].min()}
		}
		fa := added(bigFloor)
		res.add(row{name: tag + ": added by the floor", n: fmt.Sprint(s[bigFloor].n()), med: fmtDur(fa[0]), p99: fmtDur(fa[1]), min: fmtDur(fa[2])})
		limit := max(4*fa[0], fa[0]+float64(50*time.Millisecond))
		for _, j := range []int{bigWatch, bigMux} {
			a := added(j)
			x := row{name: tag + ": added by " + bigWayNames[j], n: fmt.Sprint(s[j].n()), med: fmtDur(a[0]), p99: fmtDur(a[1]), min: fmtDur(a[2]),
				ratio: addedRatio(a[0], fa[0]) + " of floor's"}
			switch {
			case st.label == "canned" && mib == 16:
				x = x.judge("≤ max(4× floor's, floor's + 50ms) = "+fmtDur(limit), a[0] <= limit)
			case st.label == "canned":
				x.goal = "(passes; no time goal)"
			default:
				x.goal = "(judged on canned)"
			}
			res.add(x)
		}
	}
}
