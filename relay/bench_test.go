package relay

import (
	"fmt"
	"io"
	"testing"
)

// BenchmarkEchoRoundTrip measures one small tools/call through the relay
// to a real fixture child (legacy era), client side included. For
// profiling the hot path:
//
//	go test -run '^$' -bench EchoRoundTrip -cpuprofile cpu.out ./relay
func BenchmarkEchoRoundTrip(b *testing.B) {
	w := newWire(b, nil)
	w.handshake("legacy")
	b.ResetTimer()
	for i := range b.N {
		w.send(toolCall(1000+i, "", "echo", `{"text":"hi"}`))
		w.recv()
	}
}

// BenchmarkHotPath is the relay's own work for one small tools/call round
// trip (client line in, child line in, both written to io.Discard): no
// pipes, no processes, no scheduler hand-offs. What a real round trip costs
// beyond this is system calls and wake-ups.
func BenchmarkHotPath(b *testing.B) {
	r := testRelay(Config{Tool: "recompile"})
	go r.sw.out.run(io.Discard, nil)
	c := &child{gen: 1, in: newOutbox(), tail: newTail(1024)}
	go c.in.run(io.Discard, nil)
	r.sw.child, r.sw.state, r.sw.gen = c, stateUp, 1
	reqs := make([][]byte, 1000)
	resps := make([][]byte, 1000)
	for i := range reqs {
		reqs[i] = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`, i))
		resps[i] = []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello"}]}}`, i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % len(reqs)
		r.sw.fromClient(clone(reqs[k]))
		r.sw.fromChild(c, clone(resps[k]))
	}
}
