//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"time"
)

const echoParams = `{"name":"echo","arguments":{"text":"hello"}}`

// modernMeta is the session _meta of a 2026-07-28 request (no handshake).
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcpflow-bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// era is how the bench client speaks: the legacy handshake (initialize,
// then plain requests) or 2026-07-28 (no handshake, every request carries
// its session _meta).
type era struct {
	label  string // row prefix
	name   string
	modern bool
}

var eras = []era{
	{"", "2025-06-18 (initialize handshake)", false},
	{"2026-07-28: ", "2026-07-28 (session _meta on every request)", true},
}

// echoCall is the params of an echo call of tool in e.
func (e era) echoCall(tool string) string {
	if e.modern {
		return `{"name":"` + tool + `","arguments":{"text":"hello"},` + modernMeta + `}`
	}
	return `{"name":"` + tool + `","arguments":{"text":"hello"}}`
}

// cliSchema is the [cli] way's tool list: echo runs /bin/echo TEXT.
const cliSchema = `{"tools":[{"name":"echo","description":"Echo the text.","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"cli_command":["{text}"]}]}`

// callWay is one way a small call is made in the per-call section: a peer
// (direct, floor, watch, mux, [cli]) or, for the [cli] way's floor, the
// same command run directly by the bench.
type callWay struct {
	name   string
	p      *peer
	params string
	want   string   // the echo's text
	argv   []string // run directly instead of a call
	dir    string
}

func (w *callWay) call() (time.Duration, error) {
	t0 := time.Now()
	if w.argv != nil {
		cmd := exec.Command(w.argv[0], w.argv[1:]...)
		cmd.Dir = w.dir
		out, err := cmd.Output()
		d := time.Since(t0)
		if err != nil || string(out) != w.want {
			return 0, fmt.Errorf("%s: %q, %v", w.name, out, err)
		}
		return d, nil
	}
	rep, err := w.p.call("tools/call", w.params, 30*time.Second)
	if err != nil {
		return 0, err
	}
	if txt, isErr, err := toolText(rep.result); err != nil || isErr || txt != w.want {
		return 0, w.p.fail("echo returned %q (isError %v, %v)", txt, isErr, err)
	}
	return rep.at.Sub(t0), nil
}

// overhead times a small tools/call (echo), once per protocol era, six
// ways interleaved: straight to the relay fixture, through the floor
// relay, through mcpflow watch, through mcpflow mux (the fixture as server
// fx: fx__echo), /bin/echo run directly, and a [cli] config serving the
// same /bin/echo through mcpflow watch.
func overhead(b *bench) (res *result, err error) {
	res = &result{}
	for _, e := range eras {
		if err := overheadEra(b, res, e); err != nil {
			return res, err
		}
	}
	res.note("added = quantile(way) − quantile(its direct way) at p50: the relays' against the fixture called directly, [cli]'s against /bin/echo run directly by the bench; each judged against the floor's added in the same era and run")
	res.note("goals: watch and the mux ≤ 2× the floor's added (issue 30: the mux costs what the relay costs); [cli] ≤ max(8× the floor's added, the floor's + 0.5 ms) (issue 23)")
	res.note("raw JSON-RPC client (one line out, one line in) for every way; one call per way per round, order rotating; CPU (sum of /proc/PID/task/*/schedstat run time) and context switches (all threads) are the relay process's own, not its children's, over the measured rounds")
	return res, nil
}

// The ways of the per-call section.
const (
	owDirect = iota
	owFloor
	owWatch
	owMux
	owExe // /bin/echo run directly: the [cli] way's floor
	owCli
	owNways
)

