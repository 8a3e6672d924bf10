package relay

import (
	"log/slog"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/texts"
)

func TestCrashPolicy(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	quick, late := texts.Exit{Uptime: time.Second}, texts.Exit{Uptime: time.Minute}
	h := health{crashes: crashPolicy{restart: true}}
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		if r, d := h.crashed(quick, "recompile", log); r != texts.CrashRestarting(quick) || d != want {
			t.Fatalf("crash %d: %q %v, want restart after %v", i+1, r, d, want)
		}
	}
	if r, d := h.crashed(quick, "recompile", log); r != texts.CrashLoop(quick, crashLoop, "recompile") || d != 0 || !h.crashes.stopped {
		t.Fatalf("third quick crash: %q %v, want the loop stopped", r, d)
	}
	h.restartedByBuild()
	if r, d := h.crashed(quick, "recompile", log); r != texts.CrashRestarting(quick) || d != 100*time.Millisecond || h.crashes.stopped {
		t.Fatalf("after reset: %q %v", r, d)
	}
	// A crash long after the start begins a new count.
	h.crashed(quick, "recompile", log)
	if r, d := h.crashed(late, "recompile", log); r != texts.CrashRestarting(late) || d != 100*time.Millisecond {
		t.Fatalf("late crash: %q %v", r, d)
	}
	w := health{}
	for range 5 {
		if r, d := w.crashed(texts.Exit{}, "recompile", log); r != texts.CrashWait(texts.Exit{}, "recompile") || d != 0 || w.crashes.stopped {
			t.Fatalf("on_crash=wait: %q %v", r, d)
		}
	}
}
