package httpmcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// These tests drive a Link as the relay does: Attach on a command, the
// process started, Start with a receiver that records what it is told,
// Send, Close. The kit's fixture serves Streamable HTTP with the Go
// SDK's handler (-http); httptest servers play the servers that
// misbehave, behind a process that only sleeps. The relay's own
// behaviour over an HTTP child (replay, reload, crashes) is tested end to
// end in cmd/mcpflow.

var _ wire.Link = (*Link)(nil)

// recorded is one call of the receiver.
type recorded struct {
	kind    string // "msg", "large", "junk"
	msg     []byte // the message, or the junk
	rel     []byte
	tl      *wire.TooLargeError
	badJSON bool
}

func (e recorded) String() string {
	switch e.kind {
	case "large":
		return fmt.Sprintf("TooLarge(size %d, id %s)", e.tl.Size, e.tl.ID())
	case "junk":
		return fmt.Sprintf("Junk(%q, %v)", wire.Abbreviate(e.msg, 80), e.badJSON)
	}
	return fmt.Sprintf("Message(%s, rel %s)", wire.Abbreviate(e.msg, 300), e.rel)
}

// recorder is a LinkReceiver that records every call and notes calls
// that overlap (the link must make one at a time).
type recorder struct {
	mu      sync.Mutex
	evs     []recorded
	changed chan struct{} // closed and replaced at each call
	inCall  atomic.Int32
	overlap atomic.Bool
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(e recorded) {
	if r.inCall.Add(1) != 1 {
		r.overlap.Store(true)
	}
	defer r.inCall.Add(-1)
	time.Sleep(time.Millisecond) // widen the window in which an overlap would show
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) Message(msg, rel []byte) { r.add(recorded{kind: "msg", msg: msg, rel: rel}) }
func (r *recorder) TooLarge(tl *wire.TooLargeError) {
	r.add(recorded{kind: "large", tl: tl})
}
func (r *recorder) Junk(line []byte, badJSON bool) {
	r.add(recorded{kind: "junk", msg: line, badJSON: badJSON})
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.evs...)
}

// await waits for the first call at or after index from that pred
// accepts, and returns its index.
func (r *recorder) await(t *testing.T, what string, from int, pred func(recorded) bool) (int, recorded) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		for i := from; i < len(r.evs); i++ {
			if pred(r.evs[i]) {
				e := r.evs[i]
				r.mu.Unlock()
				return i, e
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s; the link delivered:\n%s", what, r.dump())
		}
	}
}

func (r *recorder) dump() string {
	var b strings.Builder
	for i, e := range r.all() {
		fmt.Fprintf(&b, "  %d %s\n", i, e)
	}
	return b.String()
}

// answer waits for the response to id and returns it.
func (r *recorder) answer(t *testing.T, id string) recorded {
	t.Helper()
	_, e := r.await(t, "answer to "+id, 0, isAnswer(id))
	if e.rel != nil {
		t.Errorf("answer to %s came with rel %s", id, e.rel)
	}
	return e
}

func isAnswer(id string) func(recorded) bool {
	return func(e recorded) bool {
		if e.kind != "msg" {
			return false
		}
		env, err := wire.Peek(e.msg)
		return err == nil && env.IsResponse() && string(env.ID) == id
	}
}

func isMethod(method string) func(recorded) bool {
	return func(e recorded) bool {
		env, err := wire.Peek(e.msg)
		return e.kind == "msg" && err == nil && env.Method == method
	}
}

// errorOf is the error code and message of a response ("" when it has none).
func errorOf(t *testing.T, msg []byte) (int, string) {
	t.Helper()
	var r struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if r.Error == nil {
		return 0, ""
	}
	return r.Error.Code, r.Error.Message
}

// linkRun is one start of a process and a session's Link to it.
type linkRun struct {
	t    *testing.T
	c    Child
	url  string
	l    *Link
	rec  *recorder
	logs *testkit.Buffer // the process's stdout and stderr
	log  *testkit.Buffer // the link's logger
}

// startLink starts cmd as c's process, waits for it to answer (Ready),
// and starts a link to it; both are stopped when the test ends.
func startLink(t *testing.T, c Child, cmd *exec.Cmd) *linkRun {
	t.Helper()
	r := &linkRun{t: t, c: c, rec: newRecorder(), logs: &testkit.Buffer{}, log: &testkit.Buffer{}}
	r.c.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logs, url, err := r.c.Prepare(cmd)
	if err != nil {
		t.Fatal(err)
	}
	r.url = url
	if err := cmd.Start(); err != nil {
		logs.Close()
		t.Fatal(err)
	}
	if err := r.c.Ready(t.Context(), url); err != nil {
		t.Logf("not ready: %v", err)
	}
	r.l = r.c.Link(url, nil).(*Link)
	r.l.Start(r.rec)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(r.logs, logs)
	}()
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		r.l.Close()
		select {
		case <-r.l.Done():
		case <-time.After(10 * time.Second):
			t.Error("Done still open 10s after Close")
		}
		_ = cmd.Process.Kill()
		<-waited
		<-copied
		testkit.NoLeftovers(t, testkit.Procs{Pids: []int{cmd.Process.Pid}})
		if r.rec.overlap.Load() {
			t.Error("the receiver was called by two goroutines at once")
		}
	})
	return r
}

