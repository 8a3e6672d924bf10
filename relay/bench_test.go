package relay

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
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
	c := &child{gen: 1, in: newOutbox(), tail: newTail(1024), answered: make(chan struct{})}
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

// bigResponse is a tools/call result of about n bytes: text with some
// escapes and non-ASCII, as a large tool result has.
func bigResponse(n int) []byte {
	const unit = `line of output with \"quotes\", a tab\t and é ü 日本 `
	var text []byte
	for len(text)+len(unit) <= n {
		text = append(text, unit...)
	}
	for len(text) < n {
		text = append(text, 'x')
	}
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"%s"}]}}`, text))
}

// BenchmarkValidateServerLine is the cost of checking that a child's line
// is valid JSON before it is forwarded: jsonscan.Valid for a line read whole,
// validChunks for a long line kept in 1 MiB chunks, encoding/json for
// comparison.
func BenchmarkValidateServerLine(b *testing.B) {
	for _, size := range []int{100, 64 << 10, 1 << 20, 16 << 20} {
		msg := bigResponse(size)
		var chunks [][]byte
		for rest := msg; len(rest) > 0; {
			n := min(len(rest), 1<<20)
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		b.Run(fmt.Sprintf("Valid/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for range b.N {
				if !jsonscan.Valid(msg) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(fmt.Sprintf("validChunks/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for range b.N {
				if !validChunks(chunks) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(fmt.Sprintf("json.Valid/%dB", size), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for range b.N {
				if !json.Valid(msg) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