func overheadEra(b *bench, res *result, e era) (err error) {
	dir, err := b.dir("overhead")
	if err != nil {
		return err
	}
	muxCfg := filepath.Join(dir, "mux.toml")
	if err := writeFile(muxCfg, fmt.Sprintf("[servers.fx.run]\ncommand = [%s]\n[servers.fx.watch]\nenabled = false\n[log]\nlevel = \"warn\"\n", tomlStr(b.fixture))); err != nil {
		return err
	}
	echo, err := exec.LookPath("echo")
	if err != nil {
		return err
	}
	if echo, err = filepath.Abs(echo); err != nil {
		return err
	}
	cliDir := filepath.Join(dir, "cli")
	if err := writeFile(filepath.Join(cliDir, "schema.json"), cliSchema); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(cliDir, "mcpflow.toml"), fmt.Sprintf("[cli]\nschema = [\"cat\", \"schema.json\"]\ncommand = [%s]\n[watch]\nenabled = false\n[log]\nlevel = \"warn\"\n", tomlStr(echo))); err != nil {
		return err
	}
	ways := [owNways]callWay{
		{name: "direct to the fixture", params: e.echoCall("echo"), want: "hello"},
		{name: "floor (2× io.Copy relay)", params: e.echoCall("echo"), want: "hello"},
		{name: "mcpflow watch", params: e.echoCall("echo"), want: "hello"},
		{name: "mcpflow mux (fx__echo)", params: e.echoCall("fx__echo"), want: "hello"},
		{name: "/bin/echo run directly", argv: []string{echo, "hello"}, dir: cliDir, want: "hello\n"},
		{name: "[cli] through mcpflow watch (/bin/echo)", params: e.echoCall("echo"), want: "hello\n"},
	}
	argv := [owNways][]string{
		owDirect: {b.fixture},
		owFloor:  {b.self, "-floor", "--", b.fixture},
		owWatch:  {b.mcpflow, "watch", "--", b.fixture},
		owMux:    {b.mcpflow, "mux", "-c", muxCfg},
		owCli:    {b.mcpflow, "watch"},
	}
	var ps []*peer
	defer func() { closeAll(res, ps...) }()
	for j := range ways {
		if argv[j] == nil {
			continue
		}
		wd := dir
		if j == owCli {
			wd = cliDir
		}
		p, err := b.start(ways[j].name, wd, argv[j]...)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		ways[j].p = p
	}
	if !e.modern {
		for _, p := range ps {
			if _, err := p.handshake(30 * time.Second); err != nil {
				return err
			}
		}
	}
	// Warm up every way (page faults, goroutine stacks, buffers; the mux
	// starts its server meanwhile).
	warm := min(300, b.opt.rounds/5+20)
	for range warm {
		for j := range ways {
			if _, err := ways[j].call(); err != nil {
				return err
			}
		}
	}
	for _, p := range ps {
		p.notes = nil
	}
	m, err := measureWays(&ways, b.opt.rounds)
	if err != nil {
		return err
	}
	m.report(res, e, &ways, b.opt.rounds, warm)
	return nil
}

// owRun is what the per-call section measured of each way: call times,
// the per-round differences against the way's direct one, and the CPU
// time and context switches of its process.
type owRun struct {
	s, pair [owNways]sample
	cpu     [owNways]time.Duration
	sw      [owNways]float64
}

// measureWays makes rounds calls each way, one a round, the order
// rotating.
func measureWays(ways *[owNways]callWay, rounds int) (*owRun, error) {
	m := &owRun{}
	s, pair, cpu, sw := &m.s, &m.pair, &m.cpu, &m.sw
	for j := range ways {
		if p := ways[j].p; p != nil {
			c, _ := procCPU(p.pid)
			x, _ := procSwitches(p.pid)
			cpu[j], sw[j] = -c, -x
		}
	}
	for r := range rounds {
		var d [owNways]time.Duration
		for k := range owNways {
			j := (r + k) % owNways
			var err error
			if d[j], err = ways[j].call(); err != nil {
				return nil, err
			}
			s[j].addDur(d[j])
		}
		for _, j := range []int{owFloor, owWatch, owMux} {
			pair[j].addDur(d[j] - d[owDirect])
		}
		pair[owCli].addDur(d[owCli] - d[owExe])
	}
	for j := range ways {
		if p := ways[j].p; p != nil {
			c, err1 := procCPU(p.pid)
			x, err2 := procSwitches(p.pid)
			if err1 != nil || err2 != nil {
				return nil, p.fail("read /proc: %v %v", err1, err2)
			}
			cpu[j] += c
			sw[j] += x
		}
	}

	return m, nil
}

