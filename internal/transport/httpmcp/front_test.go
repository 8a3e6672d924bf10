package httpmcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// echo is the tests' Opener: an MCP server of their own, speaking enough
// MCP through wire.Session. It answers initialize with a legacy result
// (protocolVersion: protocol) and server/discover with a 2026-07-28 one;
// tools/call "echo" sends a progress notification (when asked for one)
// and a log message on the call's stream, then the text; "sample" asks
// the client for a sampling/createMessage and answers with the client's
// text; "slow" never answers. subscriptions/listen is acknowledged and
// kept; unknown methods get -32601. It records every message sent to it
// and every Close.
type echo struct {
	slow chan []byte // the id of each "slow" call, as it arrives

	mu       sync.Mutex
	protocol string // "": initialize fails
	sessions []*echoSession
}

func (o *echo) version() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.protocol
}

func newEcho(protocol string) *echo {
	return &echo{protocol: protocol, slow: make(chan []byte, 16)}
}

func (o *echo) Open(c wire.Client) wire.Session {
	s := &echoSession{o: o, c: c, wake: make(chan struct{}, 1), closed: make(chan struct{}), waits: map[string]chan []byte{}}
	s.wg.Add(1)
	go s.run()
	o.mu.Lock()
	o.sessions = append(o.sessions, s)
	o.mu.Unlock()
	return s
}

// all returns the sessions opened so far, in order.
func (o *echo) all() []*echoSession {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*echoSession(nil), o.sessions...)
}

// nth waits for the n-th session opened (from 1) and returns it.
func (o *echo) nth(t *testing.T, n int) *echoSession {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("session %d opened", n), func() bool { return len(o.all()) >= n })
	return o.all()[n-1]
}

type echoSession struct {
	o         *echo
	c         wire.Client
	dmu       sync.Mutex // one Deliver at a time
	wg        sync.WaitGroup
	wake      chan struct{}
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	inbox   [][]byte
	got     [][]byte
	waits   map[string]chan []byte // server→client request id -> its answer
	listens [][]byte
	n       int
}

func (s *echoSession) Send(msg []byte) {
	s.mu.Lock()
	s.got = append(s.got, msg)
	s.inbox = append(s.inbox, msg)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close ends the session's goroutines: nothing is delivered once it
// returns.
func (s *echoSession) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.wg.Wait()
}

func (s *echoSession) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// received returns the messages sent to the session so far.
func (s *echoSession) received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.got...)
}

// emit delivers one message to the client, unless the session is closed.
func (s *echoSession) emit(msg string, rel []byte) {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.isClosed() {
		return
	}
	s.c.Deliver([]byte(msg), rel)
}

