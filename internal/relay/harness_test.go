package relay

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

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
	logs           *testkit.Buffer
	served         chan struct{} // closed when Serve returns
}

type hopts struct {
	version  string
	args     []string
	cfg      func(*Config)
	noStart  bool   // do not run the startup Restart
	client   string // the client's name; "" = test-client
	sampling bool
}

func newHarness(t *testing.T, o hopts) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), listChanged: make(chan struct{}, 16), logs: &testkit.Buffer{}, served: make(chan struct{})}
	h.variant = filepath.Join(h.dir, "variant")
	h.setVariant("v1")
	logger := log.NewWithOptions(h.logs, log.Options{Level: log.DebugLevel})
	cfg := Config{
		Child:   Child{Command: append([]string{testkit.Fixture(t), "-variant-file", h.variant}, o.args...), StopTimeout: 2 * time.Second},
		Logger:  slog.New(logger),
		Notices: true,
		Version: "test",
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	h.r = New(cfg)
	transport := testkit.Pipes(t, func(in io.Reader, out io.Writer) error {
		err := serve(context.Background(), h.r, in, out)
		close(h.served)
		return err
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("relay log:\n%s", h.logs.String())
		}
	})
	if !o.noStart {
		go func() {
			// As mcpflow watch: its one session is open before the first
			// build ends.
			testkit.Wait(10*time.Second, func() bool { return only(h.r) != nil })
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
	client := mcp.NewClient(&mcp.Implementation{Name: cmp.Or(o.client, "test-client"), Version: "1"}, copts)
	cs := testkit.Connect(t, o.version, client, transport)
	h.cs = cs
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
	return testkit.Text(res), res.IsError, nil
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
	testkit.NoLeftovers(t, testkit.Procs{Groups: []int{pid}})
}

// childPID is the child of the harness's one session; 0 when none runs.
func (h *harness) childPID() int { return h.r.Stats().Pid }

// only is the relay's one session (the harness's client's); nil when none.
func only(r *Relay) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sessions) == 0 {
		return nil
	}
	return r.sessions[0]
}

// childGen is the generation of the session's child; 0 when none.
func (s *Session) childGen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.child == nil {
		return 0
	}
	return s.child.gen
}

// heldLen is how many messages the session holds.
func (s *Session) heldLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held.q)
}

// setCommand sets the command of the next children.
func (r *Relay) setCommand(argv []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg.Child.Command = argv
}

func (r *Relay) command() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.cfg.Child.Command)
}

// serve is what mcpflow watch does for its one client on a byte stream:
// wire.Serve with the relay as the Opener, then Close.
func serve(ctx context.Context, r *Relay, in io.Reader, out io.Writer) error {
	err := wire.Serve(ctx, wire.NewReader(in, 0), out, r, wire.ServeOptions{Grace: r.cfg.Queue.Timeout, InputEnded: r.InputEnded})
	r.Close()
	return err
}
