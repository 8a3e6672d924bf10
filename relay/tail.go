package relay

import "sync"

// tail keeps the last n bytes written to it: the child's stderr, for crash
// reports.
type tail struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		// Keep the buffer from growing without bound: cut at 2n.
		if len(t.buf) > 2*t.n {
			t.buf = append(t.buf[:0], t.buf[over:]...)
		}
	}
	return len(p), nil
}

// String returns the kept bytes, starting at a line boundary when cut.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.n {
		b = b[len(b)-t.n:]
		for i, c := range b {
			if c == '\n' {
				b = b[i+1:]
				break
			}
		}
	}
	return string(b)
}
