//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

const (
	muxServers     = 20
	toolsPerServer = 50
)

// muxBench measures `mcpflow mux` as an agent uses it: its RSS idle, 20
// servers added with add_server (each timed against the server's own
// start), its RSS with the 20 idle servers, then, with every server grown
// to 50 tools, tools/list over the 1,000 tools at the client.
func muxBench(b *bench) (res *result, err error) {
	res = &result{}
	dir, err := b.dir("mux")
	if err != nil {
		return res, err
	}
	// A config with [mux] only: the mux with no servers, as `mcpflow mux`
	// with no -c starts (which takes no -log-level: it then asks for
	// run.command).
	cfg := filepath.Join(dir, "mux.toml")
	if err := writeFile(cfg, "[mux]\nadd_server = true\n\n[log]\nlevel = \"warn\"\n"); err != nil {
		return res, err
	}
	mux, err := b.start("mux", dir, b.mcpflow, "mux", "-c", cfg)
	if err != nil {
		return res, err
	}
	defer func() { closeAll(res, mux) }()
	if _, err := mux.handshake(30 * time.Second); err != nil {
		return res, err
	}
	if _, err := listAll(mux); err != nil {
		return res, err
	}
	const settle = 2 * time.Second
	time.Sleep(settle)
	idle, err := procKB(mux.pid, "VmRSS")
	if err != nil {
		return res, mux.fail("read VmRSS: %v", err)
	}

	add, alone, own, err := addServers(b, mux, dir)
	if err != nil {
		return res, err
	}
	mux.notes = nil
	time.Sleep(settle)
	guardRSS, guardPriv := guardMem(mux.pid)
	with20, err := procKB(mux.pid, "VmRSS")
	if err != nil {
		return res, mux.fail("read VmRSS: %v", err)
	}

	tools, err := growTo(mux)
	if err != nil {
		return res, err
	}
	mux.notes = nil

	// tools/list, every page, as a client reads it.
	var list sample
	var pages, size int
	for range 3 { // warm up
		if _, err := listTimed(mux, nil, nil); err != nil {
			return res, err
		}
	}
	for range b.opt.listRounds {
		d, err := listTimed(mux, &pages, &size)
		if err != nil {
			return res, err
		}
		list.addDur(d)
	}
	mux.notes = nil
	time.Sleep(settle)
	with1000, err := procKB(mux.pid, "VmRSS")
	if err != nil {
		return res, mux.fail("read VmRSS: %v", err)
	}

	res.add(single("mux RSS idle, no servers (VmRSS)", uBytes, idle).judge("≤ 15 MB", idle <= 15e6))
	res.add(single(fmt.Sprintf("mux RSS with %d idle servers (VmRSS)", muxServers), uBytes, with20).
		withRatio(fmt.Sprintf("+%s per server", fmtBytes((with20-idle)/muxServers))).
		judge("≤ 35 MB", with20 <= 35e6))
	if guardRSS > 0 {
		res.add(row{name: "its guard (mcpflow __guard): VmRSS / private memory", n: "1",
			med:   fmtBytes(guardRSS) + " / " + fmtBytes(guardPriv),
			ratio: fmt.Sprintf("mux + guard's private = %s idle, %s with %d servers", fmtBytes(idle+guardPriv), fmtBytes(with20+guardPriv), muxServers)})
	}
	res.add(stat("add_server → result (tools listed)", uDur, &add))
	res.add(stat("the server's own start: spawn → initialize → tools/list", uDur, &alone))
	res.add(stat("add_server − the server's own start (paired)", uDur, &own).
		judge("≤ 30ms (median; issue 11)", own.median() <= float64(30*time.Millisecond)))
	res.add(stat(fmt.Sprintf("tools/list, %d servers × %d tools, every page, at the client", muxServers, toolsPerServer), uDur, &list).
		withRatio(fmt.Sprintf("%d tools, %.0f pages, %s", len(tools), float64(pages)/float64(max(1, list.n())), fmtBytes(float64(size)/float64(max(1, list.n()))))).
		judge("≤ 5ms (median)", list.median() <= float64(5*time.Millisecond)))
	res.add(single(fmt.Sprintf("mux RSS with %d servers × %d tools, after the tools/list rounds (VmRSS)", muxServers, toolsPerServer), uBytes, with1000))
	res.note("`mcpflow mux -c mux.toml`, a config with [mux] and [log] level = \"warn\" only (no servers); the servers are the mux's fixture (a Go SDK server), added by the bench with add_server; RSS read %s after the last call", settle)
	res.note("add_server's result comes once the server has started and its tools are listed; the server's own start is the fixture started by the bench and asked initialize and tools/list, alternating with add_server")
	res.note("tools/list: the fixture's grow tool brings each server to %d tools; time = each page's request written → its last byte read, summed over the pages, by the raw client (which decodes nothing on the clock)", toolsPerServer)
	return res, nil
}

