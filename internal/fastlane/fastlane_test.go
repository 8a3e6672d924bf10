package fastlane

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var eras = []string{"2025-11-25", "2026-07-28"}

var impl = &mcp.Implementation{Name: "lane-test", Version: "1"}

// fixture is an SDK server with two tools, "slow" and "sdk", behind a lane
// that claims "fast", "block", "fail" and "notify".
type fixture struct {
	srv     *mcp.Server
	sdkRuns atomic.Int32 // calls the server's own handlers ran
	blocked chan struct{}
	ended   chan error // ctx.Err() of each "block" handler, once it returns
}

func newFixture() *fixture {
	f := &fixture{blocked: make(chan struct{}, 10), ended: make(chan error, 10)}
	f.srv = mcp.NewServer(impl, nil)
	for _, name := range []string{"fast", "sdk"} {
		f.srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.sdkRuns.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sdk " + req.Params.Name}}}, nil
		})
	}
	return f
}

func (f *fixture) route(c *Call) Handler {
	switch c.Name {
	case "fast":
		return func(ctx context.Context, c *Call) (json.RawMessage, error) {
			var p struct {
				Arguments struct{ Text string } `json:"arguments"`
			}
			json.Unmarshal(c.Params, &p)
			return Result(&mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "lane " + p.Arguments.Text}},
				StructuredContent: map[string]any{"n": 1},
			}, c.Modern, impl)
		}
	case "block":
		return func(ctx context.Context, c *Call) (json.RawMessage, error) {
			f.blocked <- struct{}{}
			<-ctx.Done()
			f.ended <- ctx.Err()
			return Result(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, c.Modern, impl)
		}
	case "fail":
		return func(ctx context.Context, c *Call) (json.RawMessage, error) {
			return nil, &jsonrpc.Error{Code: -32002, Message: "server down"}
		}
	case "notify":
		return func(ctx context.Context, c *Call) (json.RawMessage, error) {
			var tok any
			json.Unmarshal(c.ProgressToken(), &tok)
			if err := c.Notify("notifications/progress", map[string]any{"progressToken": tok, "progress": 1, "message": "half"}); err != nil {
				return nil, err
			}
			return Result(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, c.Modern, impl)
		}
	}
	return nil
}

// The two ways a lane is put in front of a server: WrapWith around an
// in-memory transport, and Stdio over OS pipes.
var vias = []string{"wrap", "stdio"}

// laneTransport is the server's transport with the lane of cfg, by via,
// and the client's transport to it.
func laneTransport(t *testing.T, via string, cfg Config) (client, server mcp.Transport) {
	t.Helper()
	if via == "wrap" {
		ct, st := mcp.NewInMemoryTransports()
		return ct, WrapWith(st, cfg)
	}
	inR, inW, err1 := os.Pipe()   // client to server
	outR, outW, err2 := os.Pipe() // server to client
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
	})
	return &mcp.IOTransport{Reader: outR, Writer: inW}, Stdio(inR, outW, cfg)
}

func (f *fixture) connectWith(t *testing.T, era string, opts *mcp.ClientOptions, cfg Config) *mcp.ClientSession {
	return f.connectVia(t, "wrap", era, opts, cfg)
}

// connectVia serves f's server over a lane of cfg, put in front by via,
// and connects an SDK client of era.
func (f *fixture) connectVia(t *testing.T, via, era string, opts *mcp.ClientOptions, cfg Config) *mcp.ClientSession {
	t.Helper()
	ct, st := laneTransport(t, via, cfg)
	ss, err := f.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, opts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// viaEras are the pairs of vias and eras a test runs in.
func viaEras() (out []struct{ via, era string }) {
	for _, via := range vias {
		for _, era := range eras {
			out = append(out, struct{ via, era string }{via, era})
		}
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestClaimedAndPassedCalls(t *testing.T) {
	for _, c := range viaEras() {
		t.Run(c.via+"/"+c.era, func(t *testing.T) {
			era := c.era
			f := newFixture()
			cs := f.connectVia(t, c.via, era, nil, Config{Route: f.route})
			ctx := context.Background()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || text(res) != "lane hi" {
				t.Fatalf("fast: %v %+v", err, res)
			}
			if m, ok := res.StructuredContent.(map[string]any); !ok || m["n"] != float64(1) {
				t.Errorf("structured content lost: %#v", res.StructuredContent)
			}
			if era >= modernVersion {
				if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
					t.Errorf("a 2026-07-28 result names no server: %v", res.Meta)
				}
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sdk"})
			if err != nil || text(res) != "sdk sdk" {
				t.Fatalf("sdk: %v %+v", err, res)
			}
			if n := f.sdkRuns.Load(); n != 1 {
				t.Errorf("the server ran %d calls, want 1 (only the unclaimed one)", n)
			}
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"})
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != -32002 {
				t.Errorf("fail: got %v, want the handler's JSON-RPC error", err)
			}
		})
	}
}

func TestCancelStopsTheHandlerAndSendsNoAnswer(t *testing.T) {
	for _, c := range viaEras() {
		t.Run(c.via+"/"+c.era, func(t *testing.T) {
			era := c.era
			f := newFixture()
			cs := f.connectVia(t, c.via, era, nil, Config{Route: f.route})
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
				errc <- err
			}()
			<-f.blocked
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("call: %v, want canceled", err)
			}
			select {
			case err := <-f.ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("handler's ctx: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the client's cancel never reached the handler")
			}
			// The session still works, and the cancel reached no one else.
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{"text": "after"}})
			if err != nil || text(res) != "lane after" {
				t.Fatalf("after cancel: %v %+v", err, res)
			}
		})
	}
}

