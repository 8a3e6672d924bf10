//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The transparency matrix: whatever the mode, what the server says reaches
// the client as if nothing stood between them. Each test runs the same
// exchange with the server directly and through the real mcpflow, and
// compares what the client read, on the wire:
//
//	modes     watch ([run], client on stdio), watch --http (client over
//	          Streamable HTTP), the mux ([servers.s], stdio), the mux --http
//	kinds     a stdio child, a Streamable HTTP child ([run] url)
//	eras      legacy (initialize): the TypeScript SDK 1.x servers
//	          (testdata/node/server.mjs, httpserver.mjs, their tools in
//	          tools.mjs) driven by a raw JSON-RPC client of this file;
//	          2026-07-28 (server/discover, _meta on every request): the kit's
//	          Go fixture (stateless over HTTP), driven by the Go SDK client
//	          through a tee that records what it reads and writes
//
// Only ids, the names the mux prefixes (s__tool) and progress tokens may
// differ; a result, a notification's params or a server request's params
// that is not byte-equal to the direct one fails the test, as does a
// notification of a call that arrives after the call's result, or (over
// HTTP) on another stream than the call's.

// transparencyMode is how the client reaches the server.
type transparencyMode struct {
	name string
	http bool // the client connects to mcpflow's HTTP front
	mux  bool // [servers.s] (tools named s__tool), else [run]
}

var transparencyModes = []transparencyMode{
	{"watch-stdio", false, false},
	{"watch-http", true, false},
	{"mux-stdio", false, true},
	{"mux-http", true, true},
}

// childKinds: how mcpflow speaks to the server.
var childKinds = []string{"stdio-child", "http-child"}

// Waits, all bounded: a request's answer, a server's start.
const (
	answerWait = 45 * time.Second
	startWait  = 45 * time.Second
)

// ---- the wire log: what a client read and wrote, in order ----

// envelope is a JSON-RPC message's members, undecoded.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// wireMsg is one message the client read (dir "in") or wrote ("out"), on
// stream: "stdio"; over HTTP "post:ID" (the answer to the POST of the
// client's request ID) or "get" (the standalone stream); "post" for a
// POST of a notification or an answer.
type wireMsg struct {
	seq    int
	dir    string
	stream string
	raw    []byte
	env    envelope
	bad    error // not a JSON-RPC message
}

func (m wireMsg) isRequest() bool  { return m.env.Method != "" && m.env.ID != nil }
func (m wireMsg) isResponse() bool { return m.env.Method == "" && m.env.ID != nil }

func (m wireMsg) String() string {
	raw := string(m.raw)
	if len(raw) > 400 {
		raw = raw[:400] + "…"
	}
	return fmt.Sprintf("#%d %s %s %s", m.seq, m.dir, m.stream, raw)
}

// wireLog is every message of one client connection, in the order the
// client read or wrote them (on one stream, the order of the stream).
type wireLog struct {
	mu   sync.Mutex
	msgs []wireMsg
}

func (l *wireLog) add(dir, stream string, raw []byte) wireMsg {
	m := wireMsg{dir: dir, stream: stream, raw: bytes.Clone(raw)}
	m.bad = json.Unmarshal(m.raw, &m.env)
	l.mu.Lock()
	defer l.mu.Unlock()
	m.seq = len(l.msgs)
	l.msgs = append(l.msgs, m)
	return m
}

