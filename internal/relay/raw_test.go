package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// wire is a raw JSON-RPC client for tests that need exact bytes.
type rawPeer struct {
	t     testing.TB
	r     *Relay
	w     io.WriteCloser
	lines chan string
	logs  *testkit.Buffer
	done  chan struct{}
	// variant is the fixture's variant file: writing v2 adds a tool.
	variant string
}

func newRawPeer(t testing.TB, cfg func(*Config), args ...string) *rawPeer {
	t.Helper()
	dir := t.TempDir()
	variant := filepath.Join(dir, "variant")
	os.WriteFile(variant, []byte("v1"), 0o644)
	logs := &testkit.Buffer{}
	c := Config{
		Child:   Child{Command: append([]string{testkit.Fixture(t), "-variant-file", variant}, args...), StopTimeout: time.Second},
		Logger:  slog.New(log.NewWithOptions(logs, log.Options{Level: log.DebugLevel})),
		Notices: true,
	}
	if cfg != nil {
		cfg(&c)
	}
	w := &rawPeer{t: t, r: New(c), lines: make(chan string, 1000), logs: logs, done: make(chan struct{}), variant: variant}
	c2rR, c2rW := io.Pipe()
	r2cR, r2cW := io.Pipe()
	w.w = c2rW
	go func() {
		defer close(w.done)
		_ = wire.Serve(context.Background(), wire.NewReader(c2rR, c.MaxMessage), r2cW, w.r, wire.ServeOptions{Grace: w.r.cfg.Queue.Timeout, InputEnded: w.r.InputEnded})
		w.r.Close()
		r2cW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(r2cR)
		sc.Buffer(nil, 1<<30)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	t.Cleanup(func() {
		c2rW.Close()
		<-w.done
		if t.Failed() {
			t.Logf("relay log:\n%s", logs.String())
		}
	})
	if _, err := w.r.Restart(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	if !testkit.Wait(20*time.Second, func() bool { return w.r.Stats().Pid != 0 }) {
		t.Fatal("the session's child did not start")
	}
	return w
}

func (w *rawPeer) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.w, line+"\n"); err != nil {
		w.t.Fatal(err)
	}
}

// line returns the next line from the relay.
func (w *rawPeer) line() string {
	w.t.Helper()
	select {
	case line := <-w.lines:
		return line
	case <-time.After(20 * time.Second):
		w.t.Fatal("no message from the relay")
		return ""
	}
}

// recv returns the next message from the relay, decoded.
func (w *rawPeer) recv() map[string]any {
	w.t.Helper()
	select {
	case line, ok := <-w.lines:
		if !ok {
			w.t.Fatal("relay closed its stdout")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			w.t.Fatalf("relay wrote invalid JSON %q: %v", line, err)
		}
		return m
	case <-time.After(20 * time.Second):
		w.t.Fatal("no message from the relay")
		return nil
	}
}

// recvID skips notifications and returns the response with the given id.
func (w *rawPeer) recvID(id any) map[string]any {
	w.t.Helper()
	want, _ := json.Marshal(id)
	for {
		m := w.recv()
		got, _ := json.Marshal(m["id"])
		if _, isResp := m["method"]; !isResp && string(got) == string(want) {
			return m
		}
	}
}

// quiet asserts that nothing arrives for a moment.
func (w *rawPeer) quiet(d time.Duration) {
	w.t.Helper()
	select {
	case line := <-w.lines:
		w.t.Fatalf("unexpected message: %s", line)
	case <-time.After(d):
	}
}

const legacyInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func modernMeta() string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
}

func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	f, _ := e["code"].(float64)
	return int(f)
}

