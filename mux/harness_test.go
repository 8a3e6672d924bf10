package mux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var fixtureV1, fixtureV2 string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "muxtest")
	if err != nil {
		panic(err)
	}
	fixtureV1 = filepath.Join(dir, "fixture")
	fixtureV2 = filepath.Join(dir, "fixture-v2")
	for _, b := range [][]string{
		{"build", "-o", fixtureV1, "./testdata/fixture"},
		{"build", "-ldflags", "-X main.version=2", "-o", fixtureV2, "./testdata/fixture"},
	} {
		cmd := exec.Command("go", b...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the fixture:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

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
}

func start(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{t: t, done: make(chan error, 1)}
	e.m = New(o.cfg)
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	// The client talks to the mux over two OS pipes, through the transport
	// mcpflow mux serves its stdio with.
	inR, inW, err1 := os.Pipe()   // client to mux
	outR, outW, err2 := os.Pipe() // mux to client
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := e.m.Run(ctx, &wire.Transport{In: wire.NewReader(inR, 0), Out: outW})
		outW.Close()
		inR.Close()
		e.done <- err
	}()
	ct := &mcp.IOTransport{Reader: outR, Writer: inW}
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
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts)
	client.AddRoots(&mcp.Root{URI: "file:///proj", Name: "proj"})
	var sopts *mcp.ClientSessionOptions
	if o.version != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: o.version}
	}
	cs, err := client.Connect(ctx, ct, sopts)
	if err != nil {
		t.Fatalf("connecting to the mux: %v", err)
	}
	e.cs = cs
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
		if alive(pid) {
			e.t.Errorf("child %d is still running after shutdown", pid)
		}
	}
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (e *env) call(name string, args any) *mcp.CallToolResult {
	e.t.Helper()
	res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("calling %s: %v", name, err)
	}
	return res
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

// mustOK calls a tool and fails the test on a tool error.
func (e *env) mustOK(name string, args any) string {
	e.t.Helper()
	res := e.call(name, args)
	if res.IsError {
		e.t.Fatalf("%s: tool error: %s", name, text(res))
	}
	return text(res)
}

func (e *env) mustFail(name string, args any, want ...string) string {
	e.t.Helper()
	res := e.call(name, args)
	if !res.IsError {
		e.t.Fatalf("%s succeeded, want a tool error: %s", name, text(res))
	}
	for _, w := range want {
		if !strings.Contains(text(res), w) {
			e.t.Errorf("%s: error %q does not mention %q", name, text(res), w)
		}
	}
	return text(res)
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

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