// addServers adds the servers with add_server, each beside the server's
// own start (spawn, handshake, tools/list) by the bench, alternating
// which goes first; own is each add_server less its pair.
func addServers(b *bench, mux *peer, dir string) (add, alone, own sample, err error) {
	for i := range muxServers {
		var a, c time.Duration
		for k := range 2 {
			if (i+k)%2 == 0 {
				t0 := time.Now()
				rep, err := mux.call("tools/call", fmt.Sprintf(`{"name":"add_server","arguments":{"name":"s%d","command":%s}}`, i, tomlStr(b.muxFixture)), time.Minute)
				if err != nil {
					return add, alone, own, err
				}
				a = rep.at.Sub(t0)
				if txt, isErr, err := toolText(rep.result); err != nil || isErr {
					return add, alone, own, mux.fail("add_server s%d: %s (%v)", i, txt, err)
				}
				continue
			}
			ready, tools, _, err := startAlone(b, dir, b.muxFixture)
			if err != nil {
				return add, alone, own, err
			}
			c = ready + tools
		}
		add.addDur(a)
		alone.addDur(c)
		own.addDur(a - c)
	}
	return add, alone, own, nil
}

// growTo brings every server to toolsPerServer tools and waits until the
// mux lists them all; it returns the tool names listed.
func growTo(mux *peer) ([]string, error) {
	// The fixture's grow tool adds dyn_N tools, one list_changed each.
	tools, err := listAll(mux)
	if err != nil {
		return nil, err
	}
	have := 0
	for _, t := range tools {
		if strings.HasPrefix(t, "s0__") {
			have++
		}
	}
	grow := toolsPerServer - have
	if grow > 0 {
		for i := range muxServers {
			if _, err := mux.call("tools/call", fmt.Sprintf(`{"name":"s%d__grow","arguments":{"n":%d}}`, i, grow), time.Minute); err != nil {
				return nil, err
			}
		}
	}
	want := muxServers * toolsPerServer
	deadline := time.Now().Add(time.Minute)
	for {
		if tools, err = listAll(mux); err != nil {
			return nil, err
		}
		n := 0
		for _, t := range tools {
			if strings.HasPrefix(t, "s") && strings.Contains(t, "__") {
				n++
			}
		}
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			return nil, mux.fail("only %d of %d server tools listed a minute after grow", n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return tools, nil
}

// startAlone starts server by itself and times spawn → initialize result,
// tools/list, and stop (stdin closed → exit reaped).
func startAlone(b *bench, dir string, server ...string) (ready, tools, stop time.Duration, err error) {
	t0 := time.Now()
	p, err := b.start("server alone", dir, server...)
	if err != nil {
		return 0, 0, 0, err
	}
	defer p.kill()
	rep, err := p.handshake(30 * time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	ready = rep.at.Sub(t0)
	t1 := time.Now()
	rep, err = p.call("tools/list", "{}", 30*time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	tools = rep.at.Sub(t1)
	t2 := time.Now()
	if exit, killed := p.close(10 * time.Second); killed {
		return 0, 0, 0, p.fail("did not exit after stdin closed (%s)", exit)
	}
	stop = time.Since(t2)
	return ready, tools, stop, nil
}

// toolsPage is the part of a tools/list result the bench reads.
type toolsPage struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	NextCursor string `json:"nextCursor"`
}

// listTimed reads every page of tools/list and returns the time spent
// waiting for the pages (decoding a page to find the next cursor is off
// the clock). pages and size, when not nil, are added to.
func listTimed(p *peer, pages, size *int) (time.Duration, error) {
	var total time.Duration
	params := "{}"
	for {
		t0 := time.Now()
		rep, err := p.call("tools/list", params, 30*time.Second)
		if err != nil {
			return 0, err
		}
		total += rep.at.Sub(t0)
		if pages != nil {
			*pages++
			*size += rep.size
		}
		var pg toolsPage
		if err := json.Unmarshal(rep.result, &pg); err != nil {
			return 0, p.fail("tools/list: %v", err)
		}
		if pg.NextCursor == "" {
			return total, nil
		}
		c, _ := json.Marshal(pg.NextCursor)
		params = `{"cursor":` + string(c) + `}`
	}
}

// listAll returns the names of every tool, every page.
func listAll(p *peer) ([]string, error) {
	var names []string
	params := "{}"
	for {
		rep, err := p.call("tools/list", params, 30*time.Second)
		if err != nil {
			return nil, err
		}
		var pg toolsPage
		if err := json.Unmarshal(rep.result, &pg); err != nil {
			return nil, p.fail("tools/list: %v", err)
		}
		for _, t := range pg.Tools {
			names = append(names, t.Name)
		}
		if pg.NextCursor == "" {
			return names, nil
		}
		c, _ := json.Marshal(pg.NextCursor)
		params = `{"cursor":` + string(c) + `}`
	}
}
