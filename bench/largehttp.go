//go:build linux

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idleAfter is how long after its last large message a relay's RSS is
// judged against its RSS before the first (issue 41).
const idleAfter = 30 * time.Second

// memRows adds the judged memory rows of one relay: its peak after the
// rounds against the largest message, and its RSS idleAfter after them
// against its RSS before any large message.
func memRows(res *result, label string, rounds int, base, hwm, idle, largest float64) {
	limit := 2.5*largest + 15e6
	res.add(single(fmt.Sprintf("%s peak RSS (VmHWM) after %d rounds of 16 + 64 MiB", label, rounds), uBytes, hwm).
		withRatio(fmt.Sprintf("%.2f× msg", hwm/largest)).judge(fmt.Sprintf("≤ 2.5×msg + 15 MB = %s", fmtBytes(limit)), hwm <= limit))
	res.add(single(fmt.Sprintf("%s RSS (VmRSS) %s after the last round (idle before: %s)", label, idleAfter, fmtBytes(base)), uBytes, idle).
		judge(fmt.Sprintf("≤ idle + 30 MB = %s", fmtBytes(base+30e6)), idle <= base+30e6))
}

// idleRSS reads pid's VmRSS at `at` (on a goroutine: other ways run
// meanwhile); the value comes on the channel, -1 when unreadable.
func idleRSS(pid int, at time.Time) <-chan float64 {
	c := make(chan float64, 1)
	go func() {
		time.Sleep(time.Until(at))
		v, err := procKB(pid, "VmRSS")
		if err != nil {
			v = -1
		}
		c <- v
	}()
	return c
}

// bigHTTP runs rounds of 16 + 64 MiB results through mcpflow's HTTP front
// (the SDK's HTTP client) from a stdio child (the canned server) and from
// an HTTP child (the fixture serving HTTP), and adds their memory rows.
func bigHTTP(b *bench, res *result, dir string, largest float64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	stdioCfg, httpCfg := filepath.Join(dir, "front-stdio.toml"), filepath.Join(dir, "front-http.toml")
	const limits = "[relay]\nmax_message = \"128MiB\"\n\n[watch]\nenabled = false\n"
	if err := writeFile(stdioCfg, fmt.Sprintf("[run]\ncommand = [%s, \"-canned\"]\n\n%s", tomlStr(b.self), limits)); err != nil {
		return err
	}
	if err := writeFile(httpCfg, fmt.Sprintf("[run]\ncommand = [%s, \"-http\", \"127.0.0.1:{port}\"]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\n%s", tomlStr(b.fixture), limits)); err != nil {
		return err
	}
	ways := []struct {
		label, cfg string
		rounds     int
	}{{"HTTP front → stdio child (canned)", stdioCfg, b.opt.bigRounds}, {"HTTP front → HTTP child (fixture)", httpCfg, fixtureRounds(b.opt.bigRounds)}}
	type got struct {
		base, hwm float64
		idle      <-chan float64
	}
	var gots []got
	for _, w := range ways {
		cs, ps, err := b.frontSession(ctx, dir, "watch", "--http", "127.0.0.1:0", "-c", w.cfg)
		if ps != nil {
			defer stopHTTP(res, ps...)
		}
		if err != nil {
			return err
		}
		defer cs.Close()
		p := ps[0]
		time.Sleep(time.Second)
		var g got
		if g.base, err = procKB(p.pid, "VmRSS"); err != nil {
			return p.fail("read VmRSS: %v", err)
		}
		for r := -1; r < w.rounds; r++ { // one 64 MiB call warms up
			for _, mib := range []int{16, 64} {
				if r < 0 && mib == 16 {
					continue
				}
				out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"mib": mib}})
				if err != nil || out.IsError || len(out.Content) != 1 {
					return p.fail("%s: big %d MiB: %v", w.label, mib, err)
				}
				if tc, ok := out.Content[0].(*mcp.TextContent); !ok || len(tc.Text) != mib<<20 {
					return p.fail("%s: big %d MiB: %v", w.label, mib, err)
				}
			}
		}
		g.idle = idleRSS(p.pid, time.Now().Add(idleAfter))
		if g.hwm, err = procKB(p.pid, "VmHWM"); err != nil {
			return p.fail("read VmHWM: %v", err)
		}
		gots = append(gots, g)
	}
	for i, w := range ways {
		memRows(res, w.label+":", w.rounds, gots[i].base, gots[i].hwm, <-gots[i].idle, largest)
	}
	res.note("HTTP front: the Go SDK's HTTP client, one session, the text's length checked; one 64 MiB warm-up call; each way's idle RSS is read %s after its last round, the next way running meanwhile", idleAfter)
	return nil
}
