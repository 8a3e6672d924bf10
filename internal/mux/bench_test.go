package mux

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmarks time what a user of the mux waits for: the start-up of N
// servers behind it against the children's own start, add_server until
// its tools are listed, and tools/list over 20 servers × 50 tools as the
// mux answers it on its stdio transport (make bench runs them with fixed
// iteration counts). The per-call overhead is measured through the binary
// (bench/, section 7).

func benchClient(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// benchMux is a mux serving an SDK client on its stdio transport.
type benchMux struct {
	m    *Mux
	cs   *mcp.ClientSession
	done chan error
}

func newBenchMux(b *testing.B, cfg Config) *benchMux {
	b.Helper()
	bm := &benchMux{m: New(cfg), done: make(chan error, 1)}
	c2mR, c2mW := io.Pipe()
	m2cR, m2cW := io.Pipe()
	go func() {
		bm.done <- serve(context.Background(), bm.m, wire.NewReader(c2mR, 0), m2cW, wire.ServeOptions{})
		m2cW.Close()
	}()
	bm.cs = benchClient(b, &mcp.IOTransport{Reader: m2cR, Writer: c2mW})
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
		b.Fatalf("%s: %v %s", name, err, testkit.Text(res))
	}
	return res
}

// BenchmarkStartServers is the time from Run to a client that sees the
// tools of N configured servers.
func BenchmarkStartServers(b *testing.B) {
	for _, n := range []int{1, 5, 10} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			var specs []ServerSpec
			for i := range n {
				specs = append(specs, ServerSpec{Name: fmt.Sprintf("s%d", i), Command: []string{testkit.Fixture(b)}})
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
						cs := benchClient(b, &mcp.CommandTransport{Command: exec.Command(testkit.Fixture(b))})
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
		bm.call(b, "add_server", map[string]any{"name": name, "command": testkit.Fixture(b)})
		b.StopTimer()
		bm.call(b, "remove_server", map[string]any{"name": name})
		b.StartTimer()
	}
}

// BenchmarkToolsList20x50 is tools/list (every page) with 20 servers of 50
// tools each behind the mux, on its stdio transport: the client writes
// request lines and reads answer lines, looking only for its id and
// nextCursor, so the time is the mux's.
func BenchmarkToolsList20x50(b *testing.B) {
	m := New(Config{})
	c2mR, c2mW := io.Pipe()
	m2cR, m2cW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(context.Background(), m, wire.NewReader(c2mR, 0), m2cW, wire.ServeOptions{})
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
	call("add_server", map[string]any{"name": "s0", "command": testkit.Fixture(b)})
	grow := 50 - len(m.List(false)[0].Tools) // to 50 listed tools each
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%d", i)
			if i > 0 {
				call("add_server", map[string]any{"name": name, "command": testkit.Fixture(b)})
			}
			call(name+"__grow", map[string]any{"n": grow})
		}()
	}
	wg.Wait()
	total := 0
	if !testkit.Wait(time.Minute, func() bool {
		total = 0
		for _, s := range m.List(false) {
			total += len(s.Tools)
		}
		return total >= 20*50
	}) {
		b.Fatalf("only %d tools listed", total)
	}
}
