package mux

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/mcpflow/mcpflow/internal/wire"
)

// TestBackendCloseWhenTheClientStopsReading: a relay backend whose client
// no longer reads its output (the mux's session closing under load) still
// closes, within a bound, and stops its child.
func TestBackendCloseWhenTheClientStopsReading(t *testing.T) {
	t.Parallel()
	f := NewRelayBackends(RelayOptions{})
	b, err := f(ServerSpec{Name: "s", Command: []string{testkit.Fixture(t)}}, func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if res := b.Start(context.Background()); !res.OK {
		t.Fatalf("start: %+v", res)
	}
	out := b.Transport().(*wire.Transport).Out
	// Requests whose answers nobody reads: the relay blocks writing them.
	fmt.Fprintln(out, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	for i := 2; i < 6; i++ {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	fmt.Fprintln(out, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`)
	time.Sleep(300 * time.Millisecond)
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return within 15 s while nobody read the relay's output")
	}
}