func (r *linkRun) send(msgs ...string) {
	for _, m := range msgs {
		r.l.Send([]byte(m))
	}
}

// open fails the test if the link ended.
func (r *linkRun) open() {
	r.t.Helper()
	select {
	case <-r.l.Done():
		r.t.Fatalf("the link ended: %s", r.l.Lost())
	default:
	}
}

// --- The fixture: the Go SDK's Streamable HTTP handler ---

var anyPort = Child{URL: "http://127.0.0.1:{port}/mcp", Placeholder: "{port}", Wait: 10 * time.Second}

func startFixture(t *testing.T, c Child, args ...string) *linkRun {
	t.Helper()
	cmd := testkit.Command(testkit.Tag(t), nil, testkit.Fixture(t), append([]string{"-http", "127.0.0.1:{port}"}, args...)...)
	return startLink(t, c, cmd)
}

const (
	initLegacy  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	modernMeta  = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
)

func call(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func modernCall(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` + modernMeta + `}}`
}

// TestLinkLegacy: the legacy era on the fixture: initialize, the session
// kept in the link, ids as sent, a call's progress on its stream (rel =
// its id) before its answer, and what the server sends outside any
// request on the GET stream the link opens (rel nil).
func TestLinkLegacy(t *testing.T) {
	t.Parallel()
	r := startFixture(t, anyPort)
	r.send(initLegacy)
	if got := r.rec.answer(t, "1"); !bytes.Contains(got.msg, []byte(`"protocolVersion":"2025-11-25"`)) {
		t.Fatalf("initialize: %s", got.msg)
	}
	r.send(initialized)
	for _, id := range []string{`"a-b c"`, `123456789012345`, `-7`, `0`} {
		r.send(call(id, "echo", `{"text":"hi `+strings.ReplaceAll(id, `"`, "")+`"}`))
		if got := r.rec.answer(t, id); !bytes.Contains(got.msg, []byte(`"text":"hi `+strings.ReplaceAll(id, `"`, "")+`"`)) {
			t.Fatalf("id %s: %s", id, got.msg)
		}
	}

	r.send(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","arguments":{"n":3},"_meta":{"progressToken":"tok"}}}`)
	at, _ := r.rec.await(t, "the answer to p", 0, isAnswer(`"p"`))
	var steps int
	for _, e := range r.rec.all()[:at] {
		if env, _ := wire.Peek(e.msg); env.Method == "notifications/progress" {
			steps++
			if string(e.rel) != `"p"` {
				t.Errorf("progress with rel %s, want \"p\": %s", e.rel, e.msg)
			}
		}
	}
	if steps != 3 {
		t.Errorf("%d progress notifications before the answer, want 3:\n%s", steps, r.rec.dump())
	}

	r.send(call("9", "grow", `{"n":1}`))
	_, e := r.rec.await(t, "list_changed", 0, isMethod("notifications/tools/list_changed"))
	if e.rel != nil {
		t.Errorf("list_changed came with rel %s: not on the GET stream", e.rel)
	}
	r.rec.answer(t, "9")

	testkit.Eventually(t, 10*time.Second, "stdout and stderr in logs", func() bool {
		s := r.logs.String()
		return strings.Contains(s, "fixture serving http://127.0.0.1:") && strings.Contains(s, "starting, pid")
	})
	if !r.c.Overlaps() || strings.Contains(r.url, "{port}") || r.l.Kind() != "http" {
		t.Errorf("Overlaps %v, URL %s, Kind %s", r.c.Overlaps(), r.url, r.l.Kind())
	}
	r.open()
}

// TestLinkSlowCallDoesNotBlock: with a server that answers calls with
// JSON (the POST ends only when the call does), a slow call does not
// hold up the call behind it.
func TestLinkSlowCallDoesNotBlock(t *testing.T) {
	t.Parallel()
	r := startFixture(t, anyPort, "-http-json")
	r.send(initLegacy)
	r.rec.answer(t, "1")
	r.send(initialized, call("2", "slow", `{"ms":3000}`), call("3", "echo", `{"text":"quick"}`))
	quick, _ := r.rec.await(t, "answer 3", 0, isAnswer("3"))
	slow, e := r.rec.await(t, "answer 2", 0, isAnswer("2"))
	if slow < quick || !bytes.Contains(e.msg, []byte("slept 3000")) {
		t.Fatalf("the slow call was answered first, or wrongly:\n%s", r.rec.dump())
	}
}

