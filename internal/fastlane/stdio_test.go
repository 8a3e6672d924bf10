package fastlane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// starter claims "async" (answered later, from another goroutine), "sync"
// (answered inside the Starter) and "hold" (never answered; its cancel is
// recorded).
type starter struct {
	mu       sync.Mutex
	canceled []string // arguments.text of each canceled "hold"
	held     chan struct{}
}

func (s *starter) start(c *Call) Starter {
	var p struct {
		Arguments struct{ Text string } `json:"arguments"`
	}
	json.Unmarshal(c.Params, &p)
	res := func(text string) json.RawMessage {
		b, _ := Result(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, c.Modern, impl)
		return b
	}
	switch c.Name {
	case "async":
		return func(c *Call, reply Reply) func() {
			go func() {
				time.Sleep(10 * time.Millisecond)
				reply(res("async "+p.Arguments.Text), nil)
				reply(res("a second reply"), nil) // ignored
			}()
			return nil
		}
	case "sync":
		return func(c *Call, reply Reply) func() {
			reply(res("sync "+p.Arguments.Text), nil)
			return func() { panic("cancel of an answered call") }
		}
	case "hold":
		return func(c *Call, reply Reply) func() {
			s.held <- struct{}{}
			return func() {
				s.mu.Lock()
				s.canceled = append(s.canceled, p.Arguments.Text)
				s.mu.Unlock()
				reply(res("after cancel"), nil) // not sent
			}
		}
	}
	return nil
}

func (s *starter) cancels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.canceled...)
}

// A Starter answers through its reply, once, from any goroutine; a cancel
// reaches it and no answer follows; and what it leaves goes to Route and
// then to the server. Both vias.
func TestStarter(t *testing.T) {
	for _, c := range viaEras() {
		t.Run(c.via+"/"+c.era, func(t *testing.T) {
			f := newFixture()
			s := &starter{held: make(chan struct{}, 4)}
			cs := f.connectVia(t, c.via, c.era, nil, Config{Start: s.start, Route: f.route})
			ctx := context.Background()
			for name, want := range map[string]string{"async": "async a", "sync": "sync a", "fast": "lane a", "sdk": "sdk sdk"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "a"}})
				if err != nil || text(res) != want {
					t.Errorf("%s: %v %+v, want %q", name, err, res, want)
				}
			}
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "hold", Arguments: map[string]any{"text": "h1"}})
				errc <- err
			}()
			<-s.held
			cancel()
			<-errc
			deadline := time.Now().Add(10 * time.Second)
			for len(s.cancels()) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := s.cancels(); len(got) != 1 || got[0] != "h1" {
				t.Fatalf("cancels = %q, want [h1]", got)
			}
			// The session goes on; the reply after the cancel was dropped
			// (a stray answer would make the SDK client log and drop it,
			// and the next call would still pass: the raw test checks
			// that none is written).
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sync", Arguments: map[string]any{"text": "b"}})
			if err != nil || text(res) != "sync b" {
				t.Errorf("after the cancel: %v %+v", err, res)
			}
		})
	}
}

// rawStdio serves f's server with Stdio(cfg) over OS pipes and returns a
// writer for the server's input and the lines of its output.
func rawStdio(t *testing.T, f *fixture, cfg Config) (in *os.File, out <-chan string) {
	t.Helper()
	ct, st := laneTransport(t, "stdio", cfg)
	ss, err := f.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	io := ct.(*mcp.IOTransport)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(io.Reader)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return io.Writer.(*os.File), lines
}

func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return ""
	}
}

