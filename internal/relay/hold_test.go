package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

func heldMsg(t *testing.T, s string) ([]byte, wire.Envelope) {
	t.Helper()
	env, err := wire.Peek([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s), env
}

func TestHoldQueue(t *testing.T) {
	t.Parallel()
	h := holdQueue{maxLen: 3, maxBytes: 1000}
	t0 := time.Unix(1000, 0)
	m1, e1 := heldMsg(t, `{"jsonrpc":"2.0","id":1,"method":"a"}`)
	m2, e2 := heldMsg(t, `{"jsonrpc":"2.0","method":"n"}`)
	m3, e3 := heldMsg(t, `{"jsonrpc":"2.0","id":3,"method":"c"}`)
	if !h.add(m1, e1, t0) || !h.add(m2, e2, t0.Add(time.Second)) {
		t.Fatal("not held")
	}
	if !h.add(m3, e3, t0.Add(2*time.Second)) {
		t.Fatal("third not held")
	}
	m4, e4 := heldMsg(t, `{"jsonrpc":"2.0","id":4,"method":"d"}`)
	if h.add(m4, e4, t0) {
		t.Fatal("held over maxLen")
	}
	if h.bytes != len(m1)+len(m2)+len(m3) {
		t.Fatalf("bytes %d", h.bytes)
	}
	if !h.remove([]byte("3")) || h.remove([]byte("3")) || len(h.q) != 2 || h.bytes != len(m1)+len(m2) {
		t.Fatalf("remove: len %d bytes %d", len(h.q), h.bytes)
	}
	exp := h.expire(t0.Add(500 * time.Millisecond))
	if len(exp) != 1 || string(exp[0].msg) != string(m1) || len(h.q) != 1 || h.bytes != len(m2) {
		t.Fatalf("expire: %d expired, len %d bytes %d", len(exp), len(h.q), h.bytes)
	}
	got := h.take()
	if len(got) != 1 || len(h.q) != 0 || h.bytes != 0 {
		t.Fatalf("take: %d, left %d/%d", len(got), len(h.q), h.bytes)
	}
	h.put(got[0])
	if len(h.q) != 1 || h.bytes != len(m2) {
		t.Fatal("put")
	}

	small := holdQueue{maxLen: 100, maxBytes: 100}
	for i := 0; ; i++ {
		m, e := heldMsg(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x"}`, i))
		if !small.add(m, e, t0) {
			if small.bytes+len(m) <= 100 {
				t.Fatalf("refused under maxBytes: %d + %d", small.bytes, len(m))
			}
			break
		}
	}
}

// TestHoldQueueKeepsOrder: take returns the messages in arrival order.
func TestHoldQueueKeepsOrder(t *testing.T) {
	t.Parallel()
	h := holdQueue{maxLen: 100, maxBytes: 1 << 20}
	for i := range 50 {
		m, e := heldMsg(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"x"}`, i))
		h.add(m, e, time.Now())
	}
	h.remove([]byte("7"))
	prev := -1
	for _, m := range h.take() {
		var n int
		fmt.Sscanf(string(m.env.ID), "%d", &n)
		if n <= prev || n == 7 {
			t.Fatalf("order: %d after %d", n, prev)
		}
		prev = n
	}
}