func (s *echoSession) run() {
	defer s.wg.Done()
	for {
		select {
		case <-s.closed:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		in := s.inbox
		s.inbox = nil
		s.mu.Unlock()
		for _, msg := range in {
			s.handle(msg)
		}
	}
}

func (s *echoSession) handle(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil {
		panic(fmt.Sprintf("the front sent a message Peek refuses: %s", msg))
	}
	if env.IsResponse() {
		s.mu.Lock()
		ch := s.waits[string(env.ID)]
		delete(s.waits, string(env.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- msg
		}
		return
	}
	if env.ID == nil {
		return // a notification
	}
	id := env.ID
	switch env.Method {
	case "initialize":
		version := s.o.version()
		if version == "" {
			s.emit(string(wire.ErrorResponse(id, wire.CodeInvalidRequest, "no version of ours", nil)), nil)
			return
		}
		s.emit(string(wire.ResultResponse(id, fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"echo","version":"1"}}`, version))), nil)
	case "server/discover":
		s.emit(string(wire.ResultResponse(id, []byte(`{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{"listChanged":true},"logging":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo","version":"1"}}}`))), nil)
	case "ping":
		s.emit(string(wire.ResultResponse(id, []byte(`{}`))), nil)
	case "tools/list":
		s.emit(string(wire.ResultResponse(id, []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"sample","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}},{"name":"region","inputSchema":{"type":"object","properties":{"where":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}},"n":{"type":"integer","x-mcp-header":"N"}}}}]}`))), nil)
	case "tools/call":
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.call(env)
		}()
	case "subscriptions/listen":
		s.mu.Lock()
		s.listens = append(s.listens, id)
		s.mu.Unlock()
		s.emit(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true}}}`, id)
	default:
		s.emit(string(wire.ErrorResponse(id, wire.CodeMethodNotFound, "Method not found: "+env.Method, nil)), nil)
	}
}

func textResult(text string) []byte {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
	return b
}

func (s *echoSession) call(env wire.Envelope) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
		} `json:"arguments"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(env.Params, &p)
	id := env.ID
	switch p.Name {
	case "echo":
		if p.Meta.ProgressToken != nil {
			s.emit(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1,"total":2}}`, p.Meta.ProgressToken), id)
		}
		s.emit(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%q}}`, "echoing "+p.Arguments.Text), id)
		s.emit(string(wire.ResultResponse(id, textResult(p.Arguments.Text))), nil)
	case "sample":
		s.mu.Lock()
		s.n++
		sid := fmt.Sprintf(`"s-%d"`, s.n)
		ch := make(chan []byte, 1)
		s.waits[sid] = ch
		s.mu.Unlock()
		s.emit(string(wire.Request([]byte(sid), "sampling/createMessage", []byte(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}`))), id)
		select {
		case ans := <-ch:
			var r struct {
				Result struct {
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			_ = json.Unmarshal(ans, &r)
			s.emit(string(wire.ResultResponse(id, textResult("the client said "+r.Result.Content.Text))), nil)
		case <-s.closed:
		}
	case "slow":
		s.o.slow <- id
		<-s.closed
	default:
		s.emit(string(wire.ResultResponse(id, []byte(`{"content":[],"isError":true}`))), nil)
	}
}

// listChanged sends tools/list_changed: on each listen (2026-07-28), or
// with no request it belongs to (legacy).
func (s *echoSession) listChanged() {
	s.mu.Lock()
	listens := append([][]byte(nil), s.listens...)
	s.mu.Unlock()
	if len(listens) == 0 {
		s.emit(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, nil)
	}
	for _, l := range listens {
		s.emit(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}}`, l), l)
	}
}

// Addr is the address the front bound.
func (f *Front) Addr() string { return f.ln.Addr().String() }

// serveFront serves o on a front at 127.0.0.1:0 until the test ends; then
// Serve must return nil, having closed every session it opened.
func serveFront(t *testing.T, o *echo, cfg FrontConfig) *Front {
	t.Helper()
	f, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Serve did not return within 10s of its context ending")
		}
		for i, s := range o.all() {
			if !s.isClosed() {
				t.Errorf("session %d was never closed", i+1)
			}
		}
	})
	return f
}

// logTo returns a logger writing to b at debug level.
func logTo(b *testkit.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// raw speaks plain HTTP to a front.
type raw struct {
	t  *testing.T
	f  *Front
	hc *http.Client
}

func newRaw(t *testing.T, f *Front) *raw {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return &raw{t: t, f: f, hc: hc}
}

type reply struct {
	status int
	header http.Header
	body   string
}

// send sends a request; hdr holds name, value pairs.
func (c *raw) send(method, body string, hdr ...string) (reply, error) {
	req, err := http.NewRequest(method, c.f.URL(), strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("reading the body: %w", err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}, nil
}

// do sends a request and fails the test when it gets no answer.
func (c *raw) do(method, body string, hdr ...string) reply {
	c.t.Helper()
	r, err := c.send(method, body, hdr...)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return r
}

// async sends a request from a goroutine of its own; a request that gets
// no answer comes back with status -1 and the error as its body.
func (c *raw) async(method, body string, hdr ...string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		r, err := c.send(method, body, hdr...)
		if err != nil {
			r = reply{status: -1, body: err.Error()}
		}
		out <- r
	}()
	return out
}

// await waits for an async reply.
func (c *raw) await(ch <-chan reply) reply {
	c.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		c.t.Fatal("no answer within 30s")
		return reply{}
	}
}

const acceptBoth = "application/json, text/event-stream"

// post sends body to session sid ("" = none), accepting accept.
func (c *raw) post(sid, accept, body string, hdr ...string) reply {
	c.t.Helper()
	return c.do(http.MethodPost, body, postHeaders(sid, accept, hdr)...)
}

func postHeaders(sid, accept string, hdr []string) []string {
	h := append([]string{"Accept", accept}, hdr...)
	if sid != "" {
		h = append(h, "Mcp-Session-Id", sid)
	}
	return h
}

// initialize opens a legacy session and returns its id.
func (c *raw) initialize() string {
	c.t.Helper()
	r := c.post("", "application/json", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0.1"}}}`)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" || !strings.Contains(r.body, `"protocolVersion":"2025-03-26"`) {
		c.t.Fatalf("initialize: %d %q, session %q", r.status, r.body, sid)
	}
	return sid
}

// modern sends a 2026-07-28 request with its headers right.
func (c *raw) modern(accept, method, params, id string, hdr ...string) reply {
	c.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
	h := append([]string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method}, hdr...)
	return c.post("", accept, body, h...)
}

const frontMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"rawmodern","version":"9"}}`

// events returns the data of each server-sent event in body.
func events(body string) []string {
	var out []string
	for ev := range strings.SplitSeq(body, "\n\n") {
		var data []string
		for line := range strings.SplitSeq(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = append(data, d)
			}
		}
		if len(data) > 0 {
			out = append(out, strings.Join(data, "\n"))
		}
	}
	return out
}

// stream is an open GET stream read event by event.
type stream struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
}

func (c *raw) get(sid string) *stream {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.f.URL(), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	hc := &http.Client{Transport: &http.Transport{}}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		resp.Body.Close()
		hc.CloseIdleConnections()
	})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		c.t.Fatalf("GET: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &stream{t: c.t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next reads the next event's data (comments skipped).
func (s *stream) next() string {
	s.t.Helper()
	var data []string
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			s.t.Fatalf("the GET stream ended: %v (data so far %q)", err, data)
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" && len(data) > 0 {
			return strings.Join(data, "\n")
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
}

// hasGET reports whether the session sid has its GET stream open.
func hasGET(f *Front, sid string) bool {
	s := f.lookup(sid)
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.get.st != nil
}

func TestFrontSDKClients(t *testing.T) {
	t.Parallel()
	o := newEcho("2025-11-25")
	var mu sync.Mutex
	traffic := map[string][2]int{} // session -> messages to the server, to the client
	f := serveFront(t, o, FrontConfig{Traffic: func(session string, toServer bool, msg []byte) {
		if !json.Valid(msg) {
			t.Errorf("the traffic hook got no JSON: %q", msg)
		}
		mu.Lock()
		defer mu.Unlock()
		n := traffic[session]
		if toServer {
			n[0]++
		} else {
			n[1]++
		}
		traffic[session] = n
	}})
	if !strings.HasPrefix(f.URL(), "http://127.0.0.1:") || !strings.HasSuffix(f.URL(), "/mcp") || !strings.Contains(f.URL(), f.Addr()) {
		t.Fatalf("URL %q, Addr %q", f.URL(), f.Addr())
	}
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		progress := make(chan float64, 8)
		logs := make(chan string, 8)
		changed := make(chan struct{}, 8)
		client := mcp.NewClient(&mcp.Implementation{Name: "t-" + era.Name, Version: "1.2"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Progress },
			LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- fmt.Sprint(r.Params.Data) },
			ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "sampled"}, Model: "m", Role: "assistant"}, nil
			},
		})
		opened := len(o.all())
		cs := testkit.Connect(t, era.Version, client, &mcp.StreamableClientTransport{Endpoint: f.URL(), MaxRetries: -1})
		if got := cs.InitializeResult().ProtocolVersion; got != era.Protocol {
			t.Fatalf("protocol %q, want %q", got, era.Protocol)
		}
		legacy := era == testkit.Legacy
		if legacy && cs.ID() == "" || !legacy && cs.ID() != "" {
			t.Fatalf("session id %q in the %s era", cs.ID(), era.Name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}, Meta: mcp.Meta{"progressToken": "p1"}})
		if err != nil || testkit.Text(res) != "hi" {
			t.Fatalf("echo: %v %q", err, testkit.Text(res))
		}
		for what, ch := range map[string]func() bool{
			"the call's progress notification": func() bool { return len(progress) > 0 },
			"the call's log message":           func() bool { return len(logs) > 0 },
		} {
			testkit.Eventually(t, 10*time.Second, what, ch)
		}
		if l := <-logs; l != "echoing hi" {
			t.Errorf("log message %q", l)
		}

		var es *echoSession // the session of the client's calls
		if legacy {
			es = o.all()[opened]
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample"})
			if err != nil || testkit.Text(res) != "the client said sampled" {
				t.Fatalf("sample: %v %q", err, testkit.Text(res))
			}
			sawAnswer := false
			for _, m := range es.received() {
				sawAnswer = sawAnswer || strings.Contains(string(m), `"id":"s-1"`) && strings.Contains(string(m), `"sampled"`)
			}
			if !sawAnswer {
				t.Errorf("the client's answer to sampling/createMessage never reached the session: %q", es.received())
			}
			infos := f.Sessions()
			var mine *SessionInfo
			for i := range infos {
				if infos[i].ID == cs.ID() {
					mine = &infos[i]
				}
			}
			if mine == nil || mine.Client != "t-legacy" || mine.ClientVersion != "1.2" || mine.Protocol != "2025-11-25" || mine.Era != "legacy" ||
				mine.Requests < 3 || mine.InFlight != 0 || mine.Started.IsZero() || mine.LastSeen.Before(mine.Started) {
				t.Errorf("Sessions() = %+v; want this client's session (%s)", infos, cs.ID())
			}
			// list_changed belongs to no request: the GET stream.
			testkit.Eventually(t, 10*time.Second, "the GET stream", func() bool { return hasGET(f, cs.ID()) })
			es.listChanged()
		} else {
			// The listen the client opened is a session of its own, open
			// as long as the listen.
			var infos []SessionInfo
			testkit.Eventually(t, 10*time.Second, "the listen's session", func() bool {
				infos = f.Sessions()
				for _, s := range o.all()[opened:] {
					s.mu.Lock()
					n := len(s.listens)
					s.mu.Unlock()
					if n > 0 && !s.isClosed() {
						es = s
					}
				}
				return es != nil
			})
			found := false
			for _, in := range infos {
				found = found || in.ID == "" && in.Era == "modern" && in.Client == "t-modern" && in.Protocol == "2026-07-28" && in.InFlight == 1
			}
			if !found {
				t.Errorf("Sessions() = %+v; want the listen's", infos)
			}
			if n := len(o.all()) - opened; n != 1 {
				t.Errorf("the session-less requests opened %d sessions, want the one they share", n)
			}
			es.listChanged()
		}
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatal("list_changed never reached the client")
		}
		mu.Lock()
		n := traffic[cs.ID()]
		mu.Unlock()
		if n[0] == 0 || n[1] == 0 {
			t.Errorf("the traffic hook saw %v messages of session %q (to the server, to the client)", n, cs.ID())
		}
		cs.Close()
		testkit.Eventually(t, 10*time.Second, "the client's session closed, or its listen cancelled", func() bool {
			for _, s := range o.all()[opened:] {
				if legacy && !s.isClosed() {
					return false
				}
				if !legacy && !bytes.Contains(bytes.Join(s.received(), nil), []byte("notifications/cancelled")) {
					return false
				}
			}
			return true
		})
	})
}

func TestFrontIDsByteForByte(t *testing.T) {
	t.Parallel()
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{})
	c := newRaw(t, f)
	sid := c.initialize()
	for _, id := range []string{`1.5`, `9007199254740993`, `-0`, `1e400`, `"a\"b\\c\u00e9\ud83d\ude00"`} {
		body := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`
		r := c.post(sid, "application/json", body)
		if want := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`; r.status != http.StatusOK || r.body != want {
			t.Errorf("JSON: id %s: %d %q, want %q", id, r.status, r.body, want)
		}
		r = c.post(sid, acceptBoth, body)
		if ev := events(r.body); r.status != http.StatusOK || len(ev) != 1 || ev[0] != `{"jsonrpc":"2.0","id":`+id+`,"result":{}}` {
			t.Errorf("SSE: id %s: %d %q", id, r.status, r.body)
		}
	}
	// A batch (2025-03-26): each element sent, the answers in one array,
	// a notification's none, a refused element's its error.
	r := c.post(sid, "application/json", `[{"jsonrpc":"2.0","id":1.50,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"ping"},7]`)
	var arr []json.RawMessage
	if r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &arr) != nil || len(arr) != 3 {
		t.Fatalf("batch: %d %q", r.status, r.body)
	}
	for _, want := range []string{`{"jsonrpc":"2.0","id":1.50,"result":{}}`, `{"jsonrpc":"2.0","id":"b","result":{}}`, `"code":-32600`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("batch answer %q lacks %s", r.body, want)
		}
	}
	r = c.post(sid, acceptBoth, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	if ev := events(r.body); r.status != http.StatusOK || len(ev) != 2 {
		t.Errorf("batch as events: %d %q", r.status, r.body)
	}
	r = c.post(sid, "application/json", `[{"jsonrpc":"2.0","method":"notifications/x"}]`)
	if r.status != http.StatusAccepted || r.body != "" {
		t.Errorf("a batch of notifications: %d %q, want 202 and no body", r.status, r.body)
	}
	if r = c.post(sid, acceptBoth, `[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, "Mcp-Protocol-Version", "2025-06-18"); r.status != http.StatusBadRequest {
		t.Errorf("a batch in 2025-06-18: %d %q, want 400", r.status, r.body)
	}
}