// TestReadyWaitsForURL: Ready returns once a server that listens late
// answers; one that never does is named with its URL within Wait.
func TestReadyWaitsForURL(t *testing.T) {
	t.Parallel()
	r := startFixture(t, anyPort, "-listen-after-ms", "700")
	r.send(initLegacy, initialized, call("2", "echo", `{"text":"late"}`))
	r.rec.answer(t, "1")
	if got := r.rec.answer(t, "2"); !bytes.Contains(got.msg, []byte("late")) {
		t.Fatalf("echo: %s", got.msg)
	}

	c := anyPort
	c.Wait = 500 * time.Millisecond
	cmd := testkit.Command(testkit.Tag(t), nil, testkit.Fixture(t), "-http", "127.0.0.1:{port}", "-listen-after-ms", "600000")
	logs, url, err := c.Prepare(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logs.Close()
	}()
	if err := c.Ready(t.Context(), url); err == nil || !strings.Contains(err.Error(), "did not answer at "+url+" within 500ms (is run.url where it listens?)") {
		t.Errorf("Ready: %v", err)
	}
}

// TestLinkModern: the 2026-07-28 era on the fixture, session-less:
// discover, a call (the server checks the SEP-2243 headers), and a
// subscriptions/listen whose notifications come on its stream (rel = its
// id).
func TestLinkModern(t *testing.T) {
	t.Parallel()
	r := startFixture(t, anyPort, "-http-stateless")
	r.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta + `}}`)
	if got := r.rec.answer(t, `"d"`); !bytes.Contains(got.msg, []byte(`"result"`)) || !bytes.Contains(got.msg, []byte("2026-07-28")) {
		t.Fatalf("discover: %s", got.msg)
	}
	r.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + modernMeta + `,"notifications":{"toolsListChanged":true}}}`)
	_, ack := r.rec.await(t, "the acknowledgement", 0, isMethod("notifications/subscriptions/acknowledged"))
	if string(ack.rel) != `"L"` {
		t.Errorf("acknowledgement with rel %s", ack.rel)
	}
	r.send(modernCall("5", "echo", `{"text":"m"}`))
	if got := r.rec.answer(t, "5"); !bytes.Contains(got.msg, []byte(`"text":"m"`)) {
		t.Fatalf("call: %s", got.msg)
	}
	r.send(modernCall("6", "grow", `{"n":1}`))
	r.rec.answer(t, "6")
	_, lc := r.rec.await(t, "list_changed", 0, isMethod("notifications/tools/list_changed"))
	if string(lc.rel) != `"L"` {
		t.Errorf("list_changed with rel %s, want the listen's", lc.rel)
	}
	if _, version := r.l.session.legacy(); version != "" {
		t.Errorf("a legacy version in the modern era: %q", version)
	}
	r.open()
}

// TestLinkSessionEnds: the fixture ends the session (endsession): the
// link finds out (its GET stream, then a 404 to its own check), ends,
// and Lost says why.
func TestLinkSessionEnds(t *testing.T) {
	t.Parallel()
	r := startFixture(t, anyPort)
	r.send(initLegacy)
	r.rec.answer(t, "1")
	r.send(initialized, call("2", "endsession", `{}`))
	r.rec.answer(t, "2")
	select {
	case <-r.l.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("Done still open after the session ended; log:\n%s", r.log.String())
	}
	if got := r.l.Lost(); got != textSessionLost {
		t.Errorf("Lost: %q", got)
	}
}

// --- httptest servers ---

// hit is one HTTP request a stub server received.
type hit struct {
	method string // HTTP
	header http.Header
	body   []byte
	env    wire.Envelope
	ctx    context.Context // the request's: done once it ended
}

// stub is an httptest server that records what it receives and answers
// with handle (HEAD, the link's probe, gets 405).
type stub struct {
	*httptest.Server
	mu     sync.Mutex
	hits   []hit
	handle func(w http.ResponseWriter, h hit)
}

func newStub(t *testing.T, handle func(w http.ResponseWriter, h hit)) *stub {
	s := &stub{handle: handle}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(req.Body)
		h := hit{method: req.Method, header: req.Header.Clone(), body: body, ctx: req.Context()}
		h.env, _ = wire.Peek(body)
		s.mu.Lock()
		s.hits = append(s.hits, h)
		s.mu.Unlock()
		s.handle(w, h)
	}))
	t.Cleanup(s.Close)
	return s
}

// seen is what the server received with the JSON-RPC method (or the
// HTTP method, for a GET).
func (s *stub) seen(method string) []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hit
	for _, h := range s.hits {
		if h.env.Method == method || h.method == method {
			out = append(out, h)
		}
	}
	return out
}

// startStub starts a link to s behind a process that sleeps.
func startStub(t *testing.T, s *stub, c Child) *linkRun {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in process is sleep")
	}
	c.URL = s.URL + "/mcp"
	if c.Wait == 0 {
		c.Wait = 10 * time.Second
	}
	return startLink(t, c, testkit.Command(testkit.Tag(t), nil, "sleep", "60"))
}