func (l *wireLog) all() []wireMsg {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

// dump is the log, for a failure's message.
func (l *wireLog) dump() string {
	var b strings.Builder
	for _, m := range l.all() {
		fmt.Fprintln(&b, m)
	}
	return b.String()
}

// callOf is the client's request with id (out) and its answer (in), or
// ok false.
func (l *wireLog) callOf(id json.RawMessage) (req, resp wireMsg, ok bool) {
	var haveReq bool
	for _, m := range l.all() {
		if m.dir == "out" && m.isRequest() && bytes.Equal(m.env.ID, id) {
			req, haveReq = m, true
		}
		if haveReq && m.dir == "in" && m.isResponse() && bytes.Equal(m.env.ID, id) {
			return req, m, true
		}
	}
	return req, resp, false
}

// during is what the client read on the stream of the call req (over
// HTTP, its POST's answer; on stdio, the one stream) after sending req and
// before its answer resp, keeping what keep accepts.
func (l *wireLog) during(req, resp wireMsg, keep func(wireMsg) bool) []wireMsg {
	var out []wireMsg
	for _, m := range l.all() {
		if m.dir == "in" && m.stream == resp.stream && m.seq > req.seq && m.seq < resp.seq && keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// count is how many messages the client read that keep accepts.
func (l *wireLog) count(keep func(wireMsg) bool) int {
	n := 0
	for _, m := range l.all() {
		if m.dir == "in" && keep(m) {
			n++
		}
	}
	return n
}

// member is the raw value at path in the JSON object raw (nil if absent).
func member(raw json.RawMessage, path ...string) json.RawMessage {
	for _, k := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		raw = obj[k]
	}
	return raw
}

// str is the JSON string raw, or "".
func str(raw json.RawMessage) string {
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// resultText is the first text content of a tools/call result.
func resultText(result json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(result, &r)
	for _, c := range r.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

// readSSE calls event with the raw bytes of each server-sent event of r
// (its lines and the blank line that ends it) and its data, until r ends.
func readSSE(r io.Reader, event func(raw, data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var raw, data []byte
	has := false
	flush := func() error {
		defer func() { raw, data, has = nil, nil, false }()
		if has && len(data) > 0 {
			return event(raw, data)
		}
		return nil
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			raw = append(raw, line...)
			l := bytes.TrimRight(line, "\r\n")
			switch {
			case len(l) == 0 && bytes.HasSuffix(line, []byte("\n")):
				if ferr := flush(); ferr != nil {
					return ferr
				}
			case bytes.HasPrefix(l, []byte("data:")):
				v := l[len("data:"):]
				v = bytes.TrimPrefix(v, []byte(" "))
				if has {
					data = append(data, '\n')
				}
				data = append(data, v...)
				has = true
			}
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// reporter is what the checks report to: the test, or (in
// TestTransparencyChecksCatchAlterations) a recorder.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// ---- processes ----

// tproc is a process a transparency test started: mcpflow on stdio, or a
// server run directly.
type tproc struct {
	cmd     *exec.Cmd
	tag     string
	stdin   io.WriteCloser
	stdout  io.ReadCloser
	stderr  *testkit.Buffer
	exited  chan error
	capture string // mcpflow's --traffic file, "" for a server
}

// startTProc starts name args in dir with env added, its stdin and stdout
// piped. When the test ends it gets SIGTERM, must exit within 20 s, and
// must leave no process (its tag's).
func startTProc(t *testing.T, dir string, env []string, name string, args ...string) *tproc {
	t.Helper()
	p := &tproc{tag: testkit.Tag(t), stderr: &testkit.Buffer{}, exited: make(chan error, 1)}
	p.cmd = testkit.Command(p.tag, env, name, args...)
	p.cmd.Dir = dir
	p.cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = p.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			t.Errorf("%s did not exit on SIGTERM", filepath.Base(name))
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(name), p.stderr.String())
			logCapture(t, p.capture)
		}
		testkit.NoLeftovers(t, testkit.Procs{Tag: p.tag})
	})
	return p
}

// logCapture logs mcpflow's traffic capture (its end when long).
func logCapture(t *testing.T, path string) {
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(b) > 48<<10 {
		b = append([]byte("…\n"), b[len(b)-48<<10:]...)
	}
	t.Logf("traffic capture %s:\n%s", path, b)
}

// waitListening waits until something accepts connections at addr.
func waitListening(t *testing.T, addr string, p *tproc) {
	t.Helper()
	deadline := time.Now().Add(startWait)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("the server exited before listening at %s: %v\n%s", addr, err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens at %s after %v\n%s", addr, startWait, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// transparencyPeers returns testdata/node/server.mjs and httpserver.mjs
// (absolute), skipping the test (failing it in CI) when the TypeScript SDK
// peers are not installed (make node-deps).
func transparencyPeers(t *testing.T) (stdio, http string) {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("testdata", "node"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("TypeScript SDK peers not installed: make node-deps")
		}
		t.Skip("TypeScript SDK peers not installed: run make node-deps")
	}
	return filepath.Join(dir, "server.mjs"), filepath.Join(dir, "httpserver.mjs")
}

// childRun is how a server of kind is started: its command (an HTTP one
// listens at 127.0.0.1:{port}, PORT in its environment).
type childRun struct {
	command []string
	http    bool
}

// mcpflowProject writes an mcpflow.toml serving child in mode (as [run],
// or as [servers.s] for the mux) into a new folder.
func mcpflowProject(t *testing.T, mode transparencyMode, child childRun) string {
	t.Helper()
	q := make([]string, len(child.command))
	for i, a := range child.command {
		q[i] = strconv.Quote(a)
	}
	table := "run"
	if mode.mux {
		table = "servers.s.run"
	}
	toml := fmt.Sprintf("[%s]\ncommand = [%s]\nstop_timeout = \"2s\"\n", table, strings.Join(q, ", "))
	if child.http {
		toml += "url = \"http://127.0.0.1:{port}/mcp\"\n"
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// viaMCPFlow starts mcpflow watch in mode on child, with the debug log
// and the traffic capture (logged when the test fails). On stdio it
// returns the process; over HTTP the front's URL.
func viaMCPFlow(t *testing.T, mode transparencyMode, child childRun) (*tproc, string) {
	t.Helper()
	dir := mcpflowProject(t, mode, child)
	// Outside the project, which mcpflow watches.
	capture := filepath.Join(t.TempDir(), "traffic.jsonl")
	args := []string{"watch", "-c", "mcpflow.toml", "--log-level", "debug", "--traffic", capture}
	if mode.http {
		args = append(args, "--http", "127.0.0.1:0")
		h := startHTTP(t, dir, args...)
		t.Cleanup(func() {
			if t.Failed() {
				logCapture(t, capture)
			}
		})
		return nil, h.url
	}
	p := startTProc(t, dir, nil, mcpflowBin, args...)
	p.capture = capture
	return p, ""
}

// directHTTP starts child (an HTTP server) on a free port and returns its
// URL once it listens.
func directHTTP(t *testing.T, child childRun) (*tproc, string) {
	t.Helper()
	port := freeTCPPort(t)
	cmd := make([]string, len(child.command))
	for i, a := range child.command {
		cmd[i] = strings.ReplaceAll(a, "{port}", port)
	}
	p := startTProc(t, t.TempDir(), []string{"PORT=" + port}, cmd[0], cmd[1:]...)
	waitListening(t, "127.0.0.1:"+port, p)
	return p, "http://127.0.0.1:" + port + "/mcp"
}

// ---- the raw client (legacy era) ----

// Canned answers the raw client gives the server's requests.
const (
	cannedSampling = `{"role":"assistant","content":{"type":"text","text":"canned sample <&> \u2028 ✓"},"model":"canned-model","stopReason":"endTurn","x_client_extra":{"kept":1}}`
	cannedElicit   = `{"action":"accept","content":{"answer":"canned elicit ✓"},"x_client_extra":{"kept":2}}`
	cannedRoots    = `{"roots":[{"uri":"file:///canned/root","name":"canned root"}],"x_client_extra":{"kept":3}}`
)

// clientExtra is the field no MCP revision defines in each canned answer:
// the server must get it (the TypeScript SDK keeps unknown fields of a
// result, and the ask_ tools return what they got).
var clientExtra = map[string]string{
	"ask_sampling": `\"x_client_extra\":{\"kept\":1}`,
	"ask_elicit":   `\"x_client_extra\":{\"kept\":2}`,
	"ask_roots":    `\"x_client_extra\":{\"kept\":3}`,
}

// rawClient speaks JSON-RPC with no SDK: it writes the bytes it is given,
// records every byte it reads (log), and answers the server's sampling,
// elicitation, roots and ping requests with canned results.
type rawClient struct {
	t   *testing.T
	log *wireLog
	// send writes one message; for a request, id is its id (over HTTP,
	// the POST's answer is recorded as stream "post:ID").
	send func(msg []byte, id string)
	// afterInit runs once the session is initialized (HTTP: opens the
	// GET stream).
	afterInit func()

	mu    sync.Mutex
	next  int
	waits map[string]chan wireMsg
	errs  []string // transport errors
}

func newRawClient(t *testing.T) *rawClient {
	return &rawClient{t: t, log: &wireLog{}, waits: map[string]chan wireMsg{}}
}

func (c *rawClient) transportError(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// receive records a message read on stream and acts on it.
func (c *rawClient) receive(stream string, raw []byte) {
	m := c.log.add("in", stream, raw)
	switch {
	case m.bad != nil:
		c.transportError("read a message that is not JSON-RPC on %s: %v: %q", stream, m.bad, raw)
	case m.isRequest():
		var result string
		switch m.env.Method {
		case "sampling/createMessage":
			result = cannedSampling
		case "elicitation/create":
			result = cannedElicit
		case "roots/list":
			result = cannedRoots
		case "ping":
			result = `{}`
		}
		var msg string
		if result != "" {
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, m.env.ID, result)
		} else {
			msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.env.ID)
		}
		c.write([]byte(msg), "")
	case m.isResponse():
		c.mu.Lock()
		ch := c.waits[string(m.env.ID)]
		delete(c.waits, string(m.env.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (c *rawClient) write(msg []byte, id string) {
	c.log.add("out", "", msg)
	c.send(msg, id)
}

// request sends method with params and returns its answer (and the
// request as recorded), failing the test when none comes in time.
func (c *rawClient) request(method, params string) (req, resp wireMsg) {
	c.t.Helper()
	c.mu.Lock()
	id := strconv.Itoa(c.next)
	c.next++
	ch := make(chan wireMsg, 1)
	c.waits[id] = ch
	c.mu.Unlock()
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
	req = c.log.add("out", "", []byte(msg))
	c.send([]byte(msg), id)
	select {
	case resp = <-ch:
		return req, resp
	case <-time.After(answerWait):
		c.mu.Lock()
		errs := strings.Join(c.errs, "\n")
		c.mu.Unlock()
		c.t.Fatalf("no answer to %s (id %s) within %v; transport errors: %s\nthe client's wire:\n%s", method, id, answerWait, errs, c.log.dump())
		return
	}
}

func (c *rawClient) notify(method string) {
	c.write([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","method":%q}`, method)), "")
}

// rawStdio is a raw client on a process's stdin and stdout.
func rawStdio(t *testing.T, p *tproc) *rawClient {
	c := newRawClient(t)
	var wmu sync.Mutex
	c.send = func(msg []byte, _ string) {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := p.stdin.Write(append(msg, '\n')); err != nil {
			c.transportError("write: %v", err)
		}
	}
	c.afterInit = func() {}
	go func() {
		br := bufio.NewReaderSize(p.stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if l := bytes.TrimRight(line, "\r\n"); len(l) > 0 {
				c.receive("stdio", l)
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

// rawHTTP is a raw client of a Streamable HTTP endpoint: one POST per
// message (Accept: application/json, text/event-stream), the answer read
// as JSON or as server-sent events; the session id and protocol version
// it was given sent back; the GET stream open once initialized. An HTTP
// error answering a request is recorded as a JSON-RPC error answer to it
// (stream "http-error").
func rawHTTP(t *testing.T, url string) *rawClient {
	c := newRawClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	var mu sync.Mutex
	var session, version string
	headers := func(req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
	}
	c.send = func(msg []byte, id string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			headers(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					c.transportError("POST %s: %v", msg, err)
				}
				return
			}
			defer resp.Body.Close()
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				mu.Lock()
				if session == "" {
					session = sid
				}
				mu.Unlock()
			}
			stream := "post"
			if id != "" {
				stream = "post:" + id
			}
			switch ct := resp.Header.Get("Content-Type"); {
			case resp.StatusCode >= 400:
				body, _ := io.ReadAll(resp.Body)
				if id == "" {
					c.transportError("POST %s: HTTP %d %s", msg, resp.StatusCode, body)
					return
				}
				errMsg, _ := json.Marshal(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body))
				c.receive("http-error", fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`, id, errMsg))
			case resp.StatusCode == http.StatusAccepted:
				if id != "" {
					c.transportError("POST of request %s: 202 Accepted, no answer", id)
				}
			case strings.HasPrefix(ct, "text/event-stream"):
				err := readSSE(resp.Body, func(_, data []byte) error {
					c.receive(stream, data)
					return nil
				})
				if err != nil && ctx.Err() == nil {
					c.transportError("reading the answer to %s: %v", msg, err)
				}
			case strings.HasPrefix(ct, "application/json"):
				body, err := io.ReadAll(resp.Body)
				if err != nil && ctx.Err() == nil {
					c.transportError("reading the answer to %s: %v", msg, err)
				}
				if len(bytes.TrimSpace(body)) > 0 {
					c.receive(stream, bytes.TrimSpace(body))
				}
			default:
				c.transportError("POST %s: HTTP %d, Content-Type %q", msg, resp.StatusCode, ct)
			}
		}()
	}
	c.afterInit = func() {
		// Initialized: take the negotiated version, open the GET stream
		// and wait for its headers, so that nothing sent on it is lost.
		for _, m := range c.log.all() {
			if m.isResponse() && bytes.Equal(m.env.ID, []byte("0")) {
				mu.Lock()
				version = str(member(m.env.Result, "protocolVersion"))
				mu.Unlock()
			}
		}
		open := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Accept", "text/event-stream")
			headers(req)
			resp, err := http.DefaultClient.Do(req)
			close(open)
			if err != nil {
				if ctx.Err() == nil {
					c.transportError("GET: %v", err)
				}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return // a server may have no standalone stream (405)
			}
			readSSE(resp.Body, func(_, data []byte) error {
				c.receive("get", data)
				return nil
			})
		}()
		select {
		case <-open:
		case <-time.After(answerWait):
			t.Fatalf("the GET stream did not open within %v", answerWait)
		}
	}
	return c
}

// ---- the legacy exchange ----

// legacyCall is one tools/call as the client saw it.
type legacyCall struct {
	result json.RawMessage // the answer's result member, as read
	err    json.RawMessage // or its error member
	// during is what the call brought on its own stream before its
	// result: "method params" of its log messages, progress
	// notifications and the server's requests.
	during []string
}

// legacyOutcome is what a legacy exchange observed.
type legacyOutcome struct {
	protocol string
	calls    map[string]legacyCall // by tool, unprefixed
	pids     []string              // pid before setLevel, after debug, after emergency
	levels   []string              // each setLevel's answer: "result" or "error"
	strays   []string              // call messages read elsewhere: another stream, after a result, or twice
}

const legacyInit = `{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{"form":{}},"roots":{"listChanged":true}},"clientInfo":{"name":"transparency-raw","version":"1"}}`

// callMessage tells the messages that belong to a call of this exchange:
// the TypeScript peer's log messages (logger ts-peer), progress
// notifications for a token of ours, the server's sampling, elicitation
// and roots requests.
func callMessage(m wireMsg) bool {
	switch m.env.Method {
	case "notifications/message":
		return str(member(m.env.Params, "logger")) == "ts-peer"
	case "notifications/progress":
		return strings.HasPrefix(str(member(m.env.Params, "progressToken")), "tok-")
	case "sampling/createMessage", "elicitation/create", "roots/list":
		return m.isRequest()
	}
	return false
}

// legacyExchange runs the legacy era's exchange with c, its tools named
// prefix+tool: initialize; the rich result; notify with a progress token;
// sampling, elicitation, roots; pid, logging/setLevel debug, pid,
// logging/setLevel emergency (refused by the HTTP peer with HTTP 400),
// pid.
func legacyExchange(t *testing.T, c *rawClient, prefix string) legacyOutcome {
	t.Helper()
	o := legacyOutcome{calls: map[string]legacyCall{}}
	_, init := c.request("initialize", legacyInit)
	if init.env.Result == nil {
		t.Fatalf("initialize: %s", init.raw)
	}
	o.protocol = str(member(init.env.Result, "protocolVersion"))
	c.notify("notifications/initialized")
	c.afterInit()

	// The server's tools are listed (a mux lists them once it has started
	// the server).
	deadline := time.Now().Add(startWait)
	for {
		_, resp := c.request("tools/list", `{}`)
		var list struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		json.Unmarshal(resp.env.Result, &list)
		if slices.ContainsFunc(list.Tools, func(tl struct{ Name string }) bool { return tl.Name == prefix+"pid" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%spid never listed; last tools/list: %s", prefix, resp.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// call calls tool, with a progress token when token is not "": a
	// progress notification belongs to the call whose token it carries,
	// a log message or a server request to the call in flight.
	call := func(tool, token string) legacyCall {
		t.Helper()
		meta := ""
		if token != "" {
			meta = fmt.Sprintf(`,"_meta":{"progressToken":%q}`, token)
		}
		params := fmt.Sprintf(`{"name":%q,"arguments":{}%s}`, prefix+tool, meta)
		req, resp := c.request("tools/call", params)
		lc := legacyCall{result: resp.env.Result, err: resp.env.Error}
		mine := func(m wireMsg) bool {
			if m.env.Method == "notifications/progress" {
				return token != "" && str(member(m.env.Params, "progressToken")) == token
			}
			return callMessage(m)
		}
		for _, m := range c.log.during(req, resp, mine) {
			lc.during = append(lc.during, m.env.Method+" "+string(m.env.Params))
		}
		o.calls[tool] = lc
		return lc
	}
	call("rich", "")
	call("notify", "tok-notify")
	call("ask_sampling", "")
	call("ask_elicit", "")
	call("ask_roots", "")
	pid := func() {
		lc := call("pid", "")
		o.pids = append(o.pids, resultText(lc.result))
	}
	setLevel := func(level string) {
		_, resp := c.request("logging/setLevel", fmt.Sprintf(`{"level":%q}`, level))
		if resp.env.Result != nil {
			o.levels = append(o.levels, "result")
		} else {
			o.levels = append(o.levels, "error "+string(resp.env.Error))
		}
	}
	pid()
	setLevel("debug")
	pid()
	setLevel("emergency")
	pid()

	// Nothing read was malformed, no answer of the client's was refused.
	c.mu.Lock()
	if len(c.errs) > 0 {
		t.Errorf("the client's transport:\n%s", strings.Join(c.errs, "\n"))
	}
	c.mu.Unlock()

	// Every message of a call was read once, on its stream, before its
	// result: any other is a stray.
	seen := 0
	for _, lc := range o.calls {
		seen += len(lc.during)
	}
	if n := c.log.count(callMessage); n != seen {
		for _, m := range c.log.all() {
			if m.dir == "in" && callMessage(m) {
				o.strays = append(o.strays, m.String())
			}
		}
	}
	return o
}

// checkLegacyShape checks what any legacy exchange with the TypeScript
// peer must show, direct or not (so that the comparison with the direct
// run compares something): the rich result has its image, structured
// content and unknown field; notify's 3 logs and 3 progress came in
// order before its result; each ask_ tool got the canned answer, after
// one server request; the pid never changed; each setLevel was answered.
func checkLegacyShape(t reporter, o legacyOutcome) {
	t.Helper()
	if o.protocol != "2025-11-25" {
		t.Errorf("protocol %q, want 2025-11-25", o.protocol)
	}
	rich := o.calls["rich"].result
	for _, path := range [][]string{{"x_unknown_field", "kept"}, {"structuredContent", "answer"}} {
		if member(rich, path...) == nil {
			t.Errorf("rich's result lacks %s: %s", strings.Join(path, "."), rich)
		}
	}
	if !bytes.Contains(rich, []byte(`"type":"image"`)) {
		t.Errorf("rich's result has no image: %s", rich)
	}
	var kinds []string
	for _, d := range o.calls["notify"].during {
		kinds = append(kinds, strings.Fields(d)[0])
	}
	want := slices.Repeat([]string{"notifications/message", "notifications/progress"}, 3)
	if !slices.Equal(kinds, want) {
		t.Errorf("notify's messages before its result: %q, want %q", o.calls["notify"].during, want)
	}
	for tool, w := range map[string][2]string{
		"ask_sampling": {"sampling/createMessage", "canned sample"},
		"ask_elicit":   {"elicitation/create", "canned elicit"},
		"ask_roots":    {"roots/list", "file:///canned/root"},
	} {
		lc := o.calls[tool]
		if len(lc.during) != 1 || !strings.HasPrefix(lc.during[0], w[0]+" ") {
			t.Errorf("%s: the server's requests on the call's stream before its result: %q, want one %s", tool, lc.during, w[0])
		}
		if text := resultText(lc.result); !strings.Contains(text, w[1]) {
			t.Errorf("%s: %q lacks the client's answer %q (%s)", tool, text, w[1], lc.err)
		}
		if !bytes.Contains(lc.result, []byte(clientExtra[tool])) {
			t.Errorf("%s: the client's answer reached the server without its unknown field %s: %s", tool, clientExtra[tool], lc.result)
		}
	}
	if len(o.pids) != 3 || o.pids[0] == "" || o.pids[1] != o.pids[0] || o.pids[2] != o.pids[0] {
		t.Errorf("pid before and after each logging/setLevel: %q (another pid: the server was restarted)", o.pids)
	}
	if len(o.levels) != 2 || o.levels[0] != "result" {
		t.Errorf("logging/setLevel answers: %q", o.levels)
	}
	if len(o.strays) > 0 {
		t.Errorf("messages of a call read elsewhere than on its stream before its result, or twice:\n%s", strings.Join(o.strays, "\n"))
	}
}

// compareLegacy checks that through mcpflow the client read what it read
// directly: each call's result byte for byte (the result member: the
// unknown field, the image, the structured content), the params of each
// log message, progress notification and server request of a call, byte
// for byte and in the same order.
func compareLegacy(t reporter, got, direct legacyOutcome) {
	t.Helper()
	for _, tool := range []string{"rich", "notify", "ask_sampling", "ask_elicit", "ask_roots"} {
		g, d := got.calls[tool], direct.calls[tool]
		if !bytes.Equal(g.result, d.result) {
			t.Errorf("%s: the result differs from the server's\n through mcpflow: %s\n directly:        %s", tool, orNone(g.result, g.err), d.result)
		}
		if !slices.Equal(g.during, d.during) {
			t.Errorf("%s: the call's messages before its result differ\n through mcpflow: %q\n directly:        %q", tool, g.during, d.during)
		}
	}
}

func orNone(result, err json.RawMessage) string {
	if result != nil {
		return string(result)
	}
	return "(no result; error " + string(err) + ")"
}

// TestTransparencyLegacy: the legacy era, the TypeScript SDK servers, a
// raw client; every mode × kind of child against the same server run
// directly. Checks: sampling, elicitation and roots requests from the
// server answered by the client; log messages sent during a call without
// any logging/setLevel all arrive, with the call's progress, in order,
// before its result, on its stream; logging/setLevel (served, or refused
// with HTTP 400 by the HTTP child) then a call works on the same server
// process; an image, structured content and an unknown field arrive
// byte-equal to direct.
func TestTransparencyLegacy(t *testing.T) {
	t.Parallel()
	stdioJS, httpJS := transparencyPeers(t)
	children := map[string]childRun{
		"stdio-child": {command: []string{"node", stdioJS}},
		"http-child":  {command: []string{"node", httpJS, "variant"}, http: true},
	}
	direct := map[string]*legacyOutcome{}
	t.Run("direct", func(t *testing.T) {
		for _, kind := range childKinds {
			direct[kind] = &legacyOutcome{}
			t.Run(kind, func(t *testing.T) {
				t.Parallel()
				child := children[kind]
				var c *rawClient
				if child.http {
					_, url := directHTTP(t, child)
					c = rawHTTP(t, url)
				} else {
					c = rawStdio(t, startTProc(t, t.TempDir(), nil, child.command[0], child.command[1:]...))
				}
				o := legacyExchange(t, c, "")
				checkLegacyShape(t, o)
				if t.Failed() {
					t.Logf("the client's wire:\n%s", c.log.dump())
				}
				*direct[kind] = o
			})
		}
	})
	if t.Failed() {
		t.Fatal("the servers run directly do not behave as this test expects")
	}
	for _, mode := range transparencyModes {
		for _, kind := range childKinds {
			t.Run(mode.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				p, url := viaMCPFlow(t, mode, children[kind])
				var c *rawClient
				if mode.http {
					c = rawHTTP(t, url)
				} else {
					c = rawStdio(t, p)
				}
				prefix := ""
				if mode.mux {
					prefix = "s__"
				}
				o := legacyExchange(t, c, prefix)
				checkLegacyShape(t, o)
				compareLegacy(t, o, *direct[kind])
				if t.Failed() {
					t.Logf("the client's wire:\n%s", c.log.dump())
				}
			})
		}
	}
}

// ---- the 2026-07-28 era: the Go SDK client through a recording tee ----

// teeStdio puts log between a Go SDK client and a process's stdio: each
// line the process writes is recorded, then passed on; each line the
// client writes is recorded, then written.
func teeStdio(log *wireLog, p *tproc) mcp.Transport {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(p.stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if l := bytes.TrimRight(line, "\r\n"); len(l) > 0 {
				log.add("in", "stdio", l)
			}
			if len(line) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return testkit.Stdio(pr, &teeWriter{log: log, w: p.stdin})
}

// teeWriter records each complete line written to w.
type teeWriter struct {
	log *wireLog
	w   io.WriteCloser
	mu  sync.Mutex
	buf []byte
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		if l := bytes.TrimRight(t.buf[:i], "\r"); len(l) > 0 {
			t.log.add("out", "stdio", l)
		}
		t.buf = t.buf[i+1:]
	}
	t.mu.Unlock()
	return t.w.Write(p)
}

func (t *teeWriter) Close() error { return t.w.Close() }

// teeRoundTripper records each message of each HTTP exchange: the POSTed
// one (out), then what the answer carries (in), as a JSON body or as
// server-sent events (each recorded before it is passed on, bytes
// unchanged), on stream "post:ID" for a request's POST, "get" for a GET.
type teeRoundTripper struct{ log *wireLog }

func (rt teeRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	stream := "get"
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		m := rt.log.add("out", "", body)
		stream = "post"
		if m.isRequest() {
			stream = "post:" + string(m.env.ID)
		}
	} else if req.Method != http.MethodGet {
		stream = strings.ToLower(req.Method)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
		orig := resp.Body
		pr, pw := io.Pipe()
		go func() {
			err := readSSE(orig, func(raw, data []byte) error {
				rt.log.add("in", stream, data)
				_, err := pw.Write(raw)
				return err
			})
			pw.CloseWithError(err)
		}()
		resp.Body = &teeBody{Reader: pr, closers: []io.Closer{pr, orig}}
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if b := bytes.TrimSpace(body); len(b) > 0 {
			rt.log.add("in", stream, b)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}

type teeBody struct {
	io.Reader
	closers []io.Closer
}

func (b *teeBody) Close() error {
	for _, c := range b.closers {
		c.Close()
	}
	return nil
}

// modernOutcome is what a 2026-07-28 exchange observed.
type modernOutcome struct {
	protocol string
	texts    map[string]string          // each tool's text, unprefixed
	results  map[string]json.RawMessage // each tool's final result, as read
	progress []string                   // the progress call's notifications before its result, on its stream
	logs     []string                   // the log call's log messages before its result, on its stream
	pids     []string
	strays   []string // progress or log messages read elsewhere
}

var statePID = regexp.MustCompile(`pid=(\d+)`)

// modernExchange runs the 2026-07-28 exchange with the Go SDK client
// (server/discover, _meta on every request; it answers a result that asks
// for input itself): state (pid); sample and roots (multi-round-trip);
// progress with a token; log with _meta's log level; whoami; state again.
func modernExchange(t *testing.T, log *wireLog, transport mcp.Transport, prefix string) modernOutcome {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "transparency-go", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "canned-model", Role: "assistant", Content: &mcp.TextContent{Text: "canned sample"}}, nil
		},
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) {},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
	})
	client.AddRoots(&mcp.Root{URI: "file:///canned/root", Name: "canned root"})
	cs := testkit.Connect(t, testkit.Modern.Version, client, transport)
	o := modernOutcome{protocol: cs.InitializeResult().ProtocolVersion, texts: map[string]string{}, results: map[string]json.RawMessage{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*answerWait)
	defer cancel()

	testkit.Eventually(t, startWait, prefix+"state listed", func() bool {
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if tool.Name == prefix+"state" {
				return true
			}
		}
		return false
	})
	call := func(tool string, args map[string]any, meta mcp.Meta) {
		t.Helper()
		params := &mcp.CallToolParams{Name: prefix + tool, Arguments: args, Meta: meta}
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatalf("%s%s: %v\nthe client's wire:\n%s", prefix, tool, err, log.dump())
		}
		o.texts[tool] = testkit.Text(res)
		if res.IsError {
			t.Errorf("%s%s: a tool error: %s", prefix, tool, o.texts[tool])
		}
	}
	state := func() {
		call("state", nil, nil)
		m := statePID.FindStringSubmatch(o.texts["state"])
		if m == nil {
			t.Fatalf("state: %q", o.texts["state"])
		}
		o.pids = append(o.pids, m[1])
	}
	state()
	call("sample", map[string]any{"text": "sample me"}, nil)
	call("roots", nil, nil)
	call("progress", map[string]any{"n": 3}, mcp.Meta{"progressToken": "tok-progress"})
	call("log", map[string]any{"text": "a log line <&>"}, mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"})
	call("whoami", nil, nil)
	state()

	// From the wire: each tool's last result (after the input rounds), and
	// what the progress and log calls brought before their results.
	isProgress := func(m wireMsg) bool {
		return m.env.Method == "notifications/progress" && str(member(m.env.Params, "progressToken")) == "tok-progress"
	}
	isLog := func(m wireMsg) bool { return m.env.Method == "notifications/message" }
	for _, m := range log.all() {
		if m.dir != "out" || m.env.Method != "tools/call" {
			continue
		}
		tool := strings.TrimPrefix(str(member(m.env.Params, "name")), prefix)
		req, resp, ok := log.callOf(m.env.ID)
		if !ok {
			t.Errorf("no answer to %s on the wire", m.raw)
			continue
		}
		o.results[tool] = resp.env.Result
		switch tool {
		case "progress":
			for _, n := range log.during(req, resp, isProgress) {
				o.progress = append(o.progress, string(n.env.Params))
			}
		case "log":
			for _, n := range log.during(req, resp, isLog) {
				o.logs = append(o.logs, string(n.env.Params))
			}
		}
	}
	if log.count(isProgress) != len(o.progress) || log.count(isLog) != len(o.logs) {
		for _, m := range log.all() {
			if m.dir == "in" && (isProgress(m) || isLog(m)) {
				o.strays = append(o.strays, m.String())
			}
		}
	}
	return o
}

// checkModernShape checks what any 2026-07-28 exchange with the fixture
// must show, direct or not: the era, the client's answers to sampling and
// roots reaching the server, 3 progress notifications and the log message
// (sent because the request's _meta set a level) before their results, on
// their call's stream, the client's own name and capabilities at the
// server, one server process throughout.
func checkModernShape(t reporter, o modernOutcome) {
	t.Helper()
	if o.protocol != testkit.Modern.Protocol {
		t.Errorf("protocol %q, want %s", o.protocol, testkit.Modern.Protocol)
	}
	for tool, want := range map[string]string{
		"sample":   "model said: canned sample",
		"roots":    "roots: file:///canned/root",
		"progress": "did 3 steps",
		"log":      "logged",
		"whoami":   "client=transparency-go sampling=true",
	} {
		if o.texts[tool] != want {
			t.Errorf("%s: %q, want %q", tool, o.texts[tool], want)
		}
	}
	if len(o.progress) != 3 {
		t.Errorf("progress notifications before the result, on the call's stream: %q, want 3", o.progress)
	}
	if len(o.logs) != 1 || !strings.Contains(o.logs[0], "a log line <&>") {
		t.Errorf("log messages before the result, on the call's stream: %q, want the one the call sent", o.logs)
	}
	if len(o.pids) != 2 || o.pids[0] != o.pids[1] {
		t.Errorf("the server's pid before and after: %q (another pid: the server was restarted)", o.pids)
	}
	if len(o.strays) > 0 {
		t.Errorf("progress or log messages read elsewhere than on their call's stream before its result, or twice:\n%s", strings.Join(o.strays, "\n"))
	}
}

// compareModern checks that through mcpflow the client read what it read
// directly: the same texts, each tool's final result byte for byte, the
// progress and log notifications' params byte for byte.
func compareModern(t reporter, got, direct modernOutcome) {
	t.Helper()
	for _, tool := range []string{"sample", "roots", "progress", "log", "whoami"} {
		if got.texts[tool] != direct.texts[tool] {
			t.Errorf("%s: %q through mcpflow, %q directly", tool, got.texts[tool], direct.texts[tool])
		}
		if !bytes.Equal(got.results[tool], direct.results[tool]) {
			t.Errorf("%s: the result differs from the server's\n through mcpflow: %s\n directly:        %s", tool, got.results[tool], direct.results[tool])
		}
	}
	if !slices.Equal(got.progress, direct.progress) {
		t.Errorf("progress notifications differ\n through mcpflow: %q\n directly:        %q", got.progress, direct.progress)
	}
	if !slices.Equal(got.logs, direct.logs) {
		t.Errorf("log messages differ\n through mcpflow: %q\n directly:        %q", got.logs, direct.logs)
	}
}

// modernTransport is the Go SDK client's transport to a process on stdio
// (p) or to url, through a tee into log.
func modernTransport(log *wireLog, p *tproc, url string) mcp.Transport {
	if url != "" {
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: teeRoundTripper{log: log}}, MaxRetries: -1}
	}
	return teeStdio(log, p)
}

// TestTransparencyModern: the 2026-07-28 era, the kit's Go fixture
// (stateless over HTTP: the Go SDK's handler speaks 2026-07-28 only so),
// the Go SDK client; every mode × kind of child against the fixture run
// directly. Checks: sampling and roots (multi-round-trip results the
// client answers) reach the server; every progress notification and the
// log message a request's _meta level asks for arrive before the result,
// on the call's stream; the server sees the client's own name and
// capabilities; the same server process throughout; results and
// notifications byte-equal to direct. (No elicitation: the fixture has no
// such tool; logging/setLevel does not exist in this era.)
func TestTransparencyModern(t *testing.T) {
	t.Parallel()
	children := map[string]childRun{
		"stdio-child": {command: []string{fixtureBin}},
		"http-child":  {command: []string{fixtureBin, "-http", "127.0.0.1:{port}", "-http-stateless"}, http: true},
	}
	direct := map[string]*modernOutcome{}
	t.Run("direct", func(t *testing.T) {
		for _, kind := range childKinds {
			direct[kind] = &modernOutcome{}
			t.Run(kind, func(t *testing.T) {
				t.Parallel()
				child := children[kind]
				log := &wireLog{}
				var tr mcp.Transport
				if child.http {
					_, url := directHTTP(t, child)
					tr = modernTransport(log, nil, url)
				} else {
					tr = modernTransport(log, startTProc(t, t.TempDir(), nil, child.command[0], child.command[1:]...), "")
				}
				o := modernExchange(t, log, tr, "")
				checkModernShape(t, o)
				if t.Failed() {
					t.Logf("the client's wire:\n%s", log.dump())
				}
				*direct[kind] = o
			})
		}
	})
	if t.Failed() {
		t.Fatal("the fixture run directly does not behave as this test expects")
	}
	for _, mode := range transparencyModes {
		for _, kind := range childKinds {
			t.Run(mode.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				p, url := viaMCPFlow(t, mode, children[kind])
				log := &wireLog{}
				prefix := ""
				if mode.mux {
					prefix = "s__"
				}
				o := modernExchange(t, log, modernTransport(log, p, url), prefix)
				checkModernShape(t, o)
				compareModern(t, o, *direct[kind])
				if t.Failed() {
					t.Logf("the client's wire:\n%s", log.dump())
				}
			})
		}
	}
}

// ---- the checks catch what they must ----

// alteration stands for a proxy that gets something wrong: it is given
// each line the server writes, in order, and emits what the client reads.
type alteration func(line []byte, emit func([]byte))

// altered is p with what the client reads from its stdout passed through
// alter.
func altered(p *tproc, alter alteration) *tproc {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(p.stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if l := bytes.TrimRight(line, "\r\n"); len(l) > 0 {
				alter(bytes.Clone(l), func(b []byte) { pw.Write(append(b, '\n')) })
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	q := *p
	q.stdout = pr
	return &q
}

// alteredIn is p with what the client writes to its stdin passed through
// alter.
func alteredIn(p *tproc, alter alteration) *tproc {
	pr, pw := io.Pipe()
	go func() {
		defer p.stdin.Close()
		br := bufio.NewReaderSize(pr, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if l := bytes.TrimRight(line, "\r\n"); len(l) > 0 {
				alter(bytes.Clone(l), func(b []byte) { p.stdin.Write(append(b, '\n')) })
			}
			if err != nil {
				return
			}
		}
	}()
	q := *p
	q.stdin = pw
	return &q
}

// recorder is a reporter that keeps what the checks report.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.msgs, func(m string) bool { return strings.Contains(m, s) })
}

func isResult(line []byte) bool {
	return bytes.Contains(line, []byte(`"result":`)) && !bytes.Contains(line, []byte(`"method":`))
}

// holdProgress moves progress notifications after the next result.
func holdProgress() alteration {
	var held [][]byte
	return func(line []byte, emit func([]byte)) {
		if bytes.Contains(line, []byte(`"notifications/progress"`)) {
			held = append(held, line)
			return
		}
		emit(line)
		if isResult(line) {
			for _, h := range held {
				emit(h)
			}
			held = nil
		}
	}
}

// dropFirst drops the first line that holds s.
func dropFirst(s string) alteration {
	dropped := false
	return func(line []byte, emit func([]byte)) {
		if !dropped && bytes.Contains(line, []byte(s)) {
			dropped = true
			return
		}
		emit(line)
	}
}

// TestTransparencyChecksCatchAlterations proves that the checks of the
// transparency tests fail when what the client reads is not what the
// server wrote: each alteration below stands between the raw client (or
// the Go SDK client) and the server run directly, as a faulty mcpflow
// would, and must be reported by the check named.
func TestTransparencyChecksCatchAlterations(t *testing.T) {
	t.Parallel()
	stdioJS, _ := transparencyPeers(t)

	// A notification read on the GET stream is not the call's, even
	// between the call and its result; one on the call's stream is.
	l := &wireLog{}
	req := l.add("out", "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notify"}}`))
	l.add("in", "get", []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-notify","progress":1}}`))
	l.add("in", "post:1", []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-notify","progress":2}}`))
	resp := l.add("in", "post:1", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	if got := l.during(req, resp, callMessage); len(got) != 1 || !bytes.Contains(got[0].raw, []byte(`"progress":2`)) {
		t.Errorf("the call's messages: %v, want only the one on its stream", got)
	}

	var legacyDirect legacyOutcome
	var modernDirect modernOutcome
	t.Run("direct", func(t *testing.T) {
		t.Run("legacy", func(t *testing.T) {
			t.Parallel()
			legacyDirect = legacyExchange(t, rawStdio(t, startTProc(t, t.TempDir(), nil, "node", stdioJS)), "")
			checkLegacyShape(t, legacyDirect)
		})
		t.Run("modern", func(t *testing.T) {
			t.Parallel()
			log := &wireLog{}
			modernDirect = modernExchange(t, log, teeStdio(log, startTProc(t, t.TempDir(), nil, fixtureBin)), "")
			checkModernShape(t, modernDirect)
		})
	})
	if t.Failed() {
		t.FailNow()
	}

	pidRE := regexp.MustCompile(`"text":"(\d+)"`)
	legacy := []struct {
		name     string
		alter    func() alteration
		want     []string // what the checks must report
		toServer bool     // alter what the client writes, not what it reads
	}{
		{"results re-encoded", func() alteration {
			// As a proxy that decodes and encodes a result (Go's encoder
			// sorts keys, escapes <, >, & and U+2028).
			return func(line []byte, emit func([]byte)) {
				var m map[string]any
				if isResult(line) && json.Unmarshal(line, &m) == nil {
					line, _ = json.Marshal(m)
				}
				emit(line)
			}
		}, []string{"rich: the result differs"}, false},
		{"unknown field dropped", func() alteration {
			return func(line []byte, emit func([]byte)) {
				emit(bytes.Replace(line, []byte(`,"x_unknown_field":{"kept":true,"nested":{"n":1,"s":"x"}}`), nil, 1))
			}
		}, []string{"lacks x_unknown_field.kept", "rich: the result differs"}, false},
		{"a log dropped", func() alteration { return dropFirst(`"logger":"ts-peer"`) },
			[]string{"notify's messages before its result", "notify: the call's messages before its result differ"}, false},
		{"progress after the result", holdProgress,
			[]string{"notify's messages before its result", "read elsewhere than on its stream before its result"}, false},
		{"a log and a progress swapped", func() alteration {
			n := 0
			var held []byte
			return func(line []byte, emit func([]byte)) {
				if held != nil {
					emit(line)
					emit(held)
					held = nil
					return
				}
				if bytes.Contains(line, []byte(`"logger":"ts-peer"`)) {
					if n++; n == 2 {
						held = line
						return
					}
				}
				emit(line)
			}
		}, []string{"notify's messages before its result", "notify: the call's messages before its result differ"}, false},
		{"a params altered", func() alteration {
			// The sampling request's params, re-encoded.
			return func(line []byte, emit func([]byte)) {
				emit(bytes.Replace(line, []byte(`"maxTokens":7`), []byte(`"maxTokens": 7`), 1))
			}
		}, []string{"ask_sampling: the call's messages before its result differ"}, false},
		{"a restart after setLevel", func() alteration {
			// As if another process answered after logging/setLevel.
			leveled := false
			return func(line []byte, emit func([]byte)) {
				if bytes.Contains(line, []byte(`"result":{}`)) {
					leveled = true
				}
				if leveled {
					line = pidRE.ReplaceAll(line, []byte(`"text":"9$1"`))
				}
				emit(line)
			}
		}, []string{"pid before and after each logging/setLevel"}, false},
		{"the client's answer trimmed", func() alteration {
			// As a proxy that decodes the client's answer into a struct.
			return func(line []byte, emit func([]byte)) {
				emit(bytes.Replace(line, []byte(`,"x_client_extra":{"kept":1}`), nil, 1))
			}
		}, []string{"ask_sampling: the client's answer reached the server without its unknown field", "ask_sampling: the result differs"}, true},
	}
	for _, c := range legacy {
		t.Run("legacy/"+c.name, func(t *testing.T) {
			t.Parallel()
			p := startTProc(t, t.TempDir(), nil, "node", stdioJS)
			if c.toServer {
				p = alteredIn(p, c.alter())
			} else {
				p = altered(p, c.alter())
			}
			o := legacyExchange(t, rawStdio(t, p), "")
			rec := &recorder{}
			checkLegacyShape(rec, o)
			compareLegacy(rec, o, legacyDirect)
			for _, w := range c.want {
				if !rec.has(w) {
					t.Errorf("no check reported %q; reported: %q", w, rec.msgs)
				}
			}
		})
	}

	modern := []struct {
		name  string
		alter func() alteration
		want  []string
	}{
		{"results respaced", func() alteration {
			// One space more inside each result: the same JSON value,
			// other bytes.
			return func(line []byte, emit func([]byte)) {
				emit(bytes.Replace(line, []byte(`"resultType":"complete"`), []byte(`"resultType": "complete"`), 1))
			}
		}, []string{"sample: the result differs", "whoami: the result differs"}},
		{"progress after the result", holdProgress,
			[]string{"progress notifications before the result", "read elsewhere than on their call's stream"}},
		{"the log dropped", func() alteration { return dropFirst(`"notifications/message"`) },
			[]string{"log messages before the result"}},
	}
	for _, c := range modern {
		t.Run("modern/"+c.name, func(t *testing.T) {
			t.Parallel()
			log := &wireLog{}
			p := startTProc(t, t.TempDir(), nil, fixtureBin)
			o := modernExchange(t, log, teeStdio(log, altered(p, c.alter())), "")
			rec := &recorder{}
			checkModernShape(rec, o)
			compareModern(rec, o, modernDirect)
			for _, w := range c.want {
				if !rec.has(w) {
					t.Errorf("no check reported %q; reported: %q", w, rec.msgs)
				}
			}
		})
	}
}