func TestWireDiscoverThenInitialize(t *testing.T) {
	t.Parallel()
	// Claude Code sends initialize after a successful server/discover; a Go
	// SDK server refuses that, so the relay hands it to a fresh child.
	w := newRawPeer(t, nil)
	w.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta() + `}}`)
	d := w.recvID("d")
	caps := d["result"].(map[string]any)["capabilities"].(map[string]any)
	if caps["tools"].(map[string]any)["listChanged"] != true {
		t.Fatalf("discover result not forced: %v", d)
	}
	w.send(legacyInit)
	res := w.recvID(0)
	if res["error"] != nil {
		t.Fatalf("initialize after discover failed: %v", res)
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy ok"}}}`)
	if r := w.recvID(1); !strings.Contains(mustMarshal(r), "legacy ok") {
		t.Fatalf("call after fallback: %v", r)
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestWireModernListenSurvivesRestart(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil)
	w.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta() + `}}`)
	w.recvID("d")
	w.send(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{` + modernMeta() + `,"notifications":{"toolsListChanged":true}}}`)
	ack := w.recv()
	if ack["method"] != "notifications/subscriptions/acknowledged" || !strings.Contains(mustMarshal(ack), `"toolsListChanged":true`) {
		t.Fatalf("ack: %v", ack)
	}
	os.WriteFile(w.variant, []byte("v2"), 0o644) // a new tool: the list changes
	if _, err := w.r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The client sees the relay's list_changed tagged with its listen id,
	// and neither a second acknowledgement nor an error for the listen.
	n := w.recv()
	if n["method"] != "notifications/tools/list_changed" || !strings.Contains(mustMarshal(n), `"io.modelcontextprotocol/subscriptionId":7`) {
		t.Fatalf("after restart: %v", n)
	}
	w.quiet(300 * time.Millisecond)
	// The listen is still open on the new child: requests keep working.
	w.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{` + modernMeta() + `,"name":"echo","arguments":{"text":"x"}}}`)
	if r := w.recvID(8); r["error"] != nil {
		t.Fatalf("call: %v", r)
	}
}

func TestWireBadInput(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, func(c *Config) { c.MaxMessage = 4096 })
	w.send(legacyInit)
	w.recvID(0)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	cases := []struct {
		name, line string
		id         any
		code       int
	}{
		{"not JSON", `this is not json`, nil, wire.CodeParseError},
		{"truncated JSON", `{"jsonrpc":"2.0","id":5,"method":"ping"`, nil, wire.CodeParseError},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", nil, wire.CodeParseError},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, nil, wire.CodeInvalidRequest},
		{"method named twice", `{"jsonrpc":"2.0","id":"m","method":"ping","method":"tools/list"}`, "m", wire.CodeInvalidRequest},
		{"id named twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, nil, wire.CodeInvalidRequest},
		{"requestId in another case", `{"jsonrpc":"2.0","id":"c","method":"ping","params":{"RequestId":1}}`, "c", wire.CodeInvalidRequest},
		{"id without method", `{"jsonrpc":"2.0","id":9}`, 9, wire.CodeInvalidRequest},
		{"too large", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 5000) + `"}}}`, 10, wire.CodeInvalidRequest},
	}
	for _, c := range cases {
		w.send(c.line)
		m := w.recv()
		if mustMarshal(m["id"]) != mustMarshal(c.id) || errCode(m) != c.code {
			t.Errorf("%s: got %v, want id %v code %d", c.name, m, c.id, c.code)
		}
	}
	// A response to an unknown id and a notification with an unknown
	// method are dropped; the relay goes on.
	w.send(`{"jsonrpc":"2.0","id":"nobody","result":{}}`)
	w.send(`{"jsonrpc":"2.0","method":"notifications/whatever"}`)
	w.send(`{"jsonrpc":"2.0","id":11,"method":"ping"}`)
	if m := w.recvID(11); m["error"] != nil {
		t.Fatalf("ping after bad input: %v", m)
	}
	// A batch: each element handled, the answers in one array, errors
	// for bad elements included, notifications unanswered.
	w.send(`[{"jsonrpc":"2.0","id":12,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/whatever"},{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}},7]`)
	select {
	case line := <-w.lines:
		var arr []map[string]any
		if err := json.Unmarshal([]byte(line), &arr); err != nil || len(arr) != 3 {
			t.Fatalf("batch answer is not an array of 3: %s", line)
		}
		ids := map[string]bool{}
		for _, m := range arr {
			ids[mustMarshal(m["id"])] = true
		}
		if !ids["12"] || !ids["13"] || !ids["null"] {
			t.Fatalf("batch answer ids: %s", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no batch answer")
	}
	// A batch of notifications only gets no answer.
	w.send(`[{"jsonrpc":"2.0","method":"notifications/whatever"}]`)
	w.send(`{"jsonrpc":"2.0","id":14,"method":"ping"}`)
	if m := w.recv(); mustMarshal(m["id"]) != "14" {
		t.Fatalf("after a notification batch: %v", m)
	}
}

func TestWireDuplicateID(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil)
	w.send(legacyInit)
	w.recvID(0)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":500}}}`)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	first := w.recv()
	if errCode(first) != wire.CodeInvalidRequest || !strings.Contains(errMessage(first), "in flight") {
		t.Fatalf("duplicate id: %v", first)
	}
	if second := w.recvID(1); second["result"] == nil {
		t.Fatalf("original call: %v", second)
	}
}