// result writes a JSON answer to h's request.
func result(w http.ResponseWriter, h hit, res string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, h.env.ID, res)
}

// sse starts an event stream and returns a function writing one event.
func sse(w http.ResponseWriter) func(raw string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	return func(raw string) {
		io.WriteString(w, raw)
		w.(http.Flusher).Flush()
	}
}

// TestLinkIDsExact: ids that a decode and encode would change (1.5,
// 2^53+1, escapes) come back as sent, over JSON and over an event
// stream, and the server receives each message's bytes as given.
func TestLinkIDsExact(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		if h.env.Method == "viasse" {
			send := sse(w)
			send(`data: {"jsonrpc":"2.0","id":` + string(h.env.ID) + `,"result":{"via":"sse"}}` + "\n\n")
			return
		}
		result(w, h, `{"via":"json"}`)
	})
	r := startStub(t, s, Child{})
	ids := []string{`1.5`, `9007199254740993`, `"a\"b"`, `"\u00fcber"`, `1e3`, `-0`}
	var sent []string
	for i, id := range ids {
		for _, m := range []string{"viajson", "viasse"} {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0", "id": %s,"method":"%s","params":{"n":%d}}`, id, m, i)
			sent = append(sent, msg)
			from := len(r.rec.all())
			r.send(msg)
			_, got := r.rec.await(t, "the answer to "+id, from, isAnswer(id))
			if got.rel != nil || !bytes.Contains(got.msg, []byte(`"via":"`+strings.TrimPrefix(m, "via")+`"`)) {
				t.Errorf("%s %s: %s, rel %s", m, id, got.msg, got.rel)
			}
		}
	}
	var bodies []string
	for _, h := range s.seen(http.MethodPost) {
		bodies = append(bodies, string(h.body))
	}
	if strings.Join(bodies, "\n") != strings.Join(sent, "\n") {
		t.Errorf("the server received\n%s\nwant\n%s", strings.Join(bodies, "\n"), strings.Join(sent, "\n"))
	}
}

