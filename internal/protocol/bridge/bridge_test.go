package bridge

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// rig is a relay.Relay with the bridge as its Config.Bridge, a fixture
// child named srv, and a Go SDK client on pipes, as mcpflow watch has
// them.
type rig struct {
	t            *testing.T
	r            *relay.Relay
	cs           *mcp.ClientSession
	variant      string
	logs         *testkit.Buffer
	toolsChanged chan struct{}
	logged       chan string
	progress     atomic.Int32
}

type rigOpts struct {
	version string   // the client's protocol version (testkit.Legacy.Version, testkit.Modern.Version)
	env     []string // the child's, added to the test binary's
	// connectFirst: the client connects before the child starts (a
	// 2026-07-28 client then has the relay's own server/discover answer),
	// then the first start runs.
	connectFirst bool
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	dir := t.TempDir()
	h := &rig{t: t, variant: filepath.Join(dir, "variant"), logs: &testkit.Buffer{}, toolsChanged: make(chan struct{}, 16), logged: make(chan string, 16)}
	h.setVariant("v1")
	tag := testkit.Tag(t)
	// Cleanups run last first: this one after the client and the relay
	// are gone.
	t.Cleanup(func() { testkit.NoLeftovers(t, testkit.Procs{Tag: tag}) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", h.logs.String())
		}
	})
	logger := slog.New(log.NewWithOptions(h.logs, log.Options{Level: log.DebugLevel}))
	cfg := relay.Config{
		Child: relay.Child{
			Command:     []string{testkit.Fixture(t), "-variant-file", h.variant},
			Env:         append(append(os.Environ(), "FIXTURE_NAME=srv", tag), o.env...),
			StopTimeout: 2 * time.Second,
		},
		Bridge:  Options{Log: logger.With("part", "bridge")}.New,
		Logger:  logger,
		Version: "test",
	}
	if o.connectFirst {
		cfg.First.Grace = 100 * time.Millisecond
	}
	h.r = relay.New(cfg)
	transport := testkit.Pipes(t, func(in io.Reader, out io.Writer) error {
		err := wire.Serve(context.Background(), wire.NewReader(in, 0), out, h.r, wire.ServeOptions{})
		h.r.Close()
		return err
	})
	start := func() {
		if _, err := h.r.Restart(context.Background()); err != nil {
			t.Logf("first start: %v", err)
		}
	}
	if !o.connectFirst {
		go start()
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.toolsChanged <- struct{}{}:
			default:
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			h.logged <- s
		},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			h.progress.Add(1)
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			in := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: strings.ToUpper(in)}}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///r", Name: "r"})
	h.cs = testkit.Connect(t, o.version, client, transport)
	if o.connectFirst {
		start()
	}
	return h
}

