package wire

import (
	"strings"
	"sync"
	"testing"
	"time"
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
// answer: the old engine's within Drain, else Swap's; a request with an
// id of mcpflow's own is refused.
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
	s.Send([]byte(`{"jsonrpc":"2.0","id":"mcpflow:x","method":"ping"}`))
	w.Replace(&echoEngine{name: "b"})
	s.Send([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
	time.Sleep(50 * time.Millisecond)
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(got, "\n")
	for _, want := range []string{TextInFlight, "are mcpflow's own", TextMoved, `"id":7,"result":{"engine":"b"}`} {
		if strings.Count(all, want) != 1 {
			t.Errorf("want %q once; the client got:\n%s", want, all)
		}
	}
}
