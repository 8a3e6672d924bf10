package mux

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// env is one mux serving one SDK client in memory.
type env struct {
	t      *testing.T
	m      *Mux
	cs     *mcp.ClientSession
	done   chan error
	cancel context.CancelFunc
	once   sync.Once

	mu       sync.Mutex
	changed  int // tools/list_changed received
	progress []float64
	logs     []*mcp.LoggingMessageParams
}

type envOpts struct {
	cfg      Config
	version  string // client protocol version; "" = SDK latest
	sampling bool
	client   string // the client's name; "" = "test"
}

func start(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{t: t, done: make(chan error, 1)}
	e.m = New(o.cfg)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	// The client talks to the mux over two OS pipes, through the transport
	// mcpflow mux serves its stdio with.
	ct := testkit.Pipes(t, func(in io.Reader, out io.Writer) error {
		e.done <- serve(ctx, e.m, wire.NewReader(in, 0), out, wire.ServeOptions{})
		return nil // shutdown checks Run's error
	})
	copts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			e.mu.Lock()
			e.changed++
			e.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			e.mu.Lock()
			e.progress = append(e.progress, r.Params.Progress)
			e.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			e.mu.Lock()
			e.logs = append(e.logs, r.Params)
			e.mu.Unlock()
		},
	}
	if o.sampling {
		copts.CreateMessageHandler = func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			in := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "echo of " + in}}, nil
		}
	}
	name := o.client
	if name == "" {
		name = "test"
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, copts)
	client.AddRoots(&mcp.Root{URI: "file:///proj", Name: "proj"})
	e.cs = testkit.Connect(t, o.version, client, ct)
	t.Cleanup(func() { e.shutdown() })
	return e
}

// shutdown closes the client, waits for the mux and checks that no child
// it started is left.
func (e *env) shutdown() {
	e.once.Do(e.doShutdown)
}

func (e *env) doShutdown() {
	var pids []int
	for _, s := range e.m.List(false) {
		if s.Pid != 0 {
			pids = append(pids, s.Pid)
		}
	}
	if e.cs != nil {
		e.cs.Close()
	}
	select {
	case err := <-e.done:
		if err != nil {
			e.t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.t.Errorf("Run did not return after the client left")
		e.cancel()
		<-e.done
	}
	e.cancel()
	for _, pid := range pids {
		if testkit.Alive(pid) {
			e.t.Errorf("child %d is still running after shutdown", pid)
		}
	}
	// Nor anything in their process groups, once killed ones are reaped.
	testkit.NoLeftovers(e.t, testkit.Procs{Groups: pids})
}

func (e *env) call(name string, args any) *mcp.CallToolResult {
	e.t.Helper()
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// mustOK calls a tool and fails the test on a tool error.
func (e *env) mustOK(name string, args any) string {
	e.t.Helper()
	res := e.call(name, args)
	if res.IsError {
		e.t.Fatalf("%s: tool error: %s", name, testkit.Text(res))
	}
	return testkit.Text(res)
}

func (e *env) mustFail(name string, args any, want ...string) string {
	e.t.Helper()
	var text string
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	switch {
	case err != nil:
		text = err.Error() // an error answer: the relay's for a call its server died under
	case !res.IsError:
		e.t.Fatalf("%s succeeded, want an error: %s", name, testkit.Text(res))
	default:
		text = testkit.Text(res)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			e.t.Errorf("%s: error %q does not mention %q", name, text, w)
		}
	}
	return text
}

func (e *env) toolNames() map[string]*mcp.Tool {
	e.t.Helper()
	out := map[string]*mcp.Tool{}
	for t, err := range e.cs.Tools(context.Background(), nil) {
		if err != nil {
			e.t.Fatalf("tools/list: %v", err)
		}
		out[t.Name] = t
	}
	return out
}

func addArgs(name, bin string, extra ...string) map[string]any {
	return map[string]any{"name": name, "command": bin, "args": extra, "env": map[string]string{"FIXTURE_NAME": name}}
}

func (e *env) server(name string) ServerInfo {
	for _, s := range e.m.List(true) {
		if s.Name == name {
			return s
		}
	}
	e.t.Fatalf("no server %q in list_servers", name)
	return ServerInfo{}
}

func structured(res *mcp.CallToolResult, into any) error {
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// serve is what mcpflow mux does for one client on a byte stream: the
// configured servers started, wire.Serve with the mux as the Opener, then
// every server stopped.
func serve(ctx context.Context, m *Mux, in wire.Stream, out io.Writer, o wire.ServeOptions) error {
	defer m.Close()
	m.Start()
	then := o.InputEnded
	o.InputEnded = func() {
		m.InputEnded()
		if then != nil {
			then()
		}
	}
	return wire.Serve(ctx, in, out, m, o)
}
