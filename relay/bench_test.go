package relay

import "testing"

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