func TestWireLegacyReplaysSessionState(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil)
	w.send(legacyInit)
	w.recvID(0)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`)
	w.recvID(1)
	os.WriteFile(w.variant, []byte("v2"), 0o644) // a new tool: the list changes
	if _, err := w.r.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := w.recv()
	if n["method"] != "notifications/tools/list_changed" {
		t.Fatalf("after restart: %v", n)
	}
	if !strings.Contains(w.logs.String(), "restart ✓") {
		t.Fatal("no restart line in the log")
	}
	s := only(w.r)
	s.mu.Lock()
	level := string(s.st.Level)
	s.mu.Unlock()
	if !strings.Contains(level, "debug") {
		t.Fatalf("log level not kept for replay: %q", level)
	}
}

func TestWireUnknownPassesThrough(t *testing.T) {
	t.Parallel()
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			w := newRawPeer(t, nil)
			meta := w.handshake(era)
			// An unknown method reaches the child, whose answer comes back.
			w.send(`{"jsonrpc":"2.0","id":20,"method":"tasks/frobnicate","params":{` + meta + `"taskId":"x","x-unknown":{"deep":[1,2]}}}`)
			m := w.recvID(20)
			if errCode(m) != wire.CodeMethodNotFound || strings.Contains(errMessage(m), "mcpflow") {
				t.Fatalf("unknown method: want the server's -32601, got %v", m)
			}
			// Unknown fields and _meta in a call pass untouched.
			w.send(`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{` + meta + `"name":"echo","arguments":{"text":"x"},"x-extra":true}}`)
			if m := w.recvID(21); m["result"] == nil {
				t.Fatalf("call with extra fields: %v", m)
			}
		})
	}
}

// A legacy server refuses server/discover: its error reaches the client
// unchanged and without a warning, and the client's fallback initialize
// goes to that same child.
func TestWireLegacyServerRefusesDiscover(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil, "-no-discover")
	pid := w.r.Stats().Pid
	w.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + modernMeta() + `}}`)
	if d := w.recvID("d"); errCode(d) != wire.CodeMethodNotFound {
		t.Fatalf("discover: %v, want the server's method-not-found error", d)
	}
	w.send(legacyInit)
	if res := w.recvID(0); res["error"] != nil {
		t.Fatalf("initialize after a refused discover: %v", res)
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"state","arguments":{}}}`)
	if r := w.recvID(1); !strings.Contains(mustMarshal(r), "pid="+strconv.Itoa(pid)) {
		t.Fatalf("the call went to another child than %d: %v", pid, r)
	}
	if logs := w.logs.String(); strings.Contains(logs, "WARN") || strings.Contains(logs, "could not read") {
		t.Fatalf("a refused discover was logged as a problem:\n%s", logs)
	}
}

// Every id comes back as the client wrote it, though the Go SDK child
// turns 6.5 into 6 and integers past 2^53 into others: such ids reach the
// child under ids of the relay's. A cancel of one reaches the call it
// names; an id that is no string or number is refused.
func TestWireIDsKeptExactly(t *testing.T) {
	t.Parallel()
	w := newRawPeer(t, nil)
	w.send(legacyInit)
	w.recvID(0)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{`6.5`, `9007199254740993`, `-0`, `1e2`, `"é\"\u0001x"`, `"a\/b"`, `"<&>"`, `12`, `"plain-id"`} {
		w.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		line := w.line()
		if !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"result":`) || !strings.Contains(line, "hi") {
			t.Errorf("id %s came back as %s", id, line)
		}
	}
	w.send(`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`)
	if m := w.recv(); errCode(m) != wire.CodeInvalidRequest || m["id"] != nil {
		t.Errorf("object id: %v", m)
	}
	w.send(`{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"slow","arguments":{"ms":30000}}}`)
	waitStats(t, w.r, "the slow call sent to the child", func(st Stats) bool { return st.InFlight == 1 })
	w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.5}}`)
	w.send(`{"jsonrpc":"2.0","id":2.5,"method":"ping"}`) // the id is free again at once
	if line := w.line(); line != `{"jsonrpc":"2.0","id":2.5,"result":{}}` {
		t.Errorf("ping after the cancel: %s", line)
	}
	w.quiet(300 * time.Millisecond)
	if st := w.r.Stats(); st.InFlight != 0 {
		t.Errorf("the canceled call is still in flight: %+v", st)
	}
}