func TestFrontRefusals(t *testing.T) {
	t.Parallel()
	logs := &testkit.Buffer{}
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{Logger: logTo(logs)})
	c := newRaw(t, f)
	sid := c.initialize()
	es := o.nth(t, 1)
	sentBefore := len(es.received())
	for _, tc := range []struct{ body, status, want string }{
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", "400", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"` + wire.TextBadUTF8 + `"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, "400", `"code":-32700`},
		{`{"jsonrpc":"2.0","id":3}`, "400", `{"jsonrpc":"2.0","id":3,"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","id":3,"method":""}`, "400", `"id":3,"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "400", `"id":null,"error":{"code":-32600`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "400", `"id":null,"error":{"code":-32600`},
		{`{"id":5,"method":"ping"}`, "400", `"id":5,"error":{"code":-32600`},
		{`42`, "400", `"code":-32600,"message":"` + wire.TextNotAnRPC},
		{`[]`, "400", `"code":-32600`},
	} {
		r := c.post(sid, acceptBoth, tc.body)
		if fmt.Sprint(r.status) != tc.status || !strings.Contains(r.body, tc.want) || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%q: %d %q, want %s with %s", tc.body, r.status, r.body, tc.status, tc.want)
		}
	}
	if got := es.received(); len(got) != sentBefore {
		t.Errorf("refused messages reached the session: %q", got[sentBefore:])
	}
	if !strings.Contains(logs.String(), "not JSON in UTF-8") {
		t.Errorf("no warning about the bad body in the log:\n%s", logs)
	}

	// Notifications and answers: 202, no body, sent on.
	if r := c.post(sid, acceptBoth, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted || r.body != "" {
		t.Errorf("a notification: %d %q", r.status, r.body)
	}
	if r := c.post(sid, acceptBoth, `{"jsonrpc":"2.0","id":"s-9","result":{}}`); r.status != http.StatusAccepted {
		t.Errorf("an answer: %d %q", r.status, r.body)
	}
	if got := es.received(); len(got) != sentBefore+2 {
		t.Errorf("the session got %q after the notification and the answer", got[sentBefore:])
	}

	// A second request with the id of one in flight.
	slowDone := c.async(http.MethodPost, `{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"slow"}}`, postHeaders(sid, "application/json", nil)...)
	select {
	case <-o.slow:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call never arrived")
	}
	if r := c.post(sid, "application/json", `{"jsonrpc":"2.0","id":"dup","method":"ping"}`); r.status != http.StatusBadRequest || !strings.Contains(r.body, `"id":"dup","error":{"code":-32600`) {
		t.Errorf("a request id already in flight: %d %q", r.status, r.body)
	}
	if in := f.Sessions(); len(in) != 1 || in[0].InFlight != 1 || in[0].Client != "raw" || in[0].ClientVersion != "0.1" {
		t.Errorf("Sessions() with a call in flight: %+v", in)
	}

	// Sessions: none, unknown, deleted.
	if r := c.post("", acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusBadRequest {
		t.Errorf("a request without a session: %d %q", r.status, r.body)
	}
	if r := c.post("nope", acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Errorf("an unknown session: %d %q", r.status, r.body)
	}
	if r := c.do(http.MethodDelete, "", "Mcp-Session-Id", sid); r.status != http.StatusOK {
		t.Errorf("DELETE: %d %q", r.status, r.body)
	}
	if !es.isClosed() {
		t.Error("DELETE did not close the session")
	}
	if r := c.await(slowDone); r.status != http.StatusNotFound {
		t.Errorf("the call in flight when its session was deleted: %d %q", r.status, r.body)
	}
	if r := c.post(sid, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Errorf("a request to a deleted session: %d %q", r.status, r.body)
	}
	if r := c.do(http.MethodDelete, "", "Mcp-Session-Id", sid); r.status != http.StatusNotFound {
		t.Errorf("DELETE again: %d", r.status)
	}

	// Origin, Host, path, method, versions, media types.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	opened := len(o.all())
	host := f.Addr()
	for _, tc := range []struct {
		name   string
		status int
		hdr    []string
	}{
		{"foreign origin", 403, []string{"Origin", "https://evil.example"}},
		{"origin null", 403, []string{"Origin", "null"}},
		{"rebinding host", 403, []string{"Host", "evil.example.com:80"}},
		{"rebinding host and origin", 403, []string{"Host", "evil.example.com", "Origin", "http://evil.example.com"}},
		{"unsupported version", 400, []string{"Mcp-Protocol-Version", "2024-01-01"}},
		{"loopback origin", 200, []string{"Origin", "http://localhost:6274"}},
		{"localhost host", 200, []string{"Host", "localhost:1", "Origin", "http://127.0.0.1:9"}},
		{"ipv6 origin", 200, []string{"Origin", "http://[::1]:3000", "Host", host}},
	} {
		if r := c.post("", acceptBoth, init, tc.hdr...); r.status != tc.status {
			t.Errorf("%s: %d %q, want %d", tc.name, r.status, r.body, tc.status)
		}
	}
	if got := len(o.all()) - opened; got != 3 {
		t.Errorf("%d sessions opened by the accepted initializes, want 3", got)
	}
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(f.URL(), "/mcp")+"/other", strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := c.hc.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("another path: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if r := c.do(http.MethodPut, init); r.status != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", r.status)
	}
	if r := c.do(http.MethodPost, init, "Content-Type", "text/plain"); r.status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", r.status)
	}
	if r := c.do(http.MethodGet, "", "Accept", "text/event-stream"); r.status != http.StatusBadRequest {
		t.Errorf("GET without a session: %d", r.status)
	}
	if r := c.do(http.MethodGet, "", "Accept", "text/event-stream", "Mcp-Protocol-Version", "2026-07-28"); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET in 2026-07-28: %d %q", r.status, r.header.Get("Allow"))
	}

	// One GET stream at a time.
	sid2 := c.initialize()
	c.get(sid2)
	if r := c.do(http.MethodGet, "", "Accept", "text/event-stream", "Mcp-Session-Id", sid2); r.status != http.StatusConflict {
		t.Errorf("a second GET: %d %q", r.status, r.body)
	}
}

func TestFrontCancelledAndFailedInit(t *testing.T) {
	t.Parallel()
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{})
	c := newRaw(t, f)
	sid := c.initialize()

	// A request the client cancels is waited for no more.
	for _, accept := range []string{"application/json", acceptBoth} {
		call := c.async(http.MethodPost, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow"}}`, postHeaders(sid, accept, nil)...)
		select {
		case <-o.slow:
		case <-time.After(30 * time.Second):
			t.Fatal("the slow call never arrived")
		}
		if in := f.Sessions(); len(in) != 1 || in[0].InFlight != 1 || !in[0].IdleSince.IsZero() {
			t.Fatalf("Sessions() with a call in flight: %+v", in)
		}
		if r := c.post(sid, accept, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`); r.status != http.StatusAccepted {
			t.Errorf("the cancellation: %d %q", r.status, r.body)
		}
		if r := c.await(call); r.status != http.StatusOK || strings.Contains(r.body, "jsonrpc") {
			t.Errorf("a cancelled call (%s): %d %q, want its stream ended without an answer", accept, r.status, r.body)
		}
		if in := f.Sessions(); len(in) != 1 || in[0].InFlight != 0 || in[0].IdleSince.IsZero() {
			t.Errorf("Sessions() after the cancellation: %+v", in)
		}
	}

	// A session whose initialize fails is closed.
	o.mu.Lock()
	o.protocol = ""
	o.mu.Unlock()
	r := c.post("", "application/json", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"raw","version":"0.1"}}}`)
	failed := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || !strings.Contains(r.body, `"error"`) || failed == "" {
		t.Fatalf("a failed initialize: %d %q %q", r.status, r.body, failed)
	}
	if !o.nth(t, 2).isClosed() {
		t.Error("the session of a failed initialize is open")
	}
	if r := c.post(failed, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Errorf("the session of a failed initialize: %d", r.status)
	}
}

func TestFrontStreams(t *testing.T) {
	t.Parallel()
	logs := &testkit.Buffer{}
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{Logger: logTo(logs), QueueBytes: 4096})
	c := newRaw(t, f)

	// A call's progress and log go on its stream, before its answer.
	sid := c.initialize()
	es := o.nth(t, 1)
	r := c.post(sid, acceptBoth, `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":7}}}`)
	ev := events(r.body)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" || len(ev) != 3 ||
		!strings.Contains(ev[0], "notifications/progress") || !strings.Contains(ev[1], "notifications/message") || !strings.HasPrefix(ev[2], `{"jsonrpc":"2.0","id":"c1","result"`) {
		t.Fatalf("the call's stream: %d %q", r.status, r.body)
	}

	// Messages for the GET stream wait for it, bounded; a request that
	// does not fit is dropped with a warning.
	for i := range 3 {
		es.emit(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n%d"}`, i), nil)
	}
	es.emit(`{"jsonrpc":"2.0","id":"big","method":"sampling/createMessage","params":{"pad":"`+strings.Repeat("x", 5000)+`"}}`, nil)
	if !strings.Contains(logs.String(), "dropped a request from the server") || !strings.Contains(logs.String(), sid) {
		t.Errorf("no warning about the dropped request in the log:\n%s", logs)
	}
	g := c.get(sid)
	for i := range 3 {
		if got := g.next(); got != fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n%d"}`, i) {
			t.Fatalf("GET event %d: %q", i, got)
		}
	}
	// With JSON answers, a call's progress and log go to the GET stream.
	r = c.post(sid, "application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"y"},"_meta":{"progressToken":"t"}}}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.body, `{"jsonrpc":"2.0","id":2,"result":`) {
		t.Fatalf("a JSON call: %d %q", r.status, r.body)
	}
	if got := g.next(); !strings.Contains(got, "notifications/progress") || !strings.Contains(got, `"progressToken":"t"`) {
		t.Errorf("GET after a JSON call: %q", got)
	}
	if got := g.next(); !strings.Contains(got, "echoing y") {
		t.Errorf("GET after a JSON call: %q", got)
	}
	// A server→client request goes on the call's stream; the client's
	// answer to it comes back by POST.
	sampling := c.async(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sample"}}`, postHeaders(sid, acceptBoth, nil)...)
	testkit.Eventually(t, 10*time.Second, "the sampling request", func() bool {
		es.mu.Lock()
		defer es.mu.Unlock()
		return len(es.waits) > 0
	})
	if r := c.post(sid, acceptBoth, `{"jsonrpc":"2.0","id":"s-1","result":{"role":"assistant","model":"m","content":{"type":"text","text":"ok"}}}`); r.status != http.StatusAccepted {
		t.Errorf("the client's answer: %d %q", r.status, r.body)
	}
	r = c.await(sampling)
	if ev := events(r.body); len(ev) != 2 || !strings.Contains(ev[0], `"method":"sampling/createMessage"`) || !strings.Contains(ev[1], "the client said ok") {
		t.Errorf("a call that samples: %q", r.body)
	}

	// 2026-07-28: every POST through one session (wire.FanIn), which
	// stays open; SEP-2575's statuses; the SDK's header checks.
	opened := len(o.all())
	r = c.modern(acceptBoth, "tools/call", `{"name":"echo","arguments":{"text":"m"},`+frontMeta+`}`, "10", "Mcp-Name", "echo")
	if ev := events(r.body); r.status != http.StatusOK || len(ev) != 2 || !strings.Contains(ev[0], "echoing m") || !strings.HasPrefix(ev[1], `{"jsonrpc":"2.0","id":10,"result"`) {
		t.Errorf("a 2026-07-28 call: %d %q", r.status, r.body)
	}
	if n := len(o.all()); n != opened+1 || o.all()[opened].isClosed() {
		t.Errorf("the 2026-07-28 POSTs' session: %d opened, closed %v", n-opened, n > opened && o.all()[opened].isClosed())
	}
	for _, tc := range []struct {
		name, accept, method, params, id string
		hdr                              []string
		status                           int
		want                             string
	}{
		{"unknown method", acceptBoth, "nope/x", `{` + frontMeta + `}`, "7", nil, 404, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601`},
		{"unknown method as JSON", "application/json", "nope/x", `{` + frontMeta + `}`, `"q"`, nil, 404, `"id":"q","error":{"code":-32601`},
		{"no _meta", acceptBoth, "tools/list", `{}`, "8", nil, 400, `"id":8,"error":{"code":-32602`},
		{"another version in _meta", acceptBoth, "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-08-01"}}`, "9", nil, 400, `"code":-32020`},
		{"Mcp-Method mismatch", acceptBoth, "tools/list", `{` + frontMeta + `}`, "11", []string{"Mcp-Method", "prompts/list"}, 400, `"id":11,"error":{"code":-32020`},
		{"Mcp-Method in another case", acceptBoth, "tools/list", `{` + frontMeta + `}`, "12", []string{"Mcp-Method", "TOOLS/LIST"}, 400, `"code":-32020`},
		{"no Mcp-Name", acceptBoth, "tools/call", `{"name":"echo",` + frontMeta + `}`, "13", nil, 400, `"code":-32020`},
		{"Mcp-Name mismatch", acceptBoth, "tools/call", `{"name":"echo",` + frontMeta + `}`, "14", []string{"Mcp-Name", "other"}, 400, `"code":-32020`},
		{"tools/list", acceptBoth, "tools/list", `{` + frontMeta + `}`, "15", []string{"mcp-method", "tools/list"}, 200, `"id":15,"result":{"tools"`},
		// x-mcp-header arguments, as the tools/list just carried declared them.
		{"Mcp-Param- headers", acceptBoth, "tools/call", `{"name":"region","arguments":{"where":{"region":"us"},"n":42},` + frontMeta + `}`, "16",
			[]string{"Mcp-Name", "region", "Mcp-Param-Region", "us", "Mcp-Param-N", "42.0"}, 200, `"id":16,"result"`},
		{"a Base64 Mcp-Param- header", acceptBoth, "tools/call", `{"name":"region","arguments":{"where":{"region":"é"}},` + frontMeta + `}`, "17",
			[]string{"Mcp-Name", "region", "Mcp-Param-Region", "=?base64?w6k=?="}, 200, `"id":17,"result"`},
		{"an Mcp-Param- header unlike its argument", acceptBoth, "tools/call", `{"name":"region","arguments":{"where":{"region":"us"}},` + frontMeta + `}`, "18",
			[]string{"Mcp-Name", "region", "Mcp-Param-Region", "eu"}, 400, `"id":18,"error":{"code":-32020`},
		{"no Mcp-Param- header", acceptBoth, "tools/call", `{"name":"region","arguments":{"n":1},` + frontMeta + `}`, "19",
			[]string{"Mcp-Name", "region"}, 400, `"code":-32020`},
		{"an Mcp-Param- header of no argument", acceptBoth, "tools/call", `{"name":"region","arguments":{"where":null},` + frontMeta + `}`, "20",
			[]string{"Mcp-Name", "region", "Mcp-Param-Region", "us"}, 400, `"code":-32020`},
		{"bad Base64", acceptBoth, "tools/call", `{"name":"region","arguments":{"where":{"region":"us"}},` + frontMeta + `}`, "21",
			[]string{"Mcp-Name", "region", "Mcp-Param-Region", "=?base64?dXM?="}, 400, `"code":-32020`},
	} {
		r := c.modern(tc.accept, tc.method, tc.params, tc.id, tc.hdr...)
		if r.status != tc.status || !strings.Contains(r.body, tc.want) {
			t.Errorf("%s: %d %q, want %d with %s", tc.name, r.status, r.body, tc.status, tc.want)
		}
	}
	if r := c.post("", acceptBoth, `{"jsonrpc":"2.0","method":"notifications/x"}`, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "notifications/x"); r.status != http.StatusAccepted {
		t.Errorf("a 2026-07-28 notification: %d %q", r.status, r.body)
	}
	if r := c.post("", acceptBoth, `[{"jsonrpc":"2.0","method":"notifications/x"}]`, "Mcp-Protocol-Version", "2026-07-28"); r.status != http.StatusBadRequest {
		t.Errorf("a 2026-07-28 batch: %d %q", r.status, r.body)
	}
	if n := len(o.all()); n != opened+1 {
		t.Errorf("the 2026-07-28 POSTs opened %d sessions, want the one they share", n-opened)
	}
	if in := f.Sessions(); len(in) != 1 || in[0].ID != sid {
		t.Errorf("Sessions() = %+v, want only %s", in, sid)
	}
}

func TestFrontSlowClientIsClosed(t *testing.T) {
	t.Parallel()
	logs := &testkit.Buffer{}
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{Logger: logTo(logs), QueueBytes: 1 << 20, StallTimeout: 20 * time.Second})
	c := newRaw(t, f)
	slowID, fastID := c.initialize(), c.initialize()
	slow, fast := o.nth(t, 1), o.nth(t, 2)

	// The slow client opens its GET stream and never reads it.
	conn, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", f.Addr(), slowID)
	testkit.Eventually(t, 10*time.Second, "the slow client's GET stream", func() bool { return hasGET(f, slowID) })
	g := c.get(fastID)
	testkit.Eventually(t, 10*time.Second, "the fast client's GET stream", func() bool { return hasGET(f, fastID) })

	// Far more than the connection's buffers hold, then one message for the
	// other client, from one goroutine, as a serving side shared by both
	// would deliver them.
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 1<<20) + `"}}`
	for range 40 {
		slow.emit(big, nil)
	}
	fast.emit(`{"jsonrpc":"2.0","method":"notifications/fast"}`, nil)
	if slow.isClosed() {
		t.Fatal("the slow client's session was closed before the deliveries returned: delivering waited for a client that does not read")
	}
	if got := g.next(); got != `{"jsonrpc":"2.0","method":"notifications/fast"}` {
		t.Fatalf("the other client got %q", got)
	}
	testkit.Eventually(t, 60*time.Second, "the stalled session closed", slow.isClosed)
	if !strings.Contains(logs.String(), "closing an HTTP session") || !strings.Contains(logs.String(), slowID) {
		t.Errorf("no warning naming the stalled session in the log:\n%s", logs)
	}
	if r := c.post(slowID, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Errorf("the stalled session after its close: %d", r.status)
	}
	if fast.isClosed() {
		t.Error("the other client's session was closed too")
	}
}

// TestFrontFullQueue: a session whose queue stays over QueueBytes for
// StallTimeout is closed (the janitor's sweep, with the clock moved on),
// and so is one whose queue grows past QueueBytes + MaxMessage.
func TestFrontFullQueue(t *testing.T) {
	t.Parallel()
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, tc := range []struct {
		name       string
		maxMessage int64
		why        string
	}{
		{"stall", 0, "more than 1048576 bytes waited for its client for 1h0m0s"},
		{"overflow", 2 << 20, "more than 3145728 bytes wait for its client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &testkit.Buffer{}
			o := newEcho("2025-03-26")
			f := serveFront(t, o, FrontConfig{Logger: logTo(logs), QueueBytes: 1 << 20, MaxMessage: tc.maxMessage, StallTimeout: time.Hour})
			c := newRaw(t, f)
			sid := c.initialize()
			es := o.nth(t, 1)
			conn, err := net.Dial("tcp", f.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", f.Addr(), sid)
			testkit.Eventually(t, 10*time.Second, "the GET stream", func() bool { return hasGET(f, sid) })
			for range 40 {
				es.emit(big, nil)
			}
			if tc.maxMessage == 0 {
				full := func() bool {
					s := f.lookup(sid)
					s.mu.Lock()
					defer s.mu.Unlock()
					return !s.queue.fullSince.IsZero()
				}
				testkit.Eventually(t, 10*time.Second, "the queue full", full)
				f.sweep(time.Now().Add(59 * time.Minute))
				if es.isClosed() {
					t.Fatal("closed before StallTimeout")
				}
				f.sweep(time.Now().Add(61 * time.Minute))
			}
			testkit.Eventually(t, 10*time.Second, "the session closed", es.isClosed)
			if !strings.Contains(logs.String(), tc.why) || !strings.Contains(logs.String(), sid) {
				t.Errorf("no warning naming the session and %q in the log:\n%s", tc.why, logs)
			}
		})
	}
}

func TestFrontBodyDeadline(t *testing.T) {
	t.Parallel()
	o := newEcho("2025-03-26")
	logs := &testkit.Buffer{}
	f := serveFront(t, o, FrontConfig{Logger: logTo(logs), BodyTimeout: 300 * time.Millisecond, MaxMessage: 1000})
	c := newRaw(t, f)
	sid := c.initialize()
	es := o.nth(t, 1)
	before := len(es.received())

	conn, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", f.Addr(), sid)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body that stopped coming: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a body that stopped coming: %d, want 408", resp.StatusCode)
	}

	r := c.post(sid, acceptBoth, `{"jsonrpc":"2.0","id":"long","method":"ping","params":{"pad":"`+strings.Repeat("x", 1000)+`"}}`)
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(r.body, `"id":"long"`) {
		t.Errorf("a body over MaxMessage: %d %q", r.status, r.body)
	}
	if got := es.received(); len(got) != before {
		t.Errorf("a cut body reached the session: %q", got[before:])
	}
	if !strings.Contains(logs.String(), "did not arrive in time") {
		t.Errorf("no warning about the cut body in the log:\n%s", logs)
	}
}

