package builder

import (
	"slices"
	"sync"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// waiter is one Recompile or Startup call waiting for a cycle. The cycle
// posts progress messages and the result; the caller's goroutine takes them,
// so a slow progress callback never holds up the builder and is never
// called after the caller returned.
type waiter struct {
	wake chan struct{} // capacity 1: something was posted

	mu   sync.Mutex
	msgs []string
	res  *result.Build
	gone bool // the caller returned
}

func (w *waiter) say(msg string) { w.post(func() { w.msgs = append(w.msgs, msg) }) }

// finish posts the result; only the first one counts.
func (w *waiter) finish(r result.Build) {
	w.post(func() {
		r.Changed = slices.Clone(r.Changed)
		w.res = &r
	})
}

// post applies f under w.mu and wakes the caller, unless the caller
// returned or the result was posted already.
func (w *waiter) post(f func()) {
	w.mu.Lock()
	if w.gone || w.res != nil {
		w.mu.Unlock()
		return
	}
	f()
	w.mu.Unlock()
	poke(w.wake)
}

func (w *waiter) take() ([]string, *result.Build) {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := w.msgs
	w.msgs = nil
	return msgs, w.res
}

// abandon marks the caller gone and returns the result if it had already
// been posted.
func (w *waiter) abandon() *result.Build {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gone = true
	w.msgs = nil
	return w.res
}
