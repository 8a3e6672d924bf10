//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP section measures Streamable HTTP on either side of mcpflow
// against the direct HTTP round trip (the Go SDK's client to the fixture
// serving HTTP), all through the Go SDK's client so that the client's own
// cost is the same for every way:
//
//	direct         SDK HTTP client → fixture -http
//	front → stdio  SDK HTTP client → mcpflow watch --http → fixture (stdio)
//	stdio → child  SDK stdio client → mcpflow watch (run.url) → fixture -http
//	HTTP → HTTP    SDK HTTP client → mcpflow watch --http (run.url) → fixture -http
//
// It also serves 1, 3 and 10 HTTP client sessions of a stdio server (a
// process each): mcpflow's RSS, its servers', and save → list_changed on
// every session's stream.

// frontURL is the address mcpflow logs when it serves HTTP.
var frontURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/mcp`)

// httpWay is one way of the HTTP section: an SDK client session and the
// processes behind it.
type httpWay struct {
	name  string
	peers []*peer
	cs    *mcp.ClientSession
}

func httpBench(b *bench) (res *result, err error) {
	res = &result{}
	dir, err := b.dir("http")
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	childCfg := filepath.Join(dir, "child.toml")
	if err := writeFile(childCfg, fmt.Sprintf("[run]\ncommand = [%s, \"-http\", \"127.0.0.1:{port}\"]\nurl = \"http://127.0.0.1:{port}/mcp\"\n[watch]\nenabled = false\n", tomlStr(b.fixture))); err != nil {
		return res, err
	}
	port, err := freePort()
	if err != nil {
		return res, err
	}
	ways := []*httpWay{{name: "direct: HTTP client → fixture serving HTTP"}, {name: "HTTP front → stdio child"}, {name: "stdio client → HTTP child"}, {name: "HTTP front → HTTP child"}}
	defer func() {
		for _, w := range ways {
			if w.cs != nil {
				w.cs.Close()
			}
			stopHTTP(res, w.peers...)
		}
	}()
	fx, err := b.start("fixture-http", dir, b.fixture, "-http", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return res, err
	}
	ways[0].peers = []*peer{fx}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ways[0].cs, err = httpSession(ctx, fmt.Sprintf("http://127.0.0.1:%d/mcp", port)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return res, fx.fail("%v", err)
		}
	}
	if ways[1].cs, ways[1].peers, err = b.frontSession(ctx, dir, "watch", "--http", "127.0.0.1:0", "--", b.fixture); err != nil {
		return res, err
	}
	stdio, err := b.start("mcpflow-url", dir, b.mcpflow, "watch", "-c", childCfg)
	if err != nil {
		return res, err
	}
	ways[2].peers = []*peer{stdio}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	if ways[2].cs, err = client.Connect(ctx, &mcp.IOTransport{Reader: stdio.stdout, Writer: stdio.stdin}, nil); err != nil {
		return res, stdio.fail("connect: %v", err)
	}
	if ways[3].cs, ways[3].peers, err = b.frontSession(ctx, dir, "watch", "--http", "127.0.0.1:0", "-c", childCfg); err != nil {
		return res, err
	}

	rounds := max(100, b.opt.rounds/5)
	samples := make([]sample, len(ways))
	for r := -20; r < rounds; r++ { // 20 rounds warm up
		for k := range ways {
			w := ways[((r+k)%len(ways)+len(ways))%len(ways)]
			t0 := time.Now()
			out, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
			d := time.Since(t0)
			if err != nil || out.IsError {
				return res, fmt.Errorf("%s: echo: %v %+v", w.name, err, out)
			}
			if r >= 0 {
				samples[slices.Index(ways, w)].addDur(d)
			}
		}
	}
	direct := samples[0].median()
	res.add(stat(ways[0].name, uDur, &samples[0]).withGoal("the reference"))
	for i := 1; i < len(ways); i++ {
		added := samples[i].median() - direct
		res.add(stat(ways[i].name, uDur, &samples[i]).withRatio(ratio(added, direct)).judge("added p50 ≤ 2× direct", added <= 2*direct))
	}
	res.note("ratio: (way's p50 − direct p50) / direct p50; %d rounds, each way once a round, order rotating", rounds)

	for _, n := range []int{1, 3, 10} {
		if err := httpSessions(ctx, b, dir, res, n); err != nil {
			return res, err
		}
	}
	return res, nil
}

// frontSession starts mcpflow with args (serving HTTP on a free port),
// waits for the URL it logs and connects an SDK client to it.
func (b *bench) frontSession(ctx context.Context, dir string, args ...string) (*mcp.ClientSession, []*peer, error) {
	p, err := b.start("mcpflow-http", dir, append([]string{b.mcpflow}, args...)...)
	if err != nil {
		return nil, nil, err
	}
	url, err := logged(p, 30*time.Second)
	if err != nil {
		return nil, []*peer{p}, err
	}
	cs, err := httpSession(ctx, url)
	if err != nil {
		return nil, []*peer{p}, p.fail("%v", err)
	}
	return cs, []*peer{p}, nil
}

// logged waits for p to log the URL it serves.
func logged(p *peer, timeout time.Duration) (string, error) {
	var url string
	err := waitLog(p.stderrPath, func(s string) bool {
		url = frontURL.FindString(s)
		return url != ""
	}, timeout)
	if err != nil {
		return "", p.fail("no URL logged: %v", err)
	}
	return url, nil
}

// httpSession connects the SDK's client to url over Streamable HTTP.
func httpSession(ctx context.Context, url string) (*mcp.ClientSession, error) {
	return httpSessionNoted(ctx, url, "", nil)
}

// httpSessionNoted is httpSession in protocol version ("": the SDK's
// newest), calling changed at each tools/list_changed.
func httpSessionNoted(ctx context.Context, url, version string, changed func()) (*mcp.ClientSession, error) {
	var opts *mcp.ClientOptions
	if changed != nil {
		opts = &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed() }}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, opts)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, err)
	}
	return cs, nil
}

// httpSessions serves n HTTP client sessions of a stdio server (each
// with a process of its own) and reports mcpflow's RSS, its servers' RSS,
// and save → list_changed on every session's stream, beside the build time
// the log gives for each save.
func httpSessions(ctx context.Context, b *bench, base string, res *result, n int) error {
	proj := filepath.Join(base, fmt.Sprintf("save%d", n))
	logPath := filepath.Join(base, fmt.Sprintf("save%d.log", n))
	src := filepath.Join(proj, "src.txt")
	if err := writeFile(src, "v1\n"); err != nil {
		return err
	}
	cfg := filepath.Join(proj, "mcpflow.toml")
	if err := writeFile(cfg, fmt.Sprintf("[build]\ncommand = \"cp src.txt variant\"\n[run]\ncommand = [%s, \"-variant-file\", \"variant\"]\n[watch]\ninclude = [\"src.txt\"]\ndebounce = %s\n[log]\nfile = %s\n",
		tomlStr(b.fixture), tomlStr(debounce.String()), tomlStr(logPath))); err != nil {
		return err
	}
	p, err := b.start("mcpflow-http-save", proj, b.mcpflow, "watch", "--http", "127.0.0.1:0", "-c", cfg)
	if err != nil {
		return err
	}
	defer stopHTTP(res, p)
	url, err := logged(p, 30*time.Second)
	if err != nil {
		return err
	}
	changed := make(chan time.Time, 16*n)
	var sessions []*mcp.ClientSession
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
	}()
	for range n {
		// Legacy-era sessions: each is a session of the server's, a
		// process of its own (2026-07-28 clients over HTTP keep no
		// session: their requests share one).
		cs, err := httpSessionNoted(ctx, url, "2025-11-25", func() { changed <- time.Now() })
		if err != nil {
			return err
		}
		sessions = append(sessions, cs)
		if _, err := cs.ListTools(ctx, nil); err != nil {
			return err
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}); err != nil {
			return err
		}
	}
	time.Sleep(time.Second)
	rss, err := procKB(p.pid, "VmRSS")
	if err != nil {
		return err
	}
	var children float64
	running := 0
	for _, c := range servers(p.pid) {
		if strings.Contains(procCmdline(c), "fixture") {
			kb, _ := procKB(c, "VmRSS")
			children += kb
			running++
		}
	}
	if running != n {
		var all []string
		for _, c := range procChildren(p.pid) {
			all = append(all, procCmdline(c))
		}
		return p.fail("%d servers run for %d sessions: %q", running, n, all)
	}
	what := fmt.Sprintf("%d HTTP client sessions of a stdio server", n)
	row := single("  RSS of mcpflow, "+what, uBytes, rss)
	if n == 10 {
		row = row.judge("≤ 25 MB", rss <= 25e6)
	}
	res.add(row)
	res.add(single("  RSS of its servers (a process a session)", uBytes, children))

	var lat, over sample
	variant := "v1"
	for r := -1; r < b.opt.saveRounds; r++ {
		variant = map[string]string{"v1": "v2", "v2": "v1"}[variant]
		time.Sleep(300 * time.Millisecond) // quiet, and the last round's notifications drained
		for len(changed) > 0 {
			<-changed
		}
		before := countCycles(logPath)
		t0 := time.Now()
		if err := os.WriteFile(src, []byte(variant+"\n"), 0o644); err != nil {
			return err
		}
		var last time.Time
		for range n {
			select {
			case last = <-changed:
			case <-time.After(10 * time.Second):
				return p.fail("not every session's stream had its list_changed within 10 s of a save")
			}
		}
		var m []string
		if err := waitLog(logPath, func(s string) bool {
			all := cycleLine.FindAllStringSubmatch(s, -1)
			if len(all) > before {
				m = all[before]
				return true
			}
			return false
		}, 5*time.Second); err != nil {
			return p.fail("cycle line: %v", err)
		}
		bd, _ := time.ParseDuration(m[1])
		for _, cs := range sessions { // the clients' refresh
			if _, err := cs.ListTools(ctx, nil); err != nil {
				return err
			}
		}
		if r >= 0 {
			lat.addDur(last.Sub(t0))
			over.addDur(last.Sub(t0) - debounce - bd)
		}
	}
	res.add(stat("save → list_changed on every session's stream, "+what, uDur, &lat))
	res.add(stat("  the same − debounce − build", uDur, &over).judge("≤ 300 ms", over.median() <= float64(300*time.Millisecond)))
	if n == 1 {
		res.note("save: watch.debounce %s (the quiet time asked for, not mcpflow's), build = cp; the build's time from the log's line for each save; the restart restarts every session's process", debounce)
	}
	return nil
}

// stopHTTP stops the processes that serve HTTP (SIGTERM: their stdin is
// not a client) and the others as a client does.
func stopHTTP(res *result, ps ...*peer) {
	for _, p := range ps {
		if p == nil || p.closed {
			continue
		}
		if !strings.Contains(p.name, "http") {
			closeAll(res, p)
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.waited:
			p.closed = true
		case <-time.After(10 * time.Second):
			res.note("%s did not exit within 10s of SIGTERM; killed", p.name)
			p.kill()
		}
	}
}

// freePort is a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
