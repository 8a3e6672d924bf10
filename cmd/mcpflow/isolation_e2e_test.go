//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// isoClient is one of two Go SDK clients of one mcpflow's HTTP front,
// recording everything the server sends it.
type isoClient struct {
	name string
	h    *httpRun
	cs   *mcp.ClientSession

	mu    sync.Mutex
	got   []string      // what reached it, in order: "sampling hi", "log x", ...
	hold  chan struct{} // while set, its sampling handler waits on it
	asked chan string   // told what its sampling handler was asked
	tools chan struct{} // a tools/list_changed came
}

func (c *isoClient) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, fmt.Sprintf(format, args...))
}

func (c *isoClient) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

func connectIso(t *testing.T, h *httpRun, name string) *isoClient {
	t.Helper()
	c := &isoClient{name: name, h: h, asked: make(chan string, 4), tools: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: "iso-" + name, Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			in := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			c.note("sampling %s", in)
			c.asked <- in
			c.mu.Lock()
			hold := c.hold
			c.mu.Unlock()
			if hold != nil {
				select {
				case <-hold:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: name + ":" + in}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.note("elicitation %s", r.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": name}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.note("log %v", r.Params.Data)
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.note("progress %v", r.Params.ProgressToken)
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.note("updated %s", r.Params.URI)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.note("tools changed")
			select {
			case c.tools <- struct{}{}:
			default:
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///" + name})
	c.cs = testkit.Connect(t, testkit.Legacy.Version, client, &mcp.StreamableClientTransport{Endpoint: h.url, MaxRetries: -1})
	return c
}

func (c *isoClient) call(t *testing.T, name string, args map[string]any, meta mcp.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if meta != nil {
		p.Meta = meta
	}
	res, err := c.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: call %s: %v", c.name, name, err)
	}
	if res.IsError {
		t.Fatalf("%s: call %s: tool error %s", c.name, name, testkit.Text(res))
	}
	return testkit.Text(res)
}

// post sends one raw message on the client's HTTP session and returns the
// answer's status and body.
func (c *isoClient) post(t *testing.T, msg string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.h.url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.cs.ID())
	req.Header.Set("Mcp-Protocol-Version", testkit.Legacy.Protocol)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: POST: %v", c.name, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// TestIsolation: two HTTP clients, A and B, of one mcpflow — in front of
// a stdio server, of an HTTP server, and as a mux over a stdio server —
// each get what the server sends their own session, and nothing of the
// other's: sampling, elicitation and roots requests, log messages,
// progress, resources/updated and list_changed all reach only the client
// whose call caused them, while the other has a call in flight (the one a
// guess by recency would pick); B can neither answer A's server requests,
// nor cancel A's call, by their ids; envelopes that name a member twice
// are refused; and a server request whose client left gets an error
// answer at the server.
func TestIsolation(t *testing.T) {
	t.Parallel()
	for _, setup := range []struct {
		name string
		mode transparencyMode
		run  childRun
	}{
		{"stdio-child", transparencyModes[1], childRun{command: []string{fixtureBin}}},
		{"http-child", transparencyModes[1], childRun{command: []string{fixtureBin, "-http", "127.0.0.1:{port}"}, http: true}},
		{"mux", transparencyModes[3], childRun{command: []string{fixtureBin}}},
	} {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			dir := mcpflowProject(t, setup.mode, setup.run)
			capture := filepath.Join(t.TempDir(), "traffic.jsonl")
			h := startHTTP(t, dir, "watch", "-c", "mcpflow.toml", "--http", "127.0.0.1:0", "--traffic", capture)
			tool := func(n string) string {
				if setup.mode.mux {
					return "s__" + n
				}
				return n
			}
			a, b := connectIso(t, h, "A"), connectIso(t, h, "B")
			// As clients do after their handshake, each lists its tools;
			// what B heard of its own server's start is not A's.
			for _, c := range []*isoClient{a, b} {
				if !testkit.Wait(30*time.Second, func() bool { return slices.Contains(tools(t, c), tool("echo")) }) {
					t.Fatalf("%s: its server's tools are not listed", c.name)
				}
			}
			time.Sleep(100 * time.Millisecond)
			b.mu.Lock()
			b.got = nil
			b.mu.Unlock()

			// B has a call in flight, the newest, while A's calls make
			// the server send their session what they send.
			slow := make(chan string, 1)
			go func() { slow <- b.call(t, tool("slow"), map[string]any{"ms": 3000}, nil) }()
			time.Sleep(200 * time.Millisecond) // B's call reaches its server first: what follows is A's
			if got := a.call(t, tool("legacy_sample"), map[string]any{"text": "hi"}, nil); got != "model said: A:hi" {
				t.Errorf("A's sampling: %q", got)
			}
			if got := a.call(t, tool("elicit"), map[string]any{"text": "q"}, nil); got != "elicited accept A" {
				t.Errorf("A's elicitation: %q", got)
			}
			if got := a.call(t, tool("legacy_roots"), nil, nil); got != "roots: file:///A" {
				t.Errorf("A's roots: %q", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// The Go SDK's server logs only to a client that set a level.
			if err := a.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatalf("A sets its level: %v", err)
			}
			a.call(t, tool("log"), map[string]any{"text": "from A"}, nil)
			a.call(t, tool("progress"), map[string]any{"n": 3}, mcp.Meta{"progressToken": "tokA"})
			if err := a.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fixture://fixture/info"}); err != nil {
				t.Fatalf("A subscribes: %v", err)
			}
			a.call(t, tool("touch"), nil, nil)
			a.call(t, tool("grow"), map[string]any{"n": 1}, nil)
			select {
			case <-a.tools:
			case <-time.After(30 * time.Second):
				t.Error("A heard no list_changed after its server grew")
			}
			if got := <-slow; got != "slept 3000" {
				t.Errorf("B's call: %q", got)
			}
			if !testkit.Wait(10*time.Second, func() bool {
				got := strings.Join(a.seen(), "\n")
				return strings.Contains(got, "log from A") && strings.Count(got, "progress tokA") == 3 && strings.Contains(got, "updated fixture://fixture/info")
			}) {
				t.Errorf("A's log, progress and update did not all come; it got %q", a.seen())
			}
			// What reaches A's session after its calls reaches it before
			// them: time let pass for anything of A's to reach B. An HTTP
			// server is one process for both: the tool A's call added is
			// the server's, B hears of it as it would directly.
			time.Sleep(300 * time.Millisecond)
			shared := setup.run.http
			if got := slices.DeleteFunc(b.seen(), func(s string) bool { return shared && s == "tools changed" }); len(got) > 0 {
				t.Errorf("B got what belongs to A's session: %q", got)
			}
			for _, want := range []string{"sampling hi", "elicitation q", "log from A", "updated fixture://fixture/info", "tools changed"} {
				if !slices.Contains(a.seen(), want) {
					t.Errorf("A did not get %q; it got %q", want, a.seen())
				}
			}
			if slices.ContainsFunc(tools(t, b), func(n string) bool { return strings.Contains(n, "dyn_0") }) != shared {
				t.Errorf("B lists the tool A's server added: %v, want %v (one server process for both)", !shared, shared)
			}

			// B answers server requests by ids of mcpflow's scheme and
			// cancels A's call by its id: A's sampling request waits for
			// A's own answer, A's call completes.
			hold := make(chan struct{})
			a.mu.Lock()
			a.hold = hold
			a.mu.Unlock()
			asked := make(chan string, 1)
			go func() { asked <- a.call(t, tool("legacy_sample"), map[string]any{"text": "mine"}, nil) }()
			awaitAsked(t, a, "mine")
			for i := 1; i <= 40; i++ {
				for _, prefix := range []string{"mcpflow:s", "mcpflow:m", "mcpflow:r"} {
					b.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s%d","result":{"role":"assistant","model":"m","content":{"type":"text","text":"B answers"}}}`, prefix, i))
				}
				b.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i))
			}
			close(hold)
			select {
			case got := <-asked:
				if got != "model said: A:mine" {
					t.Errorf("A's sampling after B's answers: %q", got)
				}
			case <-time.After(30 * time.Second):
				t.Error("A's call did not complete")
			}

			// Envelopes that name a member twice, or in another case.
			for _, msg := range []string{
				`{"jsonrpc":"2.0","id":77,"method":"tools/list","method":"tools/call","params":{"name":"` + tool("exit") + `"}}`,
				`{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"` + tool("echo") + `","arguments":{"text":"x"},"_meta":{"progressToken":1,"progressToken":2}}}`,
				`{"jsonrpc":"2.0","id":79,"method":"tools/call","params":{"Name":"` + tool("exit") + `","name":"` + tool("echo") + `","arguments":{"text":"x"}}}`,
			} {
				if status, body := b.post(t, msg); !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, "named twice") {
					t.Errorf("an ambiguous message got %d %s", status, body)
				}
			}
			if got := b.call(t, tool("echo"), map[string]any{"text": "still"}, nil); !strings.HasSuffix(got, "still") {
				t.Errorf("B after its bad messages: %q", got)
			}

			// A leaves while its server waits for its answer to sampling:
			// the server gets an error answer.
			hold = make(chan struct{})
			a.mu.Lock()
			a.hold = hold
			a.mu.Unlock()
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, _ = a.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool("legacy_sample"), Arguments: map[string]any{"text": "gone"}})
			}()
			awaitAsked(t, a, "gone")
			// A leaves as a client that goes away does: its session
			// deleted while its handler still thinks (the SDK's Close
			// would wait for the handler, which would answer first).
			req, _ := http.NewRequest(http.MethodDelete, h.url, nil)
			req.Header.Set("Mcp-Session-Id", a.cs.ID())
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Fatalf("A's DELETE: %v", err)
			} else {
				resp.Body.Close()
			}
			close(hold)
			a.cs.Close()
			if got := b.call(t, tool("echo"), map[string]any{"text": "after A"}, nil); !strings.HasSuffix(got, "after A") {
				t.Errorf("B after A left: %q", got)
			}
			h.stop()
			rec, err := os.ReadFile(capture)
			if err != nil {
				t.Fatal(err)
			}
			if setup.run.http && !strings.Contains(string(rec), texts.ErrClientLeft) {
				// A stdio server of A's is stopped with A's session: its
				// request needs no answer.
				t.Error("the server's request to A, which left, got no error answer")
			}
		})
	}
}

// tools lists c's tools.
func tools(t *testing.T, c *isoClient) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("%s: tools/list: %v", c.name, err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// awaitAsked waits until c's sampling handler is asked about text.
func awaitAsked(t *testing.T, c *isoClient, text string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case in := <-c.asked:
			if in == text {
				return
			}
		case <-deadline:
			t.Fatalf("%s's sampling handler was not asked about %q", c.name, text)
		}
	}
}
