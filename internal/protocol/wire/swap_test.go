package wire

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
)

// echoEngine answers every request with a result naming the engine, and
// records what it was sent; Close answers what is still open (listens).
type echoEngine struct {
	name string
	mu   sync.Mutex
	got  []string
}

type echoSession struct {
	e    *echoEngine
	c    Client
	open [][]byte
}

func (e *echoEngine) Open(c Client) Session { return &echoSession{e: e, c: c} }

func (s *echoSession) Send(msg []byte) {
	env, _ := Peek(msg)
	s.e.mu.Lock()
	s.e.got = append(s.e.got, env.Method+" "+string(env.ID))
	s.e.mu.Unlock()
	if env.Method == "subscriptions/listen" {
		s.open = append(s.open, env.ID)
		return
	}
	if env.IsRequest() {
		s.c.Deliver(ResultResponse(env.ID, []byte(`{"engine":"`+s.e.name+`"}`)), env.ID)
	}
}

func (s *echoSession) Close() {
	for _, id := range s.open {
		s.c.Deliver(ErrorResponse(id, -32000, "closed by "+s.e.name, nil), id)
	}
}

func (e *echoEngine) sent() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.got, "\n")
}

// A session moves to the new engine with its handshake, level and listen
// replayed; the client sees no answer to the replays, its listen is not
// ended by the old engine, and it is told its lists changed on the
// listen's stream; later requests reach the new engine.
func TestSwapMovesSessions(t *testing.T) {
	a, b := &echoEngine{name: "a"}, &echoEngine{name: "b"}
	w := NewSwap(a)
	var mu sync.Mutex
	var got []string
	s := w.Open(ClientFunc(func(msg, rel []byte) {
		mu.Lock()
		got = append(got, string(msg)+" rel="+string(rel))
		mu.Unlock()
	}))
	s.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`))
	s.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	s.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`))
	s.Send([]byte(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{}}`))
	w.Replace(b)
	s.Send([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	s.Close()

	if want := "initialize \"mcpflow:w1\"\nnotifications/initialized \nlogging/setLevel \"mcpflow:w2\"\nsubscriptions/listen \"L\"\ntools/list 3"; b.sent() != want {
		t.Errorf("the new engine got:\n%s\nwant:\n%s", b.sent(), want)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"engine":"a"}} rel=1`,
		`{"jsonrpc":"2.0","id":2,"result":{"engine":"a"}} rel=2`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"} rel=`,
		`{"jsonrpc":"2.0","id":3,"result":{"engine":"b"}} rel=3`,
		`{"jsonrpc":"2.0","id":"L","error":{"code":-32000,"message":"closed by b"}} rel="L"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the client did not get %s; it got:\n%s", want, all)
		}
	}
	if strings.Contains(all, "mcpflow:w") || strings.Contains(all, "closed by a") {
		t.Errorf("the client saw a replay's answer or the old engine's end of its listen:\n%s", all)
	}
}

// silentEngine answers nothing: what is sent to it stays in flight.
type silentEngine struct{}

func (silentEngine) Open(Client) Session { return silentSession{} }

type silentSession struct{}

func (silentSession) Send([]byte) {}
func (silentSession) Close()      {}

// A request in flight when the engine is replaced gets exactly one
// answer: the old engine's within Drain, else Swap's.
func TestSwapAnswersWhatWasInFlight(t *testing.T) {
	w := NewSwap(silentEngine{})
	w.Drain = 50 * time.Millisecond
	var mu sync.Mutex
	var got []string
	s := w.Open(ClientFunc(func(msg, rel []byte) {
		mu.Lock()
		got = append(got, string(msg))
		mu.Unlock()
	}))
	s.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`))
	s.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`))
	w.Replace(&echoEngine{name: "b"})
	s.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
	time.Sleep(50 * time.Millisecond)
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(got, "\n")
	for _, want := range []string{TextInFlight, TextMoved, `"id":7,"result":{"engine":"b"}`} {
		if strings.Count(all, want) != 1 {
			t.Errorf("want %q once; the client got:\n%s", want, all)
		}
	}
}

// progressEngine answers each request after a progress notification on
// its token, and tags a list_changed with each listen's id; it records
// what it was sent.
type progressEngine struct {
	mu  sync.Mutex
	got []string
	c   Client
}

func (e *progressEngine) Open(c Client) Session { e.c = c; return e }
func (e *progressEngine) Close()                {}
func (e *progressEngine) Send(msg []byte) {
	env, _ := Peek(msg)
	e.mu.Lock()
	e.got = append(e.got, string(msg))
	e.mu.Unlock()
	if !env.IsRequest() {
		return
	}
	go func() {
		if env.Method == "subscriptions/listen" {
			e.c.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(env.ID)+`}}}`), nil)
			return
		}
		if tok := jsonscan.Member(jsonscan.Member(env.Params, "_meta"), "progressToken"); tok != nil {
			e.c.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+string(tok)+`,"progress":1}}`), nil)
		}
		e.c.Deliver(ResultResponse(env.ID, []byte(`{}`)), env.ID)
	}()
}

// Two session-less clients through a FanIn share one session: each gets
// its own answers, progress and listen notifications under its own ids
// and tokens, and nothing of the other's, even with the same ids; a
// cancel names only the canceller's own request; a client that leaves has
// its requests cancelled.
func TestFanInIsolates(t *testing.T) {
	e := &progressEngine{}
	f := NewFanIn(e)
	got := map[string]*[]string{"a": {}, "b": {}}
	var mu sync.Mutex
	open := func(name string) Session {
		return f.Open(ClientFunc(func(msg, rel []byte) {
			mu.Lock()
			*got[name] = append(*got[name], string(msg)+" rel="+string(rel))
			mu.Unlock()
		}))
	}
	a, b := open("a"), open("b")
	a.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}`))
	b.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"t"}}}`))
	a.Send([]byte(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{}}`))
	b.Send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`))
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(*got["a"]) + len(*got["b"])
		mu.Unlock()
		if n >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Close()
	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{
		"a": {`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}} rel=1`, `{"jsonrpc":"2.0","id":1,"result":{}} rel=1`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}} rel="L"`},
		"b": {`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}} rel=1`, `{"jsonrpc":"2.0","id":1,"result":{}} rel=1`},
	}
	for name, w := range want {
		for _, m := range w {
			if !slices.Contains(*got[name], m) {
				t.Errorf("%s did not get %s; it got %q", name, m, *got[name])
			}
		}
		if len(*got[name]) != len(w) {
			t.Errorf("%s got %d messages, want %d: %q", name, len(*got[name]), len(w), *got[name])
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	sent := strings.Join(e.got, "\n")
	if strings.Contains(sent, `"requestId":"L"`) || strings.Count(sent, `"mcpflow:f`) < 3 {
		t.Errorf("the engine got a client's own ids, or b's cancel of a's listen:\n%s", sent)
	}
}
