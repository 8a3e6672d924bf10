package builder

import (
	"bytes"
	"fmt"
	"sync"
	"unicode/utf8"
)

// outputBuffer keeps a build's combined output within a byte budget: the
// first half of the budget and the last half. It is safe for concurrent use.
type outputBuffer struct {
	headMax, tailMax int

	mu    sync.Mutex
	head  []byte // the first bytes written, at most headMax
	tail  []byte // the latest bytes written after head filled; trimmed lazily to tailMax
	total int64  // bytes written
}

func newOutputBuffer(max int) *outputBuffer {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	return &outputBuffer{headMax: max / 2, tailMax: max - max/2}
}

// Write keeps p's bytes that fall in the head or the tail. It never fails.
func (o *outputBuffer) Write(p []byte) (int, error) {
	n := len(p)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.total += int64(n)
	if room := o.headMax - len(o.head); room > 0 {
		take := min(room, len(p))
		o.head = append(o.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= o.tailMax {
		o.tail = append(o.tail[:0], p[len(p)-o.tailMax:]...)
		return n, nil
	}
	o.tail = append(o.tail, p...)
	if len(o.tail) > 2*o.tailMax {
		o.tail = o.tail[:copy(o.tail, o.tail[len(o.tail)-o.tailMax:])]
	}
	return n, nil
}

// String returns the output kept. When some was cut, the head and the tail
// are trimmed to whole lines (when they hold any line break) and joined by
// a "… N bytes cut …" line.
func (o *outputBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	head, tail := o.head, o.tail
	if len(tail) > o.tailMax {
		tail = tail[len(tail)-o.tailMax:]
	}
	if o.total == int64(len(head)+len(tail)) {
		return string(head) + string(tail)
	}
	// Cut at line breaks, unless that would throw away more than half of
	// what was kept (a few very long lines).
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 && i+1 >= len(head)/2 {
		head = head[:i+1]
	} else {
		head = trimPartialRuneEnd(head)
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 && i+1 <= len(tail)/2 {
		tail = tail[i+1:]
	} else {
		tail = trimPartialRuneStart(tail)
	}
	cut := o.total - int64(len(head)) - int64(len(tail))
	var b bytes.Buffer
	b.Grow(len(head) + len(tail) + 40)
	b.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "… %d bytes cut …\n", cut)
	b.Write(tail)
	return b.String()
}

// trimPartialRuneEnd drops a UTF-8 sequence cut short at the end of p.
func trimPartialRuneEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return p[:i]
			}
			break
		}
	}
	return p
}

// trimPartialRuneStart drops the continuation bytes of a UTF-8 sequence
// whose start was cut off from p.
func trimPartialRuneStart(p []byte) []byte {
	for i := 0; i < len(p) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(p[i]) {
			return p[i:]
		}
	}
	return p
}
