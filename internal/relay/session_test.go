package relay

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

func envOf(t *testing.T, s string) wire.Envelope {
	t.Helper()
	env, err := wire.Peek([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestSessionEra(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	modern := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

	s := newSession()
	s.note(envOf(t, discover), log)
	if s.era != eraUnknown || s.strategy() != nil {
		t.Fatal("server/discover decided the era")
	}
	s.note(envOf(t, modern), log)
	if _, ok := s.strategy().(modernEra); !ok || s.lastMeta == nil {
		t.Fatalf("era %v after a modern request", s.era)
	}
	s.note(envOf(t, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`), log)
	if s.era != eraModern {
		t.Fatal("a decided era changed")
	}

	s = newSession()
	s.note(envOf(t, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`), log)
	if _, ok := s.strategy().(legacyEra); !ok {
		t.Fatalf("era %v after initialize", s.era)
	}
}

func TestLegacyReplay(t *testing.T) {
	t.Parallel()
	s := newSession()
	s.era = eraLegacy
	rt := newRouter()
	st := s.strategy()
	p := &Port{id: 1}
	if got := st.replay(&s, rt, 2); len(got) != 0 || st.established(&s, p) || st.ready(&s, nil) {
		t.Fatalf("a session without initialized replayed %q", got)
	}
	s.initReq = []byte(`{}`)
	s.clientInit = true
	s.logLevel = []byte(`{"level":"debug"}`)
	s.subs["file:///b"] = []byte(`{"uri":"file:///b"}`)
	s.subs["file:///a"] = []byte(`{"uri":"file:///a"}`)
	got := st.replay(&s, rt, 2)
	want := []string{`"notifications/initialized"`, `"logging/setLevel"`, `file:///a`, `file:///b`}
	if len(got) != len(want) {
		t.Fatalf("replay = %q", got)
	}
	for i, w := range want {
		if !strings.Contains(string(got[i]), w) {
			t.Errorf("replay[%d] = %s, want %s", i, got[i], w)
		}
	}
	if st.established(&s, p) {
		t.Fatal("a client that did not send notifications/initialized is established")
	}
	p.initialized = true
	if !st.established(&s, p) || !st.ready(&s, nil) {
		t.Fatal("an initialized session is not established")
	}
	if n := len(st.listChanged(&s, p, []string{"tools", "prompts"})); n != 2 {
		t.Fatalf("%d list_changed, want 2", n)
	}
}

func TestModernReplay(t *testing.T) {
	t.Parallel()
	s := newSession()
	s.era = eraModern
	rt := newRouter()
	st := s.strategy()
	p := &Port{id: 1}
	if st.established(&s, p) {
		t.Fatal("established without a listen")
	}
	msg := []byte(`{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`)
	s.listens[`"L1"`] = newListen(msg, envOf(t, string(msg)).Params)
	s.listens[`"L1"`].port = p
	got := st.replay(&s, rt, 3)
	if len(got) != 1 || string(got[0]) != string(msg) {
		t.Fatalf("replay = %q", got)
	}
	if p, ok := rt.lookup(`"L1"`, 3); !ok || p.kind != kindListen {
		t.Fatal("the re-sent listen is not tracked for generation 3")
	}
	if !s.listens[`"L1"`].awaitingAck {
		t.Fatal("the new child's ack would reach the client")
	}
	if st.established(&s, &Port{id: 2}) {
		t.Fatal("another client's listen established a client")
	}
	lc := st.listChanged(&s, p, []string{"tools", "prompts"})
	if len(lc) != 1 || !strings.Contains(string(lc[0].msg), `"L1"`) || !strings.Contains(string(lc[0].msg), "tools/list_changed") || string(lc[0].rel) != `"L1"` {
		t.Fatalf("listChanged = %q (only tools was opted into)", lc)
	}
}