// TestLinkHeaders: the headers of each era, as the Go SDK's client sets
// them: no session or version on initialize; then (once initialize was
// answered) the session and the negotiated version, on POSTs and on the
// GET stream; a 2026-07-28
// request's version from its _meta, with Mcp-Method, Mcp-Name and the
// Mcp-Param- headers of the arguments its tool marks (learned from
// tools/list).
func TestLinkHeaders(t *testing.T) {
	t.Parallel()
	t.Run("legacy", func(t *testing.T) {
		t.Parallel()
		s := newStub(t, func(w http.ResponseWriter, h hit) {
			switch {
			case h.method == http.MethodGet:
				w.WriteHeader(http.StatusMethodNotAllowed)
			case h.env.Method == "initialize":
				// The answer on a stream the server keeps open: what
				// follows waits for the answer, not for the stream's end.
				w.Header().Set("Mcp-Session-Id", "sess-1")
				send := sse(w)
				send(`data: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}` + "\n\n")
				<-h.ctx.Done()
			case h.env.IsRequest():
				result(w, h, `{}`)
			default:
				w.WriteHeader(http.StatusAccepted)
			}
		})
		r := startStub(t, s, Child{})
		r.send(initLegacy, initialized, call("2", "echo", `{}`))
		r.rec.answer(t, "1")
		r.rec.answer(t, "2")
		testkit.Eventually(t, 10*time.Second, "the GET stream", func() bool { return len(s.seen(http.MethodGet)) == 1 })
		init := s.seen("initialize")[0].header
		if init.Get("Content-Type") != "application/json" || init.Get("Accept") != "application/json, text/event-stream" {
			t.Errorf("initialize: %v", init)
		}
		if init.Get("Mcp-Session-Id") != "" || init.Get("Mcp-Protocol-Version") != "" {
			t.Errorf("initialize with a session or version: %v", init)
		}
		for _, h := range append(s.seen("notifications/initialized"), s.seen("tools/call")...) {
			if h.header.Get("Mcp-Session-Id") != "sess-1" || h.header.Get("Mcp-Protocol-Version") != "2025-06-18" {
				t.Errorf("%s: %v", h.env.Method, h.header)
			}
			if h.header.Get("Mcp-Method") != "" {
				t.Errorf("%s: a 2026-07-28 header in the legacy era: %v", h.env.Method, h.header)
			}
		}
		if r.c.Overlaps() || r.url != s.URL+"/mcp" {
			t.Errorf("a fixed URL: Overlaps %v, URL %s", r.c.Overlaps(), r.url)
		}
		get := s.seen(http.MethodGet)[0].header
		if get.Get("Accept") != "text/event-stream" || get.Get("Mcp-Session-Id") != "sess-1" || get.Get("Mcp-Protocol-Version") != "2025-06-18" {
			t.Errorf("GET: %v", get)
		}
	})
	t.Run("modern", func(t *testing.T) {
		t.Parallel()
		s := newStub(t, func(w http.ResponseWriter, h hit) {
			switch h.env.Method {
			case "tools/list":
				result(w, h, `{"tools":[{"name":"geo","inputSchema":{"type":"object","properties":{
					"region":{"type":"string","x-mcp-header":"Region"},
					"count":{"type":"integer","x-mcp-header":"Count"},
					"loc":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"}}},
					"note":{"type":"string"}}}},{"name":"plain","inputSchema":{"type":"object"}}]}`)
			default:
				result(w, h, `{}`)
			}
		})
		r := startStub(t, s, Child{})
		r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`)
		r.rec.answer(t, "1")
		r.send(modernCall("2", "geo", `{"region":"eu-west","count":3,"loc":{"city":"Zürich"},"note":"n"}`),
			modernCall("3", "geo", `{"region":null}`),
			`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a",`+modernMeta+`}}`)
		r.rec.answer(t, "2")
		r.rec.answer(t, "3")
		r.rec.answer(t, "4")
		list := s.seen("tools/list")[0].header
		if list.Get("Mcp-Protocol-Version") != "2026-07-28" || list.Get("Mcp-Method") != "tools/list" || list.Get("Mcp-Name") != "" || list.Get("Mcp-Session-Id") != "" {
			t.Errorf("tools/list: %v", list)
		}
		// The two calls are POSTed at once: tell them by id.
		calls := s.seen("tools/call")
		if len(calls) == 2 && string(calls[0].env.ID) == "3" {
			calls[0], calls[1] = calls[1], calls[0]
		}
		want := map[string]string{
			"Mcp-Protocol-Version": "2026-07-28",
			"Mcp-Method":           "tools/call",
			"Mcp-Name":             "geo",
			"Mcp-Param-Region":     "eu-west",
			"Mcp-Param-Count":      "3",
			"Mcp-Param-City":       "=?base64?" + base64.StdEncoding.EncodeToString([]byte("Zürich")) + "?=",
		}
		for k, v := range want {
			if got := calls[0].header.Get(k); got != v {
				t.Errorf("tools/call %s: %q, want %q", k, got, v)
			}
		}
		for _, k := range []string{"Mcp-Param-Region", "Mcp-Param-Count", "Mcp-Param-City", "Mcp-Param-Note"} {
			if got := calls[1].header.Get(k); got != "" {
				t.Errorf("tools/call without the argument: %s: %q", k, got)
			}
		}
		if rd := s.seen("resources/read")[0].header; rd.Get("Mcp-Name") != "file:///a" {
			t.Errorf("resources/read: %v", rd)
		}
		if len(s.seen(http.MethodGet)) != 0 {
			t.Error("a GET stream in the modern era")
		}
	})
}

// TestLinkPlainTextError: a plain-text 400 to one call is that call's
// answer (the status and the body named); the next call gets its answer.
func TestLinkPlainTextError(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		if h.env.Method == "logging/setLevel" {
			http.Error(w, "Bad Request: no such thing", http.StatusBadRequest)
			return
		}
		result(w, h, `{"ok":true}`)
	})
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`, call("2", "echo", `{}`))
	code, text := errorOf(t, r.rec.answer(t, "1").msg)
	if code != wire.CodeInternalError || !strings.Contains(text, "400 Bad Request") || !strings.Contains(text, "Bad Request: no such thing") {
		t.Errorf("answer: %d %q", code, text)
	}
	if got := r.rec.answer(t, "2"); !bytes.Contains(got.msg, []byte(`"ok":true`)) {
		t.Errorf("next call: %s", got.msg)
	}
	r.open()
}

// TestLinkErrorBody: a 500 whose body is the server's JSON-RPC error is
// passed as written; an error written under id null (before the server
// read the id) comes under the request's id, the rest as written.
func TestLinkErrorBody(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		switch h.env.Method {
		case "fail":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"jsonrpc":"2.0", "id":%s, "error":{"code":-32000,"message":"boom","data":{"why":[1.50]}}}`, h.env.ID)
		case "early":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`)
		default:
			result(w, h, `{}`)
		}
	})
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","id":7,"method":"fail"}`, `{"jsonrpc":"2.0","id":"e","method":"early"}`, `{"jsonrpc":"2.0","id":8,"method":"fine"}`)
	if got := string(r.rec.answer(t, "7").msg); got != `{"jsonrpc":"2.0", "id":7, "error":{"code":-32000,"message":"boom","data":{"why":[1.50]}}}` {
		t.Errorf("500: %s", got)
	}
	if got := string(r.rec.answer(t, `"e"`).msg); got != `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":"e"}` {
		t.Errorf("400 with id null: %s", got)
	}
	r.rec.answer(t, "8")
	r.open()
}