// report adds the per-call rows of era e.
func (m *owRun) report(res *result, e era, ways *[owNways]callWay, rounds, warm int) {
	s, pair, cpu, sw := &m.s, &m.pair, &m.cpu, &m.sw
	for j := range ways {
		row := stat(e.label+ways[j].name, uDur, &s[j])
		if j == owCli {
			row = row.withRatio(ratio(s[owCli].median(), s[owExe].median()) + " of direct")
		} else if j != owDirect && j != owExe {
			row = row.withRatio(ratio(s[j].median(), s[owDirect].median()) + " of direct")
		}
		res.add(row)
	}
	added := func(j, base int) [3]float64 {
		return [3]float64{s[j].median() - s[base].median(), s[j].p99() - s[base].p99(), s[j].min() - s[base].min()}
	}
	fa := added(owFloor, owDirect)
	res.add(row{name: e.label + "added by the floor", n: fmt.Sprint(s[owFloor].n()), med: fmtDur(fa[0]), p99: fmtDur(fa[1]), min: fmtDur(fa[2])})
	eight := max(8*fa[0], fa[0]+float64(500*time.Microsecond))
	for _, x := range []struct {
		name    string
		j, base int
		limit   float64
		goal    string
	}{
		{"added by mcpflow watch", owWatch, owDirect, 2 * fa[0], "p50 ≤ 2× floor's = " + fmtDur(2*fa[0])},
		{"added by the mux", owMux, owDirect, 2 * fa[0], "p50 ≤ 2× floor's = " + fmtDur(2*fa[0])},
		{"added by [cli] (over /bin/echo run directly)", owCli, owExe, eight, "p50 ≤ max(8× floor's, floor's + 0.5ms) = " + fmtDur(eight)},
	} {
		a := added(x.j, x.base)
		res.add(row{name: e.label + x.name, n: fmt.Sprint(s[x.j].n()), med: fmtDur(a[0]), p99: fmtDur(a[1]), min: fmtDur(a[2]),
			ratio: addedRatio(a[0], fa[0]) + " of floor's"}.judge(x.goal, a[0] <= x.limit))
	}
	n := float64(rounds)
	res.add(row{name: e.label + "CPU per call: floor / watch / mux / [cli] process", n: fmt.Sprint(rounds),
		med: fmtDur(float64(cpu[owFloor])/n) + " / " + fmtDur(float64(cpu[owWatch])/n) + " / " + fmtDur(float64(cpu[owMux])/n) + " / " + fmtDur(float64(cpu[owCli])/n)})
	res.add(row{name: e.label + "context switches per call: floor / watch / mux / [cli] process", n: fmt.Sprint(rounds),
		med: fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", sw[owFloor]/n, sw[owWatch]/n, sw[owMux]/n, sw[owCli]/n)})
	res.note("%s%s: paired per round (adjacent calls), median added by the floor %s, watch %s, the mux %s, [cli] %s; %d warm-up calls per way",
		e.label, e.name, fmtDur(pair[owFloor].median()), fmtDur(pair[owWatch].median()), fmtDur(pair[owMux].median()), fmtDur(pair[owCli].median()), warm)
}

// addedRatio is m ÷ f, for added costs that may be ≤ 0.
func addedRatio(m, f float64) string {
	switch {
	case m <= 0:
		return "≤ 0"
	case f <= 0:
		return "∞ (floor ≤ 0)"
	}
	return fmt.Sprintf("%.2f×", m/f)
}
