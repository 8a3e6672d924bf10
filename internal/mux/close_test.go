package mux

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/testkit"
)

// TestBackendCloseWhenTheClientStopsReading: a relay backend whose client
// takes no more messages (its Deliver blocks: the mux's session closing
// under load) still closes, within a bound, and stops its child.
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
	release := make(chan struct{})
	defer close(release)
	delivered := make(chan struct{}, 16)
	s := b.Open(wire.ClientFunc(func(msg, rel []byte) {
		delivered <- struct{}{}
		<-release // a client that takes one message and no more
	}))
	s.Send([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	for i := 2; i < 6; i++ {
		s.Send([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)))
	}
	s.Send([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`))
	select {
	case <-delivered:
	case <-time.After(15 * time.Second):
		t.Fatal("no answer was delivered")
	}
	closed := make(chan struct{})
	go func() { s.Close(); b.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return within 15 s while the client took nothing")
	}
}
