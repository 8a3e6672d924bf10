package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestDemo runs the whole demo, both parts (single server, mux) in both eras, against an mcpflow built
// from this tree: the demo is the README's first command, so a change to
// what the relay returns that breaks it fails here, not in front of a user.
func TestDemo(t *testing.T) {
	testkit.SkipUnderWine(t, "no Go toolchain under Wine: the demo builds its servers with go")
	if testing.Short() {
		t.Skip("builds mcpflow and the example server")
	}
	bin := testkit.Build(t, testkit.MCPFlowPkg)
	t.Chdir(filepath.Join("..", ".."))
	for _, part := range []struct {
		era string
		mux bool
	}{{"modern", false}, {"legacy", false}, {"modern", true}, {"legacy", true}} {
		name := part.era
		if part.mux {
			name = "mux-" + part.era
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			d := &demo{bin: bin, era: part.era, mux: part.mux, changed: make(chan time.Time, 16)}
			if code := d.run(ctx, false); code != 0 {
				t.Fatalf("the demo failed at step %d (%s); its report is above", d.step, d.title)
			}
		})
	}
}