// What no SDK client sends, on the byte stream: lines the lane must leave
// to the server (bad JSON, a batch), ids it must echo exactly, a last line
// without a newline, and no answer after a cancel.
func TestStdioRawLines(t *testing.T) {
	f := newFixture()
	s := &starter{held: make(chan struct{}, 4)}
	in, out := rawStdio(t, f, Config{Start: s.start, Route: f.route})
	send := func(line string) {
		t.Helper()
		if _, err := in.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	send("{not json}\n")
	if l := next(t, out); !strings.Contains(l, `"error"`) || !strings.Contains(l, `"id":null`) && strings.Contains(l, `"id"`) {
		t.Errorf("bad JSON: %s, want the server's parse error", l)
	}
	// Each of these would end the SDK connection's session; each gets an
	// error answer instead, and the session goes on.
	for _, bad := range []string{"42", `{"foo":1}`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, "\"\xff\"", `[1]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`} {
		send(bad + "\n")
		if l := next(t, out); !strings.Contains(l, `"error"`) || !strings.Contains(l, `"id":null`) {
			t.Errorf("%q: got %s, want an error answer with id null", bad, l)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	if l := next(t, out); !strings.Contains(l, `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize: %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	// Ids come back exactly as sent, escapes and all.
	send(`{"jsonrpc":"2.0","id":"é\"\u0001x","method":"tools/call","params":{"name":"sync","arguments":{"text":"s"}}}` + "\n")
	l := next(t, out)
	var resp struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(l), &resp); err != nil || resp.ID != "é\"\x01x" || !strings.Contains(string(resp.Result), "sync s") {
		t.Errorf("string id: %s (%v)", l, err)
	}
	// A batch goes to the server whole (2025-03-26 has batches).
	before := f.sdkRuns.Load()
	send(`[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sdk"}}]` + "\n")
	if l := next(t, out); !strings.HasPrefix(l, "[") || !strings.Contains(l, "sdk sdk") {
		t.Errorf("batch: %s", l)
	}
	if f.sdkRuns.Load() != before+1 {
		t.Error("the batch's call did not reach the server")
	}
	// A canceled call gets no answer, even though the Starter replies.
	send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"hold","arguments":{"text":"h"}}}` + "\n")
	<-s.held
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}` + "\n")
	// The last line has no newline: the end of the input ends it. (A
	// Starter that answers at once: the session ends with the input.)
	send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"sync","arguments":{"text":"end"}}}`)
	in.Close()
	l = next(t, out)
	if !strings.Contains(l, `"id":9`) || !strings.Contains(l, "sync end") {
		t.Errorf("after the cancel, got %s; want the answer to id 9 (and none to id 8)", l)
	}
	if got := s.cancels(); len(got) != 1 {
		t.Errorf("cancels: %q", got)
	}
	select {
	case l := <-out:
		t.Errorf("unexpected output after the last answer: %s", l)
	case <-time.After(200 * time.Millisecond):
	}
}

// FuzzRequest: whatever the lane reads as a request, the SDK reads as the
// same request (method, id, params), so a line the lane leaves to the
// server and one it takes mean the same to both.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":"a\"b","method":"notifications/cancelled","params":{"requestId":"a\"b"}}`,
		`{"jsonrpc":"2.0","method":"tools/list"}`, `{"jsonrpc":"2.0","id":1.5,"method":"m"}`, `{"jsonrpc":"1.0","id":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`, `{"jsonrpc":"2.0","id":1,"method":"\u0074ools/call"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !jsonscan.Valid(b) || len(b) == 0 || b[0] != '{' {
			return
		}
		got, ok := request(b)
		if !ok {
			return
		}
		msg, err := jsonrpc.DecodeMessage(b)
		if err != nil {
			t.Fatalf("the lane reads %q as a request; the SDK fails: %v", b, err)
		}
		want, isReq := msg.(*jsonrpc.Request)
		if !isReq {
			t.Fatalf("the lane reads %q as a request; the SDK as %T", b, msg)
		}
		if got.Method != want.Method || got.ID != want.ID || !bytes.Equal(bytes.TrimSpace(got.Params), bytes.TrimSpace(want.Params)) {
			t.Fatalf("%q: lane %q %v %s, SDK %q %v %s", b, got.Method, got.ID, got.Params, want.Method, want.ID, want.Params)
		}
	})
}