// tsLike is a stub that, as a TypeScript SDK 1.x server, refuses
// anything before initialize with a plain 400.
func tsLike(t *testing.T) *stub {
	var inited atomic.Bool
	return newStub(t, func(w http.ResponseWriter, h hit) {
		switch {
		case h.method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case h.env.Method == "initialize":
			inited.Store(true)
			result(w, h, `{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"ts","version":"1"}}`)
		case !inited.Load():
			http.Error(w, "Bad Request: Server not initialized", http.StatusBadRequest)
		case h.env.Method == "ping":
			result(w, h, `{"pong":true}`)
		case h.env.IsRequest():
			result(w, h, `{}`)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
}

// TestLinkBeforeHandshake: before the server answered a request, the
// link answers a ping itself, and a server/discover refused at the HTTP
// level gets "method not found"; once the server answered, pings go to it.
func TestLinkBeforeHandshake(t *testing.T) {
	t.Parallel()
	s := tsLike(t)
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+modernMeta+`}}`)
	if got := string(r.rec.answer(t, "1").msg); got != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("early ping: %s", got)
	}
	code, text := errorOf(t, r.rec.answer(t, "2").msg)
	if code != wire.CodeMethodNotFound || !strings.Contains(text, "server/discover") || !strings.Contains(text, "400 Bad Request") {
		t.Errorf("discover: %d %q", code, text)
	}
	if n := len(s.seen("ping")); n != 0 {
		t.Errorf("the early ping reached the server (%d)", n)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	r.rec.answer(t, "3")
	if got := r.rec.answer(t, "4"); !bytes.Contains(got.msg, []byte(`"pong":true`)) {
		t.Errorf("ping after the handshake: %s", got.msg)
	}
}

// sessionStub is a stub with a legacy session: initialize opens it;
// gone(h) says whether a request is answered 404 as a gone session's.
func sessionStub(t *testing.T, notFound func(h hit) (status int, body string)) *stub {
	return newStub(t, func(w http.ResponseWriter, h hit) {
		if h.method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if h.env.Method == "initialize" {
			w.Header().Set("Mcp-Session-Id", "s1")
			result(w, h, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)
			return
		}
		if status, body := notFound(h); status != 0 {
			w.Header().Set("Content-Type", "text/plain")
			if strings.HasPrefix(body, "{") {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		if h.env.IsRequest() {
			result(w, h, `{"fine":true}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// TestLink404LiveSession: a plain 404 to one call answers it; the link's
// check (a ping with the session id) finds the session alive, whether the
// server answers the ping or refuses it with an answer of its own (a 404
// carrying the ping's id), so the link goes on; the ping's answer is the
// link's own.
func TestLink404LiveSession(t *testing.T) {
	t.Parallel()
	for _, pingRefused := range []bool{false, true} {
		t.Run(fmt.Sprintf("pingRefused=%v", pingRefused), func(t *testing.T) {
			t.Parallel()
			s := sessionStub(t, func(h hit) (int, string) {
				switch {
				case h.env.Method == "tools/call" && bytes.Contains(h.body, []byte(`"nowhere"`)):
					return http.StatusNotFound, "404 page not found"
				case h.env.Method == "ping" && pingRefused:
					return http.StatusNotFound, `{"jsonrpc":"2.0","id":` + string(h.env.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`
				}
				return 0, ""
			})
			r := startStub(t, s, Child{})
			r.send(initLegacy, initialized, call("2", "nowhere", `{}`))
			code, text := errorOf(t, r.rec.answer(t, "2").msg)
			if code != wire.CodeInternalError || !strings.Contains(text, "404 Not Found") || !strings.Contains(text, "404 page not found") {
				t.Errorf("answer: %d %q", code, text)
			}
			testkit.Eventually(t, 10*time.Second, "the session check", func() bool {
				return strings.Contains(r.log.String(), "the session is alive")
			})
			pings := s.seen("ping")
			if len(pings) != 1 || pings[0].header.Get("Mcp-Session-Id") != "s1" || !bytes.Contains(pings[0].body, []byte("mcpflow-session-check")) {
				t.Fatalf("the check: %v", pings)
			}
			r.send(call("3", "echo", `{}`))
			if got := r.rec.answer(t, "3"); !bytes.Contains(got.msg, []byte(`"fine":true`)) {
				t.Errorf("next call: %s", got.msg)
			}
			for _, e := range r.rec.all() {
				if bytes.Contains(e.msg, []byte("mcpflow-session-check")) {
					t.Errorf("the check's answer was delivered: %s", e.msg)
				}
			}
			r.open()
		})
	}
}

// TestLink404SessionGone: a 404 to a call, and a 404 to the link's check
// (here a TypeScript-like JSON-RPC error under id null, which answers no
// ping): the call is answered, then the link ends, and Lost says why.
func TestLink404SessionGone(t *testing.T) {
	t.Parallel()
	var gone atomic.Bool
	s := sessionStub(t, func(h hit) (int, string) {
		switch {
		case h.env.Method == "tools/call" && bytes.Contains(h.body, []byte(`"end"`)):
			gone.Store(true)
			return 0, ""
		case !gone.Load():
			return 0, ""
		case h.env.Method == "ping":
			return http.StatusNotFound, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`
		}
		return http.StatusNotFound, "session not found"
	})
	r := startStub(t, s, Child{})
	r.send(initLegacy, initialized, call("2", "end", `{}`))
	r.rec.answer(t, "2")
	r.open()
	r.send(call("3", "echo", `{}`))
	// The call that found the session gone is not answered by the link:
	// the relay answers it with the report of the lost session.
	select {
	case <-r.l.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("Done still open; log:\n%s", r.log.String())
	}
	if got := r.l.Lost(); got != textSessionLost {
		t.Errorf("Lost: %q", got)
	}
	if n := len(s.seen("ping")); n != 1 {
		t.Errorf("%d checks, want 1", n)
	}
	for _, m := range r.rec.all() {
		if e, err := wire.Peek(m.msg); err == nil && string(e.ID) == "3" {
			t.Errorf("the link answered the call itself: %s", m.msg)
		}
	}
}

// TestLinkStreamCut: a call's event stream cut in the middle of an event
// gets the link's error, after failGrace; the cut event is not passed on,
// and the next call gets its answer.
func TestLinkStreamCut(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		if h.env.Method == "cut" {
			send := sse(w)
			send(`data: {"jsonrpc":"2.0","id":1,"res`)
			panic(http.ErrAbortHandler)
		}
		result(w, h, `{}`)
	})
	r := startStub(t, s, Child{})
	start := time.Now()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"cut"}`)
	code, text := errorOf(t, r.rec.answer(t, "1").msg)
	if took := time.Since(start); took < failGrace {
		t.Errorf("answered after %v, before failGrace", took)
	}
	if code != wire.CodeInternalError || !strings.Contains(text, "event stream") {
		t.Errorf("answer: %d %q", code, text)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"fine"}`)
	r.rec.answer(t, "2")
	if evs := r.rec.all(); len(evs) != 2 {
		t.Errorf("delivered:\n%s", r.rec.dump())
	}
	r.open()
}

// TestLinkStreamResumed: a call's stream that ends before its answer,
// after an event with an id, is resumed with a GET carrying
// Last-Event-ID, and the answer comes on it (rel as on the POST's stream).
func TestLinkStreamResumed(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		switch {
		case h.method == http.MethodGet && h.header.Get("Last-Event-ID") == "ev-1":
			send := sse(w)
			send("id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":2}}\n\n")
			send("id: ev-3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resumed\":true}}\n\n")
		case h.method == http.MethodGet:
			w.WriteHeader(http.StatusBadRequest)
		default:
			send := sse(w)
			send("id: ev-0\nretry: 10\ndata:\n\n") // a priming event
			send("id: ev-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		}
	})
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"work","params":{"_meta":{"progressToken":1}}}`)
	at, got := r.rec.await(t, "the answer", 0, isAnswer("1"))
	if !bytes.Contains(got.msg, []byte(`"resumed":true`)) {
		t.Errorf("answer: %s", got.msg)
	}
	evs := r.rec.all()
	if at != 2 || !isMethod("notifications/progress")(evs[0]) || !isMethod("notifications/progress")(evs[1]) || string(evs[0].rel) != "1" || string(evs[1].rel) != "1" {
		t.Errorf("delivered:\n%s", r.rec.dump())
	}
}

// TestLinkSSEFraming: the events of a call's stream as the event stream
// format has them (CRLF, comments, multi-line data, other event names,
// events without data), and what is no message: one event that is not
// JSON (Junk, badJSON), one that is JSON but no JSON-RPC (Junk); the
// call's notifications come with rel = its id, before its answer, and the
// next call gets its answer.
func TestLinkSSEFraming(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		if h.env.Method != "work" {
			result(w, h, `{}`)
			return
		}
		send := sse(w)
		send(": a comment\r\n\r\n")
		send("event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\r\n\r\n")
		send("data: this is not JSON\n\n")
		send("event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"skipped\"}\n\n")
		send("data: {\"hello\":1}\n\n")
		send("data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\ndata: \"method\":\"sampling/createMessage\",\"params\":{}}\n\n")
		send("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"done\":true}}\n\n")
	})
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"work"}`)
	r.rec.answer(t, "1")
	r.send(`{"jsonrpc":"2.0","id":2,"method":"fine"}`)
	r.rec.answer(t, "2")
	want := []string{
		`Message({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}, rel 1)`,
		`Junk("this is not JSON", true)`,
		`Junk("{\"hello\":1}", false)`,
		"Message({\"jsonrpc\":\"2.0\",\"id\":\"s1\",\n\"method\":\"sampling/createMessage\",\"params\":{}}, rel 1)",
		`Message({"jsonrpc":"2.0","id":1,"result":{"done":true}}, rel )`,
		`Message({"jsonrpc":"2.0","id":2,"result":{}}, rel )`,
	}
	var got []string
	for _, e := range r.rec.all() {
		got = append(got, e.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("delivered:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r.open()
}

// TestLinkTooLarge: a message over MaxMessage, on an event stream (one
// long line) or as a JSON body, is reported with the id of the request
// it answered; the request's stream is not read past the limit (a
// server may send an event that never ends), the link adds no answer of
// its own (the relay answers), and the next call gets its answer.
func TestLinkTooLarge(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20)
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		switch h.env.Method {
		case "bigsse":
			send := sse(w)
			send(`data: {"jsonrpc":"2.0","id":` + string(h.env.ID) + `,"result":{"text":"` + big + "\"}}\n\n")
			send("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"after\":true}}\n\n")
		case "bigjson":
			result(w, h, `{"text":"`+big+`"}`)
		default:
			result(w, h, `{}`)
		}
	})
	r := startStub(t, s, Child{MaxMessage: 64 << 10})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"bigsse"}`, `{"jsonrpc":"2.0","id":2,"method":"bigjson"}`)
	for _, id := range []string{"1", "2"} {
		_, e := r.rec.await(t, "TooLarge "+id, 0, func(e recorded) bool { return e.kind == "large" && string(e.tl.ID()) == id })
		// An event is read up to the limit only (the stream is cut there);
		// a JSON body's size is its Content-Length.
		if e.tl.Max != 64<<10 || e.tl.Size <= e.tl.Max || (id == "2" && e.tl.Size < 1<<20) {
			t.Errorf("TooLarge %s: size %d, max %d", id, e.tl.Size, e.tl.Max)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"fine"}`)
	r.rec.answer(t, "3")
	time.Sleep(failGrace + 300*time.Millisecond) // an answer of the link's would come by now
	for _, e := range r.rec.all() {
		if isAnswer("1")(e) || isAnswer("2")(e) {
			t.Errorf("the link answered a request the relay answers: %s", e.msg)
		}
	}
	r.open()
}