func TestFrontSessionLimit(t *testing.T) {
	t.Parallel()
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{MaxSessions: 2})
	c := newRaw(t, f)
	first := c.initialize()
	c.initialize()
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0.1"}}}`
	if r := c.post("", acceptBoth, init); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "at most 2 sessions") {
		t.Errorf("a third session: %d %q", r.status, r.body)
	}
	if r := c.modern(acceptBoth, "tools/list", `{`+frontMeta+`}`, "1"); r.status != http.StatusServiceUnavailable {
		t.Errorf("a session-less request at the limit: %d %q", r.status, r.body)
	}
	if n := len(o.all()); n != 2 {
		t.Errorf("%d sessions opened, want 2", n)
	}
	c.do(http.MethodDelete, "", "Mcp-Session-Id", first)
	c.initialize()
}

func TestFrontIdleSessionExpires(t *testing.T) {
	t.Parallel()
	logs := &testkit.Buffer{}
	o := newEcho("2025-03-26")
	f := serveFront(t, o, FrontConfig{Logger: logTo(logs), IdleTimeout: time.Hour})
	c := newRaw(t, f)
	streaming := c.initialize()
	c.get(streaming)
	testkit.Eventually(t, 10*time.Second, "the GET stream", func() bool { return hasGET(f, streaming) })
	idle := c.initialize()
	f.sweep(time.Now().Add(59 * time.Minute))
	if o.nth(t, 2).isClosed() {
		t.Fatal("a session expired before IdleTimeout")
	}
	f.sweep(time.Now().Add(61 * time.Minute)) // the janitor's sweep, an hour on
	if !o.nth(t, 2).isClosed() {
		t.Fatal("a session idle for IdleTimeout did not expire")
	}
	if r := c.post(idle, acceptBoth, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Errorf("an expired session: %d", r.status)
	}
	if o.nth(t, 1).isClosed() {
		t.Error("a session with its GET stream open expired")
	}
	if !strings.Contains(logs.String(), "expired") || !strings.Contains(logs.String(), idle) {
		t.Errorf("no line about the expiry in the log:\n%s", logs)
	}
}

