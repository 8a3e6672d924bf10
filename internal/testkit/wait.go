package testkit

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent use: a process's stderr,
// a logger's output.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}

// Eventually polls cond every 10ms until it holds, and fails the test if
// it does not within d.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	if !Wait(d, cond) {
		tb.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Wait polls cond every 10ms until it holds, and reports whether it did
// within d: Eventually for a test that says itself what it did not see.
// d bounds the wait only, so that a test that fails does not hang; it is
// no measure of speed (timing lives in bench/).
func Wait(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
