package relay

import (
	"strings"
	"testing"
)

func TestRouterPending(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	rt.pending["1"] = &pending{kind: kindPlain, gen: 1}
	rt.pending["2"] = &pending{kind: kindListen, gen: 1}
	rt.pending["3"] = &pending{kind: kindToolsCall, gen: 2}
	renamed := rt.newID('r')
	rt.pending[string(renamed)] = &pending{kind: kindPlain, gen: 1, clientID: []byte("1.5")}
	if key, _, ok := rt.byClient([]byte("1.5")); !ok || key != string(renamed) {
		t.Fatalf("byClient(1.5) = %q %v, want the relay's id", key, ok)
	}
	if _, _, ok := rt.byClient(renamed); ok {
		t.Fatal("the relay's id found as a client's")
	}
	if _, ok := rt.lookup("1", 2); ok {
		t.Fatal("a response from generation 2 answered a request sent to generation 1")
	}
	if p, ok := rt.lookup("1", 1); !ok || p.kind != kindPlain {
		t.Fatal("lookup")
	}
	rt.forget("1")
	if _, ok := rt.lookup("1", 1); ok {
		t.Fatal("forget")
	}
	rt.forget("1") // forgotten twice: nothing happens
	rt.pending["4"] = &pending{kind: kindPlain, gen: 1}
	got := rt.takeGen(1)
	if len(got) != 2 || got["4"] == nil || got[string(renamed)] == nil {
		t.Fatalf("takeGen(1) = %v, want 4 and the renamed one (the listen outlives its child)", got)
	}
	if _, _, ok := rt.byClient([]byte("1.5")); ok {
		t.Fatal("a request taken is still found by its client's id")
	}
	if rt.pending["2"] == nil || rt.pending["3"] == nil {
		t.Fatal("takeGen took too much")
	}
}

func TestRouterServerRequests(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	// Two children that both use id 1 for their requests to the client.
	a := rt.renumber(1, []byte("1"))
	b := rt.renumber(2, []byte("1"))
	if string(a) == string(b) || !strings.HasPrefix(string(a), `"mcpflow:s`) {
		t.Fatalf("renumbered ids %s %s", a, b)
	}
	sr, ok := rt.mapBack(string(b))
	if !ok || sr.gen != 2 || string(sr.origID) != "1" {
		t.Fatalf("mapBack = %+v %v", sr, ok)
	}
	if _, ok := rt.mapBack(string(b)); ok {
		t.Fatal("an answer mapped back twice")
	}
	// The child cancels its own request: the client hears of it under the
	// id it knows.
	if id, ok := rt.cancelServerReq(1, []byte("1")); !ok || id != string(a) {
		t.Fatalf("cancelServerReq = %q %v", id, ok)
	}
	if _, ok := rt.mapBack(string(a)); ok {
		t.Fatal("a cancelled request mapped back")
	}
}

func TestRouterDrain(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	rt.pending["1"] = &pending{kind: kindToolsCall, gen: 1}
	rt.pending["L"] = &pending{kind: kindListen, gen: 1}
	done := rt.startDrain(1)
	select {
	case <-done:
		t.Fatal("drained with a call in flight")
	default:
	}
	rt.forget("1")
	select {
	case <-done:
	default:
		t.Fatal("not drained once the last call ended (a listen does not count)")
	}
	if _, one := rt.only(1); one != nil {
		t.Fatal("only: a listen counted as a call")
	}
}
