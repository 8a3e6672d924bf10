package mux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmarks compare one small tools/call (the fixture's echo, Go SDK
// client, default era) three ways, in one run:
//
//	direct: client --stdio--> child
//	relay:  client --pipes--> relay.Relay --stdio--> child   (mcpflow watch's path)
//	mux:    client --pipes--> Mux --pipes--> relay.Relay --stdio--> child
//
// and the start-up of N servers behind the mux, add_server → tools
// visible against the child's own start, and tools/list over 20 servers ×
// 50 tools:
//
//	make bench (which runs these with fixed iteration counts)

func benchClient(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

func benchEcho(b *testing.B, cs *mcp.ClientSession, tool string) {
	b.Helper()
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hi"}}
	if _, err := cs.CallTool(ctx, params); err != nil { // warm up
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
	b.StopTimer()
}

func BenchmarkCallDirect(b *testing.B) {
	cs := benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixtureV1)})
	defer cs.Close()
	benchEcho(b, cs, "echo")
}

func BenchmarkCallRelay(b *testing.B) {
	cs, stop := benchRelay(b)
	defer stop()
	benchEcho(b, cs, "echo")
}

// benchRelay is a client of a relay.Relay serving the fixture over pipes
// (mcpflow watch's path); stop closes both.
func benchRelay(b *testing.B) (*mcp.ClientSession, func()) {
	r := relay.New(relay.Config{Command: []string{fixtureV1}})
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Serve(ctx, c2rR, r2cW)
		r2cW.Close()
	}()
	if _, err := r.Restart(ctx); err != nil {
		b.Fatal(err)
	}
	cs := benchClient(b, &mcp.IOTransport{Reader: r2cR, Writer: c2rW, MaxLineLength: -1})
	return cs, func() {
		cs.Close()
		cancel()
		<-done
	}
}

// benchMux is a mux serving an in-memory client.
type benchMux struct {
	m    *Mux
	cs   *mcp.ClientSession
	done chan error
}

func newBenchMux(b *testing.B, cfg Config) *benchMux {
	b.Helper()
	bm := &benchMux{m: New(cfg), done: make(chan error, 1)}
	ct, st := mcp.NewInMemoryTransports()
	go func() { bm.done <- bm.m.Run(context.Background(), st) }()
	bm.cs = benchClient(b, ct)
	return bm
}

func (bm *benchMux) close() {
	bm.cs.Close()
	<-bm.done
}

func (bm *benchMux) call(b *testing.B, name string, args any) *mcp.CallToolResult {
	b.Helper()
	res, err := bm.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %s", name, err, text(res))
	}
	return res
}

func BenchmarkCallMux(b *testing.B) {
	bm := newBenchMux(b, Config{})
	defer bm.close()
	bm.call(b, "add_server", map[string]any{"name": "fx", "command": fixtureV1})
	benchEcho(b, bm.cs, "fx__echo")
}

// BenchmarkCallPaths times the same small call through the three paths
// of BenchmarkCallDirect, -Relay and -Mux, one of each per iteration, so
// that the machine's load hits the three alike; it reports the median of
// each path and the mux's median against the direct one (the issue's "≤ 2×
// the floor").
func BenchmarkCallPaths(b *testing.B) {
	direct := benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixtureV1)})
	defer direct.Close()

	viaRelay, stop := benchRelay(b)
	defer stop()

	bm := newBenchMux(b, Config{})
	defer bm.close()
	bm.call(b, "add_server", map[string]any{"name": "fx", "command": fixtureV1})

	paths := []struct {
		cs   *mcp.ClientSession
		tool string
		d    []time.Duration
	}{{cs: direct, tool: "echo"}, {cs: viaRelay, tool: "echo"}, {cs: bm.cs, tool: "fx__echo"}}
	for i := range paths {
		benchEcho1(b, paths[i].cs, paths[i].tool) // warm up
	}
	for b.Loop() {
		for i := range paths {
			t0 := time.Now()
			benchEcho1(b, paths[i].cs, paths[i].tool)
			paths[i].d = append(paths[i].d, time.Since(t0))
		}
	}
	med := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds()) / 1e3
	}
	b.ReportMetric(med(paths[0].d), "p50-direct-µs")
	b.ReportMetric(med(paths[1].d), "p50-relay-µs")
	b.ReportMetric(med(paths[2].d), "p50-mux-µs")
	b.ReportMetric(med(paths[2].d)/med(paths[0].d), "mux/direct")
	if n := bm.m.laneCalls.Load(); n < int64(b.N) {
		b.Errorf("only %d of %d mux calls took the side door", n, b.N)
	}
}

func benchEcho1(b *testing.B, cs *mcp.ClientSession, tool string) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", tool, err, res)
	}
}

// BenchmarkStartServers is the time from Run to a client that sees the
// tools of N configured servers.
func BenchmarkStartServers(b *testing.B) {
	for _, n := range []int{1, 5, 10} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var specs []ServerSpec
			for i := range n {
				specs = append(specs, ServerSpec{Name: fmt.Sprintf("s%d", i), Command: []string{fixtureV1}})
			}
			for range b.N {
				bm := newBenchMux(b, Config{Servers: specs})
				count := 0
				for _, err := range bm.cs.Tools(context.Background(), nil) {
					if err != nil {
						b.Fatal(err)
					}
					count++
				}
				if count < n*10 {
					b.Fatalf("%d tools for %d servers", count, n)
				}
				b.StopTimer()
				bm.close()
				b.StartTimer()
			}
		})
	}
}

