package mux

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// memFront is a Front that serves the mux's server to in-memory clients,
// as many as connect() makes, until ctx ends (as the HTTP front does).
type memFront struct {
	srv chan *mcp.Server
}

func (f *memFront) Serve(ctx context.Context, srv *mcp.Server) error {
	f.srv <- srv
	<-ctx.Done()
	for ss := range srv.Sessions() {
		ss.Close()
	}
	return nil
}

// multiClient is one in-memory client of the mux's Serve, with what
// reached it.
type multiClient struct {
	name string
	cs   *mcp.ClientSession

	mu       sync.Mutex
	progress []string // the token and value of each progress notification
	logs     []string
}

// serveMany runs m.Serve on a memFront and returns a function that
// connects a legacy client with roots root (the sampling answer names the
// client).
func serveMany(t *testing.T, m *Mux) func(name, root string) *multiClient {
	t.Helper()
	f := &memFront{srv: make(chan *mcp.Server, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, f) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Serve did not return after its context ended")
		}
	})
	var srv *mcp.Server
	select {
	case srv = <-f.srv:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve never served")
	}
	return func(name, root string) *multiClient {
		c := &multiClient{name: name}
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "answer of " + name}}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				c.mu.Lock()
				c.progress = append(c.progress, fmt.Sprint(r.Params.ProgressToken, "=", r.Params.Progress))
				c.mu.Unlock()
			},
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				c.mu.Lock()
				c.logs = append(c.logs, fmt.Sprint(r.Params.Data))
				c.mu.Unlock()
			},
		})
		client.AddRoots(&mcp.Root{URI: root})
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
		c.cs = testkit.Connect(t, "2025-06-18", client, ct)
		return c
	}
}

func (c *multiClient) call(t *testing.T, name string, args map[string]any, meta mcp.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %s: %v", c.name, name, err)
	}
	return testkit.Text(res)
}

// TestServeRoutesToTheCallingSession: with several client sessions, a
// child's sampling request, progress and logs reach the session whose call
// they belong to (the same progress token in two sessions included); the
// children's roots are those of the latest session, then of the one left
// when it ends; Sessions lists them.
func TestServeRoutesToTheCallingSession(t *testing.T) {
	t.Parallel()
	m := New(Config{
		Servers:              []ServerSpec{{Name: "s", Command: []string{testkit.Fixture(t)}}},
		ChildProtocolVersion: "2025-06-18", // a legacy child sends its own sampling and roots requests
	})
	connect := serveMany(t, m)
	a := connect("alice", "file:///a")
	b := connect("bob", "file:///b")

	for _, c := range []*multiClient{a, b} {
		if got := c.call(t, "s__legacy_sample", map[string]any{"text": "q"}, nil); got != "model said: answer of "+c.name {
			t.Errorf("%s's sampling went elsewhere: %q", c.name, got)
		}
	}

	// The same token in both sessions, at once.
	var wg sync.WaitGroup
	for _, c := range []*multiClient{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.call(t, "s__progress", map[string]any{"n": 3}, mcp.Meta{"progressToken": "tok"})
		}()
	}
	wg.Wait()
	for _, c := range []*multiClient{a, b} {
		testkit.Eventually(t, 10*time.Second, c.name+"'s 3 progress notifications", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return slices.Equal(c.progress, []string{"tok=1", "tok=2", "tok=3"})
		})
	}

	for _, c := range []*multiClient{a, b} {
		if err := c.cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
	}
	a.call(t, "s__log", map[string]any{"text": "for alice"}, nil)
	testkit.Eventually(t, 10*time.Second, "alice's log message", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return slices.Contains(a.logs, "for alice")
	})
	b.mu.Lock()
	if slices.Contains(b.logs, "for alice") {
		t.Errorf("bob got alice's log message")
	}
	b.mu.Unlock()

	// Roots: the latest session's (bob's), then alice's once bob leaves.
	testkit.Eventually(t, 10*time.Second, "bob's roots", func() bool {
		return a.call(t, "s__roots", nil, nil) == "roots: file:///b"
	})
	sessions := m.Sessions()
	if len(sessions) != 2 || sessions[0].Client.Name != "alice" || sessions[1].Client.Name != "bob" || sessions[0].Era != "legacy" {
		t.Fatalf("Sessions: %+v", sessions)
	}
	b.cs.Close()
	testkit.Eventually(t, 10*time.Second, "alice's roots after bob left", func() bool {
		return a.call(t, "s__roots", nil, nil) == "roots: file:///a"
	})
	testkit.Eventually(t, 10*time.Second, "bob's session gone", func() bool { return len(m.Sessions()) == 1 })
}