func (h *rig) setVariant(v string) {
	h.t.Helper()
	if err := os.WriteFile(h.variant, []byte(v), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *rig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *rig) call(name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(h.ctx(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		h.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// text calls a tool that must succeed and returns its text.
func (h *rig) text(name string, args map[string]any) string {
	h.t.Helper()
	res := h.call(name, args, nil)
	if res.IsError {
		h.t.Fatalf("call %s: tool error: %s", name, testkit.Text(res))
	}
	return testkit.Text(res)
}

func (h *rig) tools() []string {
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

// bridged fails the test unless the session went to the era bridge.
func (h *rig) bridged() {
	h.t.Helper()
	testkit.Eventually(h.t, 10*time.Second, "the era bridge to serve the client", func() bool {
		return strings.Contains(h.logs.String(), "the era bridge serves the client")
	})
}

// served checks what every bridged session serves: the child's tools and
// the relay's recompile tool, a call, the prompt, the resource and its
// template, a completion, progress before the answer.
func (h *rig) served() {
	h.t.Helper()
	tools := h.tools()
	for _, want := range []string{"echo", "progress", "recompile"} {
		if !slices.Contains(tools, want) {
			h.t.Fatalf("tools/list through the bridge lacks %s: %v", want, tools)
		}
	}
	if got := h.text("echo", map[string]any{"text": "hi"}); got != "srv:hi" {
		h.t.Fatalf("echo: %q", got)
	}
	pr, err := h.cs.GetPrompt(h.ctx(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil {
		h.t.Fatalf("prompts/get: %v", err)
	}
	if tc, _ := pr.Messages[0].Content.(*mcp.TextContent); tc == nil || tc.Text != "hello ann from srv" {
		h.t.Fatalf("prompt: %+v", pr.Messages[0].Content)
	}
	for uri, want := range map[string]string{
		"fixture://srv/info":   "info of srv",
		"fixture://srv/item/7": "item fixture://srv/item/7 of srv",
	} {
		rr, err := h.cs.ReadResource(h.ctx(), &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			h.t.Fatalf("resources/read %s: %v", uri, err)
		}
		if len(rr.Contents) != 1 || rr.Contents[0].Text != want {
			h.t.Fatalf("resources/read %s: %+v", uri, rr.Contents)
		}
	}
	cr, err := h.cs.Complete(h.ctx(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}})
	if err != nil {
		h.t.Fatalf("completion/complete: %v", err)
	}
	if !slices.Equal(cr.Completion.Values, []string{"srv:greet"}) {
		h.t.Fatalf("completion: %v", cr.Completion.Values)
	}
	h.progress.Store(0)
	if got := testkit.Text(h.call("progress", map[string]any{"n": 3}, mcp.Meta{"progressToken": "tok"})); got != "did 3 steps" {
		h.t.Fatalf("progress: %q", got)
	}
	testkit.Eventually(h.t, 5*time.Second, "3 progress notifications", func() bool { return h.progress.Load() == 3 })
}

// recompiled calls the relay's recompile tool after the child's code
// changed (v2 adds reverse): the client hears that the tools changed,
// lists reverse, and calls still work.
func (h *rig) recompiled() {
	h.t.Helper()
	for len(h.toolsChanged) > 0 {
		<-h.toolsChanged
	}
	h.setVariant("v2")
	if res := h.call("recompile", nil, nil); res.IsError {
		h.t.Fatalf("recompile: %s", testkit.Text(res))
	}
	select {
	case <-h.toolsChanged:
	case <-time.After(30 * time.Second):
		h.t.Fatal("no tools/list_changed after the restart")
	}
	if tools := h.tools(); !slices.Contains(tools, "reverse") {
		h.t.Fatalf("tools after the restart: %v", tools)
	}
	if got := h.text("reverse", map[string]any{"text": "abc"}); got != "cba" {
		h.t.Fatalf("reverse: %q", got)
	}
	if got := h.text("echo", map[string]any{"text": "again"}); got != "srv:again" {
		h.t.Fatalf("echo after the restart: %q", got)
	}
}

func (h *rig) waitLog(want string) {
	h.t.Helper()
	select {
	case got := <-h.logged:
		if got != want {
			h.t.Fatalf("log message %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatalf("no log message %q", want)
	}
}

// TestLegacyClientModernChild: a 2025-11-25 client in front of a child that
// speaks only 2026-07-28 (it refuses initialize).
func TestLegacyClientModernChild(t *testing.T) {
	t.Parallel()
	h := newRig(t, rigOpts{version: testkit.Legacy.Version, env: []string{"FIXTURE_REFUSE_INITIALIZE=1"}})
	h.bridged()
	ir := h.cs.InitializeResult()
	if ir.ProtocolVersion != testkit.Legacy.Protocol || ir.ServerInfo == nil || ir.ServerInfo.Name != "srv" || ir.Instructions != "instructions of srv v1" {
		t.Fatalf("initialize result: version %s, serverInfo %+v, instructions %q", ir.ProtocolVersion, ir.ServerInfo, ir.Instructions)
	}
	if ir.Capabilities.Resources == nil || !ir.Capabilities.Resources.Subscribe || ir.Capabilities.Logging == nil {
		t.Fatalf("capabilities: %+v", ir.Capabilities)
	}
	h.served()

	// The child's log messages, at the level the client set.
	if err := h.cs.SetLoggingLevel(h.ctx(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	h.text("log", map[string]any{"text": "hello"})
	h.waitLog("hello")

	// The child's input_required results, fulfilled by real requests to
	// the legacy client.
	if got := h.text("sample", map[string]any{"text": "hi"}); got != "model said: HI" {
		t.Fatalf("sample: %q", got)
	}
	if got := h.text("roots", nil); got != "roots: file:///r" {
		t.Fatalf("roots: %q", got)
	}
	// The child sees the client as itself.
	if got := h.text("whoami", nil); got != "client=bridge-test sampling=true" {
		t.Fatalf("whoami: %q", got)
	}
	h.recompiled()
}

// TestModernClientLegacyChild: a 2026-07-28 client, whose server/discover
// the relay answered, in front of a child that speaks only legacy
// revisions.
func TestModernClientLegacyChild(t *testing.T) {
	t.Parallel()
	h := newRig(t, rigOpts{version: testkit.Modern.Version, env: []string{"FIXTURE_VERSIONS=2025-11-25,2025-06-18"}, connectFirst: true})
	h.bridged()
	if v := h.cs.InitializeResult().ProtocolVersion; v != testkit.Modern.Protocol {
		t.Fatalf("the client's session speaks %s", v)
	}
	h.served()

	// The server the client talks to is the child: its results name it.
	res := h.call("echo", map[string]any{"text": "x"}, nil)
	info, _ := res.Meta[mcp.MetaKeyServerInfo].(map[string]any)
	if info["name"] != "srv" {
		t.Fatalf("result _meta serverInfo: %v", res.Meta)
	}
	// The child sees the client as itself, and is not told it can sample.
	if got := h.text("whoami", nil); got != "client=bridge-test sampling=false" {
		t.Fatalf("whoami: %q", got)
	}
	// A legacy child's sampling request cannot reach a 2026-07-28 client:
	// the child gets an error, and so does the call.
	if res := h.call("legacy_sample", map[string]any{"text": "hi"}, nil); !res.IsError {
		t.Fatalf("legacy_sample through the bridge: %s", testkit.Text(res))
	}
	// The level in a request's _meta reaches the legacy child as
	// logging/setLevel; its log message comes back.
	h.call("log", map[string]any{"text": "hello"}, mcp.Meta{mcp.MetaKeyLogLevel: "info"})
	h.waitLog("hello")
	if got := h.text("state", nil); !strings.HasPrefix(got, "level=info ") {
		t.Fatalf("the child's state: %q", got)
	}
	h.recompiled()
}

// fakeUp is an upstream whose sessions speak the legacy era the way a Go
// SDK client expects: server/discover refused, initialize answered once
// release is closed, tools t (progress, a log message, then its answer),
// hang (never answered) and bad (an input schema the SDK refuses).
type fakeUp struct {
	release   chan struct{}
	got       chan []byte // what the bridge's client sent, requests and notifications
	responses chan []byte // its answers to the fake's requests

	mu    sync.Mutex
	sess  []*fakeSession
	tools []string // tools/list's answer: t, hang and bad when nil
}

// setTools changes the fake's tools (the child was rebuilt).
func (f *fakeUp) setTools(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = names
}

func newFakeUp() *fakeUp {
	return &fakeUp{release: make(chan struct{}), got: make(chan []byte, 1024), responses: make(chan []byte, 16)}
}

type fakeSession struct {
	f     *fakeUp
	c     wire.Client
	in    chan []byte
	emit  chan []byte
	done  chan struct{} // closed by Close
	ended chan struct{} // closed when run returned
	once  sync.Once
}

func (f *fakeUp) Open(c wire.Client) wire.Session {
	s := &fakeSession{f: f, c: c, in: make(chan []byte, 1024), emit: make(chan []byte, 16), done: make(chan struct{}), ended: make(chan struct{})}
	f.mu.Lock()
	f.sess = append(f.sess, s)
	f.mu.Unlock()
	go s.run()
	return s
}

// session is the fake's one session, once opened.
func (f *fakeUp) session(t *testing.T) *fakeSession {
	t.Helper()
	var s *fakeSession
	testkit.Eventually(t, 5*time.Second, "the bridge to open its upstream session", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.sess) > 0 {
			s = f.sess[0]
		}
		return s != nil
	})
	return s
}

func (s *fakeSession) Send(msg []byte) {
	select {
	case s.in <- msg:
	case <-s.done:
	}
}

func (s *fakeSession) Close() {
	s.once.Do(func() { close(s.done) })
	<-s.ended
}

func (s *fakeSession) run() {
	defer close(s.ended)
	for {
		select {
		case <-s.done:
			return
		case m := <-s.emit:
			s.c.Deliver(m, nil)
		case m := <-s.in:
			s.handle(m)
		}
	}
}

func (s *fakeSession) reply(id []byte, result string) {
	s.c.Deliver(wire.ResultResponse(id, []byte(result)), id)
}

func (s *fakeSession) handle(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil {
		return
	}
	if env.IsResponse() {
		s.f.responses <- msg
		return
	}
	s.f.got <- msg
	switch env.Method {
	case "server/discover":
		s.c.Deliver(wire.ErrorResponse(env.ID, wire.CodeMethodNotFound, "method not found", nil), env.ID)
	case "initialize":
		select {
		case <-s.f.release:
		case <-s.done:
			return
		}
		s.reply(env.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"},"instructions":"fake instructions"}`)
	case "tools/list":
		s.f.mu.Lock()
		names := s.f.tools
		s.f.mu.Unlock()
		if names == nil {
			s.reply(env.ID, `{"tools":[{"name":"t","inputSchema":{"type":"object"}},{"name":"hang","inputSchema":{"type":"object"}},{"name":"bad","inputSchema":{"type":"string"}}]}`)
			return
		}
		var tools []string
		for _, n := range names {
			tools = append(tools, `{"name":"`+n+`","inputSchema":{"type":"object"}}`)
		}
		s.reply(env.ID, `{"tools":[`+strings.Join(tools, ",")+`]}`)
	case "tools/call":
		if string(jsonscan.Member(env.Params, "name")) == `"hang"` {
			return
		}
		if tok := jsonscan.Member(jsonscan.Member(env.Params, "_meta"), "progressToken"); tok != nil {
			s.c.Deliver(wire.Request(nil, "notifications/progress", []byte(`{"progressToken":`+string(tok)+`,"progress":1}`)), nil)
		}
		s.c.Deliver(wire.Request(nil, "notifications/message", []byte(`{"level":"info","data":"from t"}`)), nil)
		s.reply(env.ID, `{"content":[{"type":"text","text":"done"}]}`)
	case "ping":
		s.reply(env.ID, `{}`)
	}
}

// ask sends the bridge's client a request of the fake's.
func (s *fakeSession) ask(t *testing.T, id, method string) {
	t.Helper()
	select {
	case s.emit <- wire.Request([]byte(id), method, []byte(`{}`)):
	case <-time.After(5 * time.Second):
		t.Fatal("the fake session is stuck")
	}
}

// waitFor is the next message the bridge's client sent with method.
func (f *fakeUp) waitFor(t *testing.T, method string) []byte {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-f.got:
			if env, _ := wire.Peek(m); env.Method == method {
				return m
			}
		case <-deadline:
			t.Fatalf("the bridge's client sent no %s", method)
			return nil
		}
	}
}

// recorder is a client: it records what it is delivered.
type recorder struct {
	ch     chan delivered
	closed atomic.Bool // the session's Close returned
	after  atomic.Bool // a delivery came after that
}

type delivered struct {
	msg, rel []byte
	env      wire.Envelope
}

func newRecorder() *recorder { return &recorder{ch: make(chan delivered, 1024)} }

func (r *recorder) Deliver(msg, rel []byte) {
	if r.closed.Load() {
		r.after.Store(true)
	}
	msg = slices.Clone(msg)
	env, _ := wire.Peek(msg)
	r.ch <- delivered{msg: msg, rel: slices.Clone(rel), env: env}
}

func (r *recorder) next(t *testing.T) delivered {
	t.Helper()
	select {
	case d := <-r.ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered to the client")
		return delivered{}
	}
}

// none fails the test if anything is delivered within d.
func (r *recorder) none(t *testing.T, d time.Duration, when string) {
	t.Helper()
	select {
	case m := <-r.ch:
		t.Fatalf("delivered %s: %s", when, m.msg)
	case <-time.After(d):
	}
}

const (
	legacyInit  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"raw","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// closeWithin closes s and fails the test if that takes longer than d.
func closeWithin(t *testing.T, s wire.Session, d time.Duration) {
	t.Helper()
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > d {
		t.Fatalf("Close took %v (bound %v)", took, d)
	}
}

// TestHeldUntilUpstream: the client's first messages are taken at once
// and held while the upstream handshake is pending, then served in order;
// the server is the child as its handshake said; a tool whose schema the
// SDK refuses is left out; what the child sends during a call reaches the
// client, on that call, before its answer.
func TestHeldUntilUpstream(t *testing.T) {
	f := newFakeUp()
	rec := newRecorder()
	s := Options{}.New(f, rec)
	defer closeWithin(t, s, 5*time.Second)
	start := time.Now()
	for _, m := range []string{
		legacyInit,
		initialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":"p"}}}`,
	} {
		s.Send([]byte(m))
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Send waited %v for the upstream", took)
	}
	upInit := f.waitFor(t, "initialize")
	rec.none(t, 300*time.Millisecond, "while the upstream handshake is pending")
	close(f.release)

	first := rec.next(t)
	if string(first.env.ID) != "1" || string(first.rel) != "1" {
		t.Fatalf("first delivered: %s", first.msg)
	}
	var init struct {
		ProtocolVersion string             `json:"protocolVersion"`
		ServerInfo      mcp.Implementation `json:"serverInfo"`
		Instructions    string             `json:"instructions"`
		Capabilities    map[string]any     `json:"capabilities"`
	}
	if err := json.Unmarshal(first.env.Result, &init); err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != "2025-11-25" || init.ServerInfo.Name != "fake" || init.Instructions != "fake instructions" || init.Capabilities["tools"] == nil || init.Capabilities["completions"] == nil {
		t.Fatalf("initialize result: %s", first.env.Result)
	}
	// The bridge's client presents itself as the client, with its
	// capabilities (roots, no sampling nor elicitation).
	var up struct {
		Params struct {
			ClientInfo   mcp.Implementation `json:"clientInfo"`
			Capabilities map[string]any     `json:"capabilities"`
		} `json:"params"`
	}
	if err := json.Unmarshal(upInit, &up); err != nil {
		t.Fatal(err)
	}
	if caps := up.Params.Capabilities; up.Params.ClientInfo.Name != "raw" || caps["roots"] == nil || caps["sampling"] != nil || caps["elicitation"] != nil {
		t.Fatalf("the bridge's initialize: %s", upInit)
	}

	var sawProgress, sawLog, sawCall, sawList bool
	for !sawCall || !sawList {
		d := rec.next(t)
		switch {
		case d.env.Method == "roots/list":
			s.Send(wire.ResultResponse(d.env.ID, []byte(`{"roots":[]}`)))
		case d.env.Method == "notifications/progress":
			if string(d.rel) != `"c"` || string(jsonscan.Member(d.env.Params, "progressToken")) != `"p"` || sawCall {
				t.Fatalf("progress %s (rel %s), after the answer: %v", d.msg, d.rel, sawCall)
			}
			sawProgress = true
		case d.env.Method == "notifications/message":
			if string(d.rel) != `"c"` || sawCall {
				t.Fatalf("log message %s (rel %s), after the answer: %v", d.msg, d.rel, sawCall)
			}
			sawLog = true
		case string(d.env.ID) == `"c"`:
			if !strings.Contains(string(d.env.Result), `"text":"done"`) || string(d.rel) != `"c"` {
				t.Fatalf("call: %s", d.msg)
			}
			sawCall = true
		case string(d.env.ID) == "2":
			var res struct{ Tools []mcp.Tool }
			if err := json.Unmarshal(d.env.Result, &res); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{"hang", "t"}) {
				t.Fatalf("tools/list: %v", names)
			}
			sawList = true
		default:
			t.Fatalf("unexpected: %s", d.msg)
		}
	}
	if !sawProgress || !sawLog {
		t.Fatalf("progress %v, log message %v before the answer", sawProgress, sawLog)
	}
}

// errorOf is the code and message of an error answer.
func errorOf(t *testing.T, d delivered) (int, string) {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if !d.env.HasError || json.Unmarshal(d.env.Error, &e) != nil {
		t.Fatalf("not an error answer: %s", d.msg)
	}
	return e.Code, e.Message
}

// TestHandshakeTimeout: an upstream that never completes its handshake:
// the held request, and every later one, is answered with an error that
// says why; the upstream session is closed.
func TestHandshakeTimeout(t *testing.T) {
	f := newFakeUp() // initialize is never answered
	rec := newRecorder()
	s := Options{Handshake: 300 * time.Millisecond}.New(f, rec)
	defer closeWithin(t, s, 3*time.Second)
	s.Send([]byte(legacyInit))
	d := rec.next(t)
	code, msg := errorOf(t, d)
	if string(d.env.ID) != "1" || string(d.rel) != "1" || code != wire.CodeServerDown || !strings.Contains(msg, "did not complete the handshake within 300ms") {
		t.Fatalf("the held initialize got %s", d.msg)
	}
	s.Send([]byte(initialized))
	s.Send([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`))
	d = rec.next(t)
	if code, msg := errorOf(t, d); string(d.env.ID) != `"x"` || code != wire.CodeServerDown || !strings.Contains(msg, "within 300ms") {
		t.Fatalf("a later request got %s", d.msg)
	}
	rec.none(t, 100*time.Millisecond, "for a notification")
	select {
	case <-f.session(t).ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream session was not closed")
	}
}

// TestRootsOfALegacyChild: a legacy child's roots/list is answered from
// the legacy client's roots, asked for once it is initialized and again on
// its roots list_changed; the child hears when they change.
func TestRootsOfALegacyChild(t *testing.T) {
	f := newFakeUp()
	close(f.release)
	rec := newRecorder()
	s := Options{}.New(f, rec)
	defer closeWithin(t, s, 5*time.Second)
	s.Send([]byte(legacyInit))
	s.Send([]byte(initialized))
	up := f.session(t)
	n := 0
	// answerRoots answers the bridge's roots/list with uri.
	answerRoots := func(uri string) {
		t.Helper()
		for {
			d := rec.next(t)
			if d.env.Method == "roots/list" {
				s.Send(wire.ResultResponse(d.env.ID, []byte(`{"roots":[{"uri":"`+uri+`"}]}`)))
				return
			}
		}
	}
	// childSees asks roots/list as the child whenever it is told they
	// changed, until it sees uri alone (a change may take two
	// notifications: what went, then what came).
	childSees := func(uri string) {
		t.Helper()
		for {
			f.waitFor(t, "notifications/roots/list_changed")
			n++
			id := `"r` + strconv.Itoa(n) + `"`
			up.ask(t, id, "roots/list")
			select {
			case m := <-f.responses:
				env, _ := wire.Peek(m)
				var res mcp.ListRootsResult
				if err := json.Unmarshal(env.Result, &res); err != nil || string(env.ID) != id {
					t.Fatalf("the child's roots/list: %s", m)
				}
				if len(res.Roots) == 1 && res.Roots[0].URI == uri {
					return
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the child's roots/list was not answered")
			}
		}
	}
	answerRoots("file:///a")
	childSees("file:///a")
	s.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`))
	answerRoots("file:///b")
	childSees("file:///b")
}

// blocked is a client that takes nothing until unblocked.
type blocked struct {
	entered chan struct{}
	unblock chan struct{}
	once    sync.Once
	after   atomic.Bool // a delivery began after the session's Close returned
	closed  atomic.Bool
}

func (b *blocked) Deliver(msg, rel []byte) {
	if b.closed.Load() {
		b.after.Store(true)
	}
	b.once.Do(func() { close(b.entered) })
	<-b.unblock
}

// TestCloseBounded: Close returns promptly with a call in flight that the
// child never answers, delivers nothing afterwards, and leaves no goroutine
// behind; with a client that takes nothing, it returns after its bound.
func TestCloseBounded(t *testing.T) {
	t.Run("call in flight", func(t *testing.T) {
		before := runtime.NumGoroutine()
		f := newFakeUp()
		close(f.release)
		rec := newRecorder()
		s := Options{}.New(f, rec)
		s.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		s.Send([]byte(initialized))
		s.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang","arguments":{}}}`))
		if d := rec.next(t); string(d.env.ID) != "1" {
			t.Fatalf("delivered %s", d.msg)
		}
		f.waitFor(t, "tools/call")
		closeWithin(t, s, time.Second)
		rec.closed.Store(true)
		time.Sleep(300 * time.Millisecond) // time let pass to show that no delivery comes
		if rec.after.Load() {
			t.Fatal("a delivery came after Close returned")
		}
		select {
		case <-f.session(t).ended:
		default:
			t.Fatal("the upstream session outlived Close")
		}
		testkit.Eventually(t, 5*time.Second, "the bridge's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	})
	t.Run("client takes nothing", func(t *testing.T) {
		f := newFakeUp()
		close(f.release)
		c := &blocked{entered: make(chan struct{}), unblock: make(chan struct{})}
		s := Options{}.New(f, c)
		s.Send([]byte(legacyInit))
		s.Send([]byte(initialized))
		s.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		select {
		case <-c.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("nothing delivered")
		}
		f.waitFor(t, "tools/list")
		time.Sleep(100 * time.Millisecond) // the answers queue up behind the first
		closeWithin(t, s, closeWait+time.Second)
		c.closed.Store(true)
		close(c.unblock)
		time.Sleep(300 * time.Millisecond) // time let pass to show that no delivery begins
		if c.after.Load() {
			t.Fatal("a delivery began after Close returned")
		}
	})
}

// TestListsFollowTheChild: a call to a tool the child added without a
// word is listed first, then answered; a list_changed of the child's
// removes what is gone, and the client hears of it.
func TestListsFollowTheChild(t *testing.T) {
	f := newFakeUp()
	close(f.release)
	rec := newRecorder()
	s := Options{}.New(f, rec)
	defer closeWithin(t, s, 5*time.Second)
	s.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	s.Send([]byte(initialized))
	// answer is the next answer to id; list_changed notifications are
	// counted.
	changed := 0
	answer := func(id string) delivered {
		t.Helper()
		for {
			d := rec.next(t)
			switch {
			case d.env.Method == "notifications/tools/list_changed":
				changed++
			case string(d.env.ID) == id && d.env.IsResponse():
				return d
			}
		}
	}
	names := func(d delivered) []string {
		var res struct{ Tools []mcp.Tool }
		if err := json.Unmarshal(d.env.Result, &res); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}
	answer("1")

	f.setTools("t", "hang", "fresh")
	s.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fresh","arguments":{}}}`))
	if d := answer("2"); !strings.Contains(string(d.env.Result), `"text":"done"`) {
		t.Fatalf("a call to a tool the child just added: %s", d.msg)
	}

	// What the added tool made the server say is over: only the removal
	// counts from here.
	time.Sleep(200 * time.Millisecond)
	for len(rec.ch) > 0 {
		<-rec.ch
	}
	changed = 0
	f.setTools("hang", "fresh")
	f.session(t).emit <- wire.Request(nil, "notifications/tools/list_changed", nil)
	testkit.Eventually(t, 10*time.Second, "the client to hear that the tools changed", func() bool {
		select {
		case d := <-rec.ch:
			if d.env.Method == "notifications/tools/list_changed" {
				changed++
			}
		default:
		}
		return changed > 0
	})
	s.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	if got := names(answer("3")); !slices.Equal(got, []string{"fresh", "hang"}) {
		t.Fatalf("tools after the child's list_changed: %v", got)
	}
}