func TestProgressFromAHandler(t *testing.T) {
	for _, c := range viaEras() {
		t.Run(c.via+"/"+c.era, func(t *testing.T) {
			era := c.era
			f := newFixture()
			got := make(chan *mcp.ProgressNotificationParams, 1)
			cs := f.connectVia(t, c.via, era, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				got <- req.Params
			}}, Config{Route: f.route})
			params := &mcp.CallToolParams{Name: "notify"}
			params.SetProgressToken("tok-1")
			if _, err := cs.CallTool(context.Background(), params); err != nil {
				t.Fatal(err)
			}
			select {
			case p := <-got:
				if p.ProgressToken != "tok-1" || p.Message != "half" {
					t.Errorf("progress: %+v", p)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no progress notification")
			}
		})
	}
}

func TestCloseEndsRunningHandlers(t *testing.T) {
	f := newFixture()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(context.Background(), Wrap(st, f.route), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block"})
	<-f.blocked
	ss.Close()
	select {
	case err := <-f.ended:
		if err == nil {
			t.Error("handler ended with a live context")
		}
	default:
		t.Fatal("Close returned before the running handler did")
	}
}

// rawConn connects to a lane-wrapped server without an SDK client, for
// what an SDK client never sends.
func rawConn(t *testing.T, f *fixture) mcp.Connection {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := f.srv.Connect(context.Background(), Wrap(st, f.route), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func roundTrip(t *testing.T, conn mcp.Connection, line string) *jsonrpc.Response {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(line))
	if err != nil {
		t.Fatalf("bad test line %s: %v", line, err)
	}
	if err := conn.Write(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res, ok := m.(*jsonrpc.Response); ok {
			return res
		}
	}
}

// The lane leaves to the server what it would refuse or treat specially: a
// call before the handshake, an unsupported protocol version, a retry of a
// multi-round-trip call.
func TestUnclaimedRequestsReachTheServer(t *testing.T) {
	f := newFixture()
	conn := rawConn(t, f)
	res := roundTrip(t, conn, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fast"}}`)
	if res.Error == nil || !strings.Contains(res.Error.Error(), "initialization") {
		t.Errorf("a call before initialize: got %v %s, want the server's refusal", res.Error, res.Result)
	}
	res = roundTrip(t, conn, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fast","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if res.Error == nil || !strings.Contains(res.Error.Error(), "unsupported protocol version") {
		t.Errorf("an unsupported version: got %v %s", res.Error, res.Result)
	}
	res = roundTrip(t, conn, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fast","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if res.Error == nil || !strings.Contains(res.Error.Error(), "clientCapabilities") {
		t.Errorf("no capabilities: got %v %s", res.Error, res.Result)
	}
	modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	res = roundTrip(t, conn, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fast","requestState":"x",`+modern+`}}`)
	if res.Error != nil || !strings.Contains(string(res.Result), "sdk fast") {
		t.Errorf("a retry with requestState went to the lane: %v %s", res.Error, res.Result)
	}
	res = roundTrip(t, conn, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fast",`+modern+`}}`)
	if res.Error != nil || !strings.Contains(string(res.Result), "lane ") || !strings.Contains(string(res.Result), `"resultType":"complete"`) {
		t.Errorf("a plain 2026-07-28 call: %v %s", res.Error, res.Result)
	}
	if n := f.sdkRuns.Load(); n != 1 {
		t.Errorf("the server ran %d calls, want 1", n)
	}
}

// A cacheable request is answered by the server once per key and protocol
// version, then from the cache; a new key goes to the server again.
func TestCacheAnswersRepeatsFromTheServersOwnAnswer(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			f := newFixture()
			var lists atomic.Int32
			f.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/list" {
						lists.Add(1)
					}
					return next(ctx, method, req)
				}
			})
			var gen atomic.Int32
			key := func(method string, params json.RawMessage) string {
				if method != "tools/list" {
					return ""
				}
				return string(rune('a' + gen.Load()))
			}
			cs := f.connectWith(t, era, nil, Config{Route: f.route, Cache: key})
			names := func() string {
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var n []string
				for _, tool := range res.Tools {
					n = append(n, tool.Name)
				}
				return strings.Join(n, ",")
			}
			first := names()
			if first != "fast,sdk" {
				t.Fatalf("tools: %s", first)
			}
			for range 3 {
				if got := names(); got != first {
					t.Errorf("cached list %s, want %s", got, first)
				}
			}
			if n := lists.Load(); n != 1 {
				t.Errorf("the server listed %d times, want 1", n)
			}
			f.srv.AddTool(&mcp.Tool{Name: "more", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
			gen.Add(1)
			if got := names(); got != "fast,more,sdk" {
				t.Errorf("after a new key: %s", got)
			}
			if n := lists.Load(); n != 2 {
				t.Errorf("the server listed %d times, want 2", n)
			}
		})
	}
}
