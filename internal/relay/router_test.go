package relay

import (
	"strings"
	"testing"
)

func TestRouterPending(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	tp := &Port{id: 1}
	rt.track(tp, "1", &pending{port: tp, kind: kindPlain, gen: 1})
	rt.track(tp, "2", &pending{port: tp, kind: kindListen, gen: 1})
	rt.track(tp, "3", &pending{port: tp, kind: kindToolsCall, gen: 2})
	if !rt.inFlight(tp, []byte("1")) || rt.inFlight(tp, []byte("9")) {
		t.Fatal("inFlight")
	}
	if _, ok := rt.lookup("1", 2); ok {
		t.Fatal("a response from generation 2 answered a request sent to generation 1")
	}
	if p, ok := rt.lookup("1", 1); !ok || p.kind != kindPlain {
		t.Fatal("lookup")
	}
	if _, ok := rt.forget("1"); !ok || rt.inFlight(tp, []byte("1")) {
		t.Fatal("forget")
	}
	if _, ok := rt.forget("1"); ok {
		t.Fatal("forgotten twice")
	}
	rt.track(tp, "4", &pending{port: tp, kind: kindPlain, gen: 1})
	got := rt.takeGen(1)
	if len(got) != 1 || got[0].key != "4" {
		t.Fatalf("takeGen(1) = %v, want only 4 (the listen outlives its child)", got)
	}
	if !rt.inFlight(tp, []byte("2")) || !rt.inFlight(tp, []byte("3")) {
		t.Fatal("takeGen took too much")
	}
}

func TestRouterServerRequests(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	// Two children that both use id 1 for their requests to the client.
	a := rt.renumber(1, []byte("1"), nil)
	b := rt.renumber(2, []byte("1"), nil)
	if string(a) == string(b) || !strings.HasPrefix(string(a), reservedPrefix+"s1-") || !strings.HasPrefix(string(b), reservedPrefix+"s2-") {
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
	if id, _, ok := rt.cancelServerReq(1, []byte("1")); !ok || id != string(a) {
		t.Fatalf("cancelServerReq = %q %v", id, ok)
	}
	if _, ok := rt.mapBack(string(a)); ok {
		t.Fatal("a canceled request still maps back")
	}
	c := rt.renumber(3, []byte(`"x"`), nil)
	rt.takeGen(3)
	if _, ok := rt.mapBack(string(c)); ok {
		t.Fatal("a request of a gone child still maps back")
	}
}

func TestRouterWaiters(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	id := rt.newID("")
	ch := rt.wait(id)
	rt.deliver(string(id), []byte("answer"))
	if got := <-ch; string(got) != "answer" {
		t.Fatalf("got %q", got)
	}
	rt.deliver(string(id), []byte("again")) // no waiter: dropped, never blocks
	id2 := rt.newID("")
	rt.wait(id2)
	rt.unwait(id2)
	rt.deliver(string(id2), []byte("late"))
	if len(rt.waiters) != 0 {
		t.Fatal("waiters left")
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRouterDrain(t *testing.T) {
	t.Parallel()
	rt := newRouter()
	tp := &Port{id: 1}
	rt.track(tp, "1", &pending{port: tp, kind: kindToolsCall, gen: 1})
	rt.track(tp, "2", &pending{port: tp, kind: kindPlain, gen: 1})
	rt.track(tp, "l", &pending{port: tp, kind: kindListen, gen: 1})
	rt.track(tp, "3", &pending{port: tp, kind: kindToolsCall, gen: 2})
	done := rt.startDrain(1)
	if !rt.draining(1) || rt.draining(2) || closed(done) {
		t.Fatal("a drain with two calls in flight ended at once")
	}
	rt.forget("3") // another generation's call
	rt.forget("1")
	if closed(done) {
		t.Fatal("drain ended with a call still in flight")
	}
	rt.forget("2")
	if !closed(done) || rt.draining(1) {
		t.Fatal("drain went on after the last call (the listen does not count)")
	}
	rt.endDrain() // ending twice is harmless

	if d := rt.startDrain(1); !closed(d) {
		t.Fatal("a drain with no call in flight must end at once")
	}
	rt.track(tp, "4", &pending{port: tp, kind: kindToolsCall, gen: 2})
	d := rt.startDrain(2)
	rt.endDrain()
	if !closed(d) || rt.draining(2) {
		t.Fatal("endDrain")
	}
}
