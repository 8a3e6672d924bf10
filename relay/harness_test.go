package relay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/proc"
	"github.com/mcpflow/mcpflow/internal/wire"
)

var fixtureBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpflow-fixture")
	if err != nil {
		panic(err)
	}
	fixtureBin = filepath.Join(dir, "fixture")
	out, err := exec.Command("go", "build", "-o", fixtureBin, "./testdata/fixture").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the fixture: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// eras are the two protocol eras every scenario runs in: the Go SDK
// client's default (modern, server/discover first) and legacy.
var eras = []struct {
	name    string
	version string
}{
	{"modern", ""},
	{"legacy", "2025-11-25"},
}

// harness runs a Relay in-process with a real fixture child and a real Go
// SDK client on the other end of two pipes.
type harness struct {
	t           *testing.T
	r           *Relay
	cs          *mcp.ClientSession
	dir         string
	variant     string
	listChanged chan struct{}
	// toolsChanged and promptsChanged count the list_changed
	// notifications the client received.
	toolsChanged   atomic.Int32
	promptsChanged atomic.Int32
	served         chan error
	logs           *syncBuffer
	closeIn        func()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type hopts struct {
	version  string
	args     []string
	cfg      func(*Config)
	noStart  bool // do not run the startup Restart
	sampling bool
}

func newHarness(t *testing.T, o hopts) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), listChanged: make(chan struct{}, 16), served: make(chan error, 1), logs: &syncBuffer{}}
	h.variant = filepath.Join(h.dir, "variant")
	h.setVariant("v1")
	logger := log.NewWithOptions(h.logs, log.Options{Level: log.DebugLevel})
	cfg := Config{
		Child:   Child{Command: append([]string{fixtureBin, "-variant-file", h.variant}, o.args...), StopTimeout: 2 * time.Second},
		Logger:  slog.New(logger),
		Notices: true,
		Version: "test",
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	h.r = New(cfg)
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	h.closeIn = func() { c2rW.Close() }
	go func() {
		err := h.r.Serve(context.Background(), wire.NewReader(c2rR, 0), r2cW)
		r2cW.Close()
		h.served <- err
	}()
	t.Cleanup(func() {
		c2rW.Close()
		select {
		case <-h.served:
		case <-time.After(20 * time.Second):
			t.Error("relay did not shut down")
		}
		if t.Failed() {
			t.Logf("relay log:\n%s", h.logs.String())
		}
	})
	if !o.noStart {
		go func() {
			if _, err := h.r.Restart(context.Background()); err != nil {
				t.Logf("startup restart: %v", err)
			}
		}()
	}
	copts := &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			h.promptsChanged.Add(1)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			h.toolsChanged.Add(1)
			select {
			case h.listChanged <- struct{}{}:
			default:
			}
		},
	}
	if o.sampling {
		copts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			in := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: strings.ToUpper(in)}}, nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: r2cR, Writer: c2rW, MaxLineLength: -1}, &mcp.ClientSessionOptions{ProtocolVersion: o.version})
	if err != nil {
		t.Fatalf("connect: %v\nlog:\n%s", err, h.logs.String())
	}
	h.cs = cs
	t.Cleanup(func() { cs.Close() })
	return h
}

func (h *harness) setVariant(v string) {
	h.t.Helper()
	if err := os.WriteFile(h.variant, []byte(v), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

// call calls a tool and returns its text and isError.
func (h *harness) call(name string, args map[string]any) (string, bool, error) {
	res, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String(), res.IsError, nil
}

func (h *harness) mustCall(name string, args map[string]any) string {
	h.t.Helper()
	text, isErr, err := h.call(name, args)
	if err != nil {
		h.t.Fatalf("call %s: %v", name, err)
	}
	if isErr {
		h.t.Fatalf("call %s: tool error: %s", name, text)
	}
	return text
}

func (h *harness) toolNames() []string {
	h.t.Helper()
	var names []string
	for tool, err := range h.cs.Tools(h.ctx(), nil) {
		if err != nil {
			h.t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func (h *harness) waitListChanged() {
	h.t.Helper()
	select {
	case <-h.listChanged:
	case <-time.After(30 * time.Second):
		h.t.Fatal("no notifications/tools/list_changed")
	}
}

// groupGone waits until no process of the group led by pid is alive.
func groupGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for proc.GroupAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (h *harness) childPID() int {
	h.r.sw.mu.Lock()
	defer h.r.sw.mu.Unlock()
	if h.r.sw.child == nil {
		return 0
	}
	return h.r.sw.child.pid
}