func TestFrontShutdown(t *testing.T) {
	t.Parallel()
	o := newEcho("2025-11-25")
	f, err := Listen("127.0.0.1:0", FrontConfig{ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, o) }()
	cs := testkit.Connect(t, testkit.Legacy.Version, nil, &mcp.StreamableClientTransport{Endpoint: f.URL(), MaxRetries: -1})
	testkit.Eventually(t, 10*time.Second, "the GET stream", func() bool { return hasGET(f, cs.ID()) })
	// The call in flight, on the client's session (a raw POST: the SDK
	// client gives up the session when its GET stream ends, whichever of
	// the two ends first).
	c := newRaw(t, f)
	called := c.async(http.MethodPost, `{"jsonrpc":"2.0","id":"inflight","method":"tools/call","params":{"name":"slow"}}`, postHeaders(cs.ID(), acceptBoth, nil)...)
	select {
	case <-o.slow:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never arrived")
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended, with a call in flight and a GET stream open")
	}
	for i, s := range o.all() {
		if !s.isClosed() {
			t.Errorf("session %d was not closed", i+1)
		}
	}
	r := c.await(called)
	if ev := events(r.body); r.status != http.StatusOK || len(ev) != 1 || !strings.HasPrefix(ev[0], `{"jsonrpc":"2.0","id":"inflight","error":`) || !strings.Contains(ev[0], wire.TextShuttingDown) {
		t.Errorf("the call in flight: %d %q, want its answer %q", r.status, r.body, wire.TextShuttingDown)
	}
	if _, err := net.Dial("tcp", f.Addr()); err == nil {
		t.Error("the front still accepts connections after Serve returned")
	}
}

