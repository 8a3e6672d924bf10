package httpmcp

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// serveFront serves srv on a front at 127.0.0.1:0 until the test ends.
func serveFront(t *testing.T, srv *mcp.Server, cfg FrontConfig) *Front {
	t.Helper()
	f, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, srv) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return within 5s of its context ending")
		}
	})
	return f
}

type echoArgs struct {
	Text string `json:"text"`
}

func echoServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	return srv
}

func TestFrontBothErasAndListChanged(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	sessions := map[string]bool{} // session ids seen by the traffic hook
	srv := echoServer()
	f := serveFront(t, srv, FrontConfig{Traffic: func(session string, toServer bool, msg []byte) {
		mu.Lock()
		sessions[session] = true
		mu.Unlock()
	}})
	if !strings.HasPrefix(f.URL(), "http://127.0.0.1:") || !strings.HasSuffix(f.URL(), "/mcp") {
		t.Fatalf("URL %q", f.URL())
	}
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		changed := make(chan struct{}, 4)
		client := mcp.NewClient(&mcp.Implementation{Name: "t-" + era.Name, Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case changed <- struct{}{}:
				default:
				}
			},
		})
		cs := testkit.Connect(t, era.Version, client, &mcp.StreamableClientTransport{Endpoint: f.URL()})
		if got := cs.InitializeResult().ProtocolVersion; got != era.Protocol {
			t.Fatalf("protocol %q, want %q", got, era.Protocol)
		}
		if era == testkit.Legacy && cs.ID() == "" {
			t.Fatal("a legacy session got no session id")
		}
		if era == testkit.Modern && cs.ID() != "" {
			t.Fatalf("a 2026-07-28 session got session id %q", cs.ID())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || testkit.Text(res) != "hi" {
			t.Fatalf("echo: %v %v", err, testkit.Text(res))
		}
		if era == testkit.Modern {
			// The 2026-07-28 client hears list_changed on a subscriptions/listen it opens itself.
			return
		}
		// The GET stream opens after initialize; a change before it may be missed.
		testkit.Eventually(t, 10*time.Second, "list_changed on the GET stream", func() bool {
			srv.AddTool(&mcp.Tool{Name: "extra", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
			defer srv.RemoveTools("extra")
			select {
			case <-changed:
				return true
			case <-time.After(300 * time.Millisecond):
				return false
			}
		})
		mu.Lock()
		defer mu.Unlock()
		if !sessions[cs.ID()] {
			t.Errorf("the traffic hook saw no message of session %q (saw %v)", cs.ID(), sessions)
		}
	})
}

func TestFrontRefusesForeignOriginAndOtherPaths(t *testing.T) {
	t.Parallel()
	f := serveFront(t, echoServer(), FrontConfig{})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(url, origin string) int {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for origin, want := range map[string]int{
		"https://evil.example":    http.StatusForbidden,
		"http://127.0.0.1.nip.io": http.StatusForbidden,
		"null":                    http.StatusForbidden,
		"http://localhost:6274":   http.StatusOK,
		"http://127.0.0.1:9":      http.StatusOK,
		"http://[::1]:3000":       http.StatusOK,
		"":                        http.StatusOK,
	} {
		if got := post(f.URL(), origin); got != want {
			t.Errorf("Origin %q: status %d, want %d", origin, got, want)
		}
	}
	if got := post(strings.TrimSuffix(f.URL(), "/mcp")+"/other", ""); got != http.StatusNotFound {
		t.Errorf("another path: status %d, want 404", got)
	}
}

func TestLoopbackOrigin(t *testing.T) {
	t.Parallel()
	for o, want := range map[string]bool{
		"http://localhost":        true,
		"https://LOCALHOST:8443":  true,
		"http://127.0.0.2:1":      true,
		"http://[::1]":            true,
		"http://localhost.evil":   false,
		"ftp://127.0.0.1":         false,
		"http://192.168.1.2":      false,
		"file://":                 false,
		"http://[::ffff:1.2.3.4]": false,
	} {
		if got := LoopbackOrigin(o); got != want {
			t.Errorf("LoopbackOrigin(%q) = %v, want %v", o, got, want)
		}
	}
}

func TestFrontShutdownEndsStreams(t *testing.T) {
	t.Parallel()
	f, err := Listen("127.0.0.1:0", FrontConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, echoServer()) }()
	cs := testkit.Connect(t, testkit.Legacy.Version, nil, &mcp.StreamableClientTransport{Endpoint: f.URL()})
	_ = cs
	time.Sleep(200 * time.Millisecond) // the GET stream opens
	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2*DefaultShutdownTimeout + time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	t.Logf("shutdown with an open GET stream took %v", time.Since(start))
}