// BenchmarkChildStart is N children's own start, all at once, each
// spawned, handshaken and listed by its own SDK client: the floor of
// BenchmarkStartServers.
func BenchmarkChildStart(b *testing.B) {
	for _, n := range []int{1, 5, 10} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for range b.N {
				sessions := make([]*mcp.ClientSession, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						cs := benchClient(b, &mcp.CommandTransport{Command: exec.Command(fixtureV1)})
						for _, err := range cs.Tools(context.Background(), nil) {
							if err != nil {
								b.Error(err)
							}
						}
						sessions[i] = cs
					}()
				}
				wg.Wait()
				b.StopTimer()
				for _, cs := range sessions {
					cs.Close()
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkAddServer is add_server until its result (tools listed), then
// remove_server outside the timer.
func BenchmarkAddServer(b *testing.B) {
	bm := newBenchMux(b, Config{})
	defer bm.close()
	for i := range b.N {
		name := fmt.Sprintf("a%d", i)
		bm.call(b, "add_server", map[string]any{"name": name, "command": fixtureV1})
		b.StopTimer()
		bm.call(b, "remove_server", map[string]any{"name": name})
		b.StartTimer()
	}
}

// BenchmarkToolsList20x50 is tools/list (every page) with 20 servers of
// 50 tools each behind the mux, through the Go SDK's client (which
// validates every tool: most of the time is the client's).
func BenchmarkToolsList20x50(b *testing.B) {
	bm := newBenchMux(b, Config{})
	defer bm.close()
	fill20x50(b, bm.m, func(name string, args map[string]any) { bm.call(b, name, args) })
	b.ResetTimer()
	for range b.N {
		count := 0
		for _, err := range bm.cs.Tools(context.Background(), nil) {
			if err != nil {
				b.Fatal(err)
			}
			count++
		}
		if count < 20*50 {
			b.Fatalf("tools/list: %d tools", count)
		}
	}
}

// BenchmarkToolsList20x50Raw is the same tools/list as the mux answers it
// on stdio (RunStdio, as mcpflow mux does): the client writes request
// lines and reads answer lines, looking only for its id and nextCursor, so
// the time is the mux's.
func BenchmarkToolsList20x50Raw(b *testing.B) {
	m := New(Config{})
	c2mR, c2mW := io.Pipe()
	m2cR, m2cW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- m.RunStdio(context.Background(), c2mR, m2cW)
		m2cW.Close()
	}()
	defer func() {
		c2mW.Close()
		<-done
	}()
	lines := bufio.NewReaderSize(m2cR, 1<<20)
	var mu sync.Mutex // one request at a time
	id := 0
	rpc := func(method, params string) []byte {
		mu.Lock()
		defer mu.Unlock()
		id++
		if _, err := fmt.Fprintf(c2mW, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
			b.Fatal(err)
		}
		want := []byte(fmt.Sprintf(`"id":%d,`, id))
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			head := line[:min(len(line), 40)]
			if !bytes.Contains(head, want) || bytes.Contains(head, []byte(`"method"`)) {
				continue // a notification, or a request of the mux's
			}
			if bytes.Contains(head, []byte(`"error"`)) {
				b.Fatalf("%s: %s", method, line)
			}
			return line
		}
	}
	rpc("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if _, err := io.WriteString(c2mW, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`+"\n"); err != nil {
		b.Fatal(err)
	}
	fill20x50(b, m, func(name string, args map[string]any) {
		p, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
		if res := rpc("tools/call", string(p)); bytes.Contains(res, []byte(`"isError":true`)) {
			b.Fatalf("%s: %s", name, res)
		}
	})
	key := []byte(`"nextCursor":"`)
	b.ResetTimer()
	for range b.N {
		pages, params := 0, `{}`
		for {
			res := rpc("tools/list", params)
			pages++
			i := bytes.Index(res, key)
			if i < 0 {
				break
			}
			cursor, _, _ := bytes.Cut(res[i+len(key):], []byte(`"`))
			params = `{"cursor":"` + string(cursor) + `"}`
		}
		if pages < 2 {
			b.Fatalf("tools/list: %d pages (1,000-tool pages: expected 2)", pages)
		}
	}
}

// fill20x50 adds 20 fixture servers with 50 listed tools each.
func fill20x50(b *testing.B, m *Mux, call func(name string, args map[string]any)) {
	call("add_server", map[string]any{"name": "s0", "command": fixtureV1})
	grow := 50 - len(m.List(false)[0].Tools) // to 50 listed tools each
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%d", i)
			if i > 0 {
				call("add_server", map[string]any{"name": name, "command": fixtureV1})
			}
			call(name+"__grow", map[string]any{"n": grow})
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		total := 0
		for _, s := range m.List(false) {
			total += len(s.Tools)
		}
		if total >= 20*50 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d tools listed", total)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