func TestFrontEarlyClientWaitsForServe(t *testing.T) {
	t.Parallel()
	f, err := Listen("127.0.0.1:0", FrontConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c := newRaw(t, f)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + frontMeta + `}}`
	early := c.async(http.MethodPost, body, postHeaders("", acceptBoth, []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"})...)
	o := newEcho("2025-03-26")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.Serve(ctx, o) }()
	defer func() {
		cancel()
		<-served
	}()
	if r := c.await(early); r.status != http.StatusOK || !strings.Contains(r.body, `"tools"`) {
		t.Errorf("the early client: %d %q", r.status, r.body)
	}

	g, err := Listen("127.0.0.1:0", FrontConfig{})
	if err != nil {
		t.Fatal(err)
	}
	g.Close() // (its port may be another test's by now: Serve says it is closed)
	done := make(chan error, 1)
	go func() { done <- g.Serve(context.Background(), o) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Serve after Close: no error")
		}
	case <-time.After(10 * time.Second):
		t.Error("Close left the listener open: Serve serves")
	}
}

func TestWriteEventSplitsLines(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	msg := "{\"a\":\r\n1,\n\"b\":\r2}"
	if err := writeEvent(&b, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	ev := events(b.String())
	if len(ev) != 1 || ev[0] != "{\"a\":\n1,\n\"b\":\n2}" || !jsonscan.Valid([]byte(ev[0])) {
		t.Errorf("event %q from %q", b.String(), msg)
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
		"http://127.0.0.1.nip.io": false,
	} {
		if got := LoopbackOrigin(o); got != want {
			t.Errorf("LoopbackOrigin(%q) = %v, want %v", o, got, want)
		}
	}
	for h, want := range map[string]bool{
		"localhost:80": true, "127.0.0.1": true, "[::1]:9": true, "::1": true,
		"evil.example.com": false, "evil.example.com:80": false, "10.0.0.1:80": false,
	} {
		if got := loopbackHost(h); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", h, got, want)
		}
	}
}
