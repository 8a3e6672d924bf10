package relay

import (
	"testing"
	"time"
)

func TestCrashPolicy(t *testing.T) {
	t.Parallel()
	p := crashPolicy{restart: true}
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		if a, d := p.crashed(time.Second); a != crashRestart || d != want {
			t.Fatalf("crash %d: %v %v, want restart after %v", i+1, a, d, want)
		}
	}
	if a, _ := p.crashed(time.Second); a != crashLoopStop || !p.stopped {
		t.Fatalf("third quick crash: %v, want the loop stopped", a)
	}
	h := health{crashes: p}
	h.restartedByBuild()
	p = h.crashes
	if a, d := p.crashed(time.Second); a != crashRestart || d != 100*time.Millisecond || p.stopped {
		t.Fatalf("after reset: %v %v", a, d)
	}
	// A crash long after the start begins a new count.
	p.crashed(time.Second)
	if a, d := p.crashed(time.Minute); a != crashRestart || d != 100*time.Millisecond {
		t.Fatalf("late crash: %v %v", a, d)
	}
	w := crashPolicy{}
	for range 5 {
		if a, _ := w.crashed(0); a != crashWait || w.stopped {
			t.Fatalf("on_crash=wait: %v", a)
		}
	}
}