// TestLinkNotificationRefused: a notification the server refuses is
// logged and dropped; the link goes on.
func TestLinkNotificationRefused(t *testing.T) {
	t.Parallel()
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		if !h.env.IsRequest() {
			http.Error(w, "oops", http.StatusInternalServerError)
			return
		}
		result(w, h, `{}`)
	})
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`, `{"jsonrpc":"2.0","id":1,"method":"fine"}`)
	r.rec.answer(t, "1")
	if !strings.Contains(r.log.String(), "refused a message") {
		t.Errorf("log:\n%s", r.log.String())
	}
	if n := len(s.seen("notifications/cancelled")); n != 1 {
		t.Errorf("the notification was POSTed %d times", n)
	}
	r.open()
}

// TestLinkClose: Close cancels the exchanges in flight (no DELETE, no
// answer of the link's), sends nothing more, and Done closes.
func TestLinkClose(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	s := newStub(t, func(w http.ResponseWriter, h hit) {
		if h.env.Method == "hang" {
			sse(w)
			<-h.ctx.Done()
			close(cancelled)
			return
		}
		result(w, h, `{}`)
	})
	r := startStub(t, s, Child{})
	r.send(`{"jsonrpc":"2.0","id":1,"method":"hang"}`)
	testkit.Eventually(t, 10*time.Second, "the call at the server", func() bool { return len(s.seen("hang")) == 1 })
	r.l.Close()
	select {
	case <-r.l.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done still open after Close")
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the exchange was not cancelled")
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"fine"}`)
	time.Sleep(failGrace + 200*time.Millisecond) // what the link would send or answer, by now
	if n := len(s.seen("fine")); n != 0 {
		t.Error("a message was sent after Close")
	}
	if n := len(s.seen(http.MethodDelete)); n != 0 {
		t.Error("a DELETE was sent")
	}
	if evs := r.rec.all(); len(evs) != 0 {
		t.Errorf("delivered after Close:\n%s", r.rec.dump())
	}
}

// TestPrepareStartFailed: a process that did not start frees its log:
// the log's reader ends; a placeholder URL gives it a PORT.
func TestPrepareStartFailed(t *testing.T) {
	t.Parallel()
	c := Child{URL: "http://127.0.0.1:{port}/mcp", Placeholder: "{port}"}
	cmd := exec.Command("/nonexistent/mcpflow-test-server")
	logs, url, err := c.Prepare(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cmd.Env, "\n"), "PORT=") || strings.Contains(url, "{port}") {
		t.Errorf("no PORT in the environment, or URL %s", url)
	}
	if err := cmd.Start(); err == nil {
		t.Fatal("started")
	}
	logs.Close()
	if _, err := logs.Read(make([]byte, 1)); err == nil {
		t.Error("logs still open")
	}
}
