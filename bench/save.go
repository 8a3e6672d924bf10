//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/watcher"
)

var cycleLine = regexp.MustCompile(`changed src\.txt → build (\S+) ✓ → restart (\S+) ✓`)

// debounce is watch.debounce's default, which the bench leaves in effect.
const debounce = watcher.DefaultDebounce

// saveToList writes the watched source file and times the arrival of
// tools/list_changed at the client, then the answer to a call of the new
// server's tool sent on it (callable). The build copies src.txt to the
// file the fixture reads its variant from, so each save flips the fixture
// between v1 and v2 (which adds the reverse tool). Side by side, in the
// same rounds: the fixture started alone (the floor of a restart: spawn,
// initialize, tools/list).
func saveToList(b *bench) (res *result, err error) {
	res = &result{}
	base, err := b.dir("save")
	if err != nil {
		return res, err
	}
	proj := filepath.Join(base, "proj")
	logPath := filepath.Join(base, "mcpflow.log")
	src := filepath.Join(proj, "src.txt")
	if err := writeFile(src, "v1\n"); err != nil {
		return res, err
	}
	cfg := filepath.Join(proj, "mcpflow.toml")
	if err := writeFile(cfg, fmt.Sprintf(`[build]
command = "cp src.txt variant"

[run]
command = [%s, "-variant-file", "variant"]

[watch]
include = ["src.txt"]

[log]
file = %s
`, tomlStr(b.fixture), tomlStr(logPath))); err != nil {
		return res, err
	}
	// The build command alone, timed in a scratch copy of the project.
	scratch := filepath.Join(base, "scratch")
	if err := writeFile(filepath.Join(scratch, "src.txt"), "v1\n"); err != nil {
		return res, err
	}

	mcp, err := b.start("mcpflow", proj, b.mcpflow, "watch", "-c", cfg)
	if err != nil {
		return res, err
	}
	defer func() { closeAll(res, mcp) }()
	if _, err := mcp.handshake(30 * time.Second); err != nil {
		return res, err
	}
	if err := waitLog(logPath, func(s string) bool { return strings.Contains(s, "watching") }, 10*time.Second); err != nil {
		return res, mcp.fail("%v", err)
	}

	var lat, build, restart, alone, net, callable, callNet, floor, own sample
	variant := "v1"
	for r := -1; r < b.opt.saveRounds; r++ { // round -1 warms up
		var lt, bd, rd, ad, ct, fr time.Duration
		for k := range 2 {
			if (r+k)%2 == 0 {
				if variant == "v1" {
					variant = "v2"
				} else {
					variant = "v1"
				}
				before := countCycles(logPath)
				mcp.notes = nil
				t0 := time.Now()
				if err := os.WriteFile(src, []byte(variant+"\n"), 0o644); err != nil {
					return res, err
				}
				at, err := mcp.waitNote(listChanged, time.Now().Add(10*time.Second))
				if err != nil {
					return res, err
				}
				lt = at.Sub(t0)
				call := `{"name":"echo","arguments":{"text":"ab"}}`
				if variant == "v2" {
					call = `{"name":"reverse","arguments":{"text":"ab"}}`
				}
				rep, err := mcp.call("tools/call", call, 10*time.Second)
				if err != nil {
					return res, err
				}
				if txt, isErr, err := toolText(rep.result); err != nil || isErr {
					return res, mcp.fail("the call after list_changed failed (%v): %s", err, txt)
				}
				ct = rep.at.Sub(t0)
				var m []string
				err = waitLog(logPath, func(s string) bool {
					all := cycleLine.FindAllStringSubmatch(s, -1)
					if len(all) > before {
						m = all[before]
						return true
					}
					return false
				}, 5*time.Second)
				if err != nil {
					return res, mcp.fail("cycle line: %v", err)
				}
				if bd, err = time.ParseDuration(m[1]); err != nil {
					return res, fmt.Errorf("cycle line build time %q: %v", m[1], err)
				}
				if rd, err = time.ParseDuration(m[2]); err != nil {
					return res, fmt.Errorf("cycle line restart time %q: %v", m[2], err)
				}
				continue
			}
			cmd := exec.Command("sh", "-c", "cp src.txt variant")
			cmd.Dir = scratch
			t0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return res, fmt.Errorf("build alone: %v: %s", err, out)
			}
			ad = time.Since(t0)
			ready, tools, _, err := startAlone(b, proj, b.fixture, "-variant-file", "variant")
			if err != nil {
				return res, err
			}
			fr = ready + tools
		}
		if r >= 0 {
			lat.addDur(lt)
			build.addDur(bd)
			restart.addDur(rd)
			alone.addDur(ad)
			net.addDur(lt - bd)
			callable.addDur(ct)
			callNet.addDur(ct - bd)
			floor.addDur(fr)
			own.addDur(ct - bd - fr)
		}
		time.Sleep(50 * time.Millisecond) // let the watcher settle between saves
	}
	res.add(stat("save → list_changed at the client", uDur, &lat))
	res.add(stat("  · build (cycle log line)", uDur, &build))
	res.add(stat("  · restart (cycle log line)", uDur, &restart))
	res.add(stat("build command alone (sh -c cp)", uDur, &alone))
	limit := debounce + 50*time.Millisecond
	res.add(stat("save → list_changed − build", uDur, &net).
		withRatio(ratio(net.median(), float64(debounce))+" of debounce").
		judge(fmt.Sprintf("≤ debounce + 50ms = %s (median)", limit), net.median() <= float64(limit)))
	res.add(stat("save → callable (a call of the new server's tool answered)", uDur, &callable))
	res.add(stat("server alone: spawn → initialize → tools/list (the floor's restart)", uDur, &floor))
	res.add(stat("save → callable − build", uDur, &callNet).
		judge("≤ build + 150ms (median; issue 38)", callNet.median() <= float64(150*time.Millisecond)))
	res.add(stat("  · mcpflow's own: − the server's own start", uDur, &own).
		withRatio(ratio(own.median(), float64(debounce)) + " of debounce"))
	res.note("build = `cp src.txt variant` by sh -c; watch include = [\"src.txt\"], debounce %s (the default); each save flips the fixture between v1 and v2 (tools +reverse / -reverse); one warm-up save", debounce)
	res.note("the build time subtracted is the one mcpflow logs for that cycle (rounded to 100µs); the bench times the same command alone in the same round for comparison")
	return res, nil
}

func countCycles(path string) int {
	b, _ := os.ReadFile(path)
	return len(cycleLine.FindAllIndex(b, -1))
}

// waitLog polls a log file until ok accepts its content.
func waitLog(path string, ok func(string) bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		if ok(string(b)) {
			return nil
		}
		if time.Now().After(deadline) {
			tail := string(b)
			if len(tail) > 1500 {
				tail = tail[len(tail)-1500:]
			}
			return fmt.Errorf("log %s: expected line not seen in %s; log tail:\n%s", path, timeout, tail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
