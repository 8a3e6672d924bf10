package relay

import (
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The debug line of each message from the server names the transport.
func TestLinkKindInTrace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, hopts{version: testkit.Legacy.Version})
	h.mustCall("echo", map[string]any{"text": "x"})
	if !strings.Contains(h.logs.String(), "via=stdio") {
		t.Fatalf("no via=stdio in the log:\n%s", h.logs.String())
	}
}
