// Package tail keeps a bounded part of a stream of output: the first head
// bytes written and the last tail bytes, and optionally hands out each
// line as it is completed. It is what mcpflow keeps of a build's output,
// a child server's stderr and a command-line tool's stderr.
//
// # Contract
//
//   - A Buffer holds at most head + 2×tail bytes (and a line of 1 KiB for
//     the line function), however much is written; String reports at most
//     head + tail of them, plus one marker line.
//   - Write never fails and always reports len(p). Every method is safe
//     for concurrent use; writes are kept in the order they were made.
//   - When nothing was cut, String returns exactly the bytes written.
//   - When something was cut, String trims the kept bytes where they were
//     cut: the head ends after its last line break and the tail starts
//     after its first one, unless that would drop more than half of the
//     part (a few very long lines); in that case the part is only trimmed
//     to whole UTF-8 sequences. A Buffer that keeps a head joins the two
//     parts with a "… N bytes cut …" line (N counts every byte written that
//     String leaves out); one that keeps only a tail returns the tail.
//   - With a line function, every complete line is passed to it, without
//     its "\n" or "\r\n" and capped at 1 KiB (cut at a whole UTF-8
//     sequence), in order, one call at a time, while the Buffer is locked
//     (the function must not use the Buffer). Flush passes the last line
//     when it has no line break.
package tail

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxLine is how many bytes of a line the line function gets; the rest of
// a longer line is dropped.
const maxLine = 1 << 10

// Buffer keeps the head and the tail of what is written to it. Make one
// with New.
type Buffer struct {
	headMax, tailMax int
	onLine           func(line string)

	mu    sync.Mutex
	head  []byte // the first bytes written, at most headMax
	tail  []byte // the latest bytes written after the head filled; trimmed lazily to tailMax
	total int64  // bytes written
	line  []byte // the line being written, for onLine; at most maxLine bytes
}

// New returns a Buffer that keeps the first head bytes written and the
// last tail bytes (a negative size counts as 0). onLine, when not nil,
// gets every complete line.
func New(head, tail int, onLine func(line string)) *Buffer {
	return &Buffer{headMax: max(head, 0), tailMax: max(tail, 0), onLine: onLine}
}

// Write keeps p's bytes that fall in the head or the tail, and passes the
// lines p completes to the line function. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(n)
	if b.onLine != nil {
		b.lines(p)
	}
	if room := b.headMax - len(b.head); room > 0 {
		take := min(room, len(p))
		b.head = append(b.head, p[:take]...)
		p = p[take:]
	}
	switch {
	case len(p) == 0:
	case len(p) >= b.tailMax:
		b.tail = append(b.tail[:0], p[len(p)-b.tailMax:]...)
	default:
		b.tail = append(b.tail, p...)
		if len(b.tail) > 2*b.tailMax {
			b.tail = b.tail[:copy(b.tail, b.tail[len(b.tail)-b.tailMax:])]
		}
	}
	return n, nil
}

// lines passes the lines p completes to onLine. b.mu is held.
func (b *Buffer) lines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.addToLine(p)
			return
		}
		b.addToLine(p[:i])
		b.emitLine()
		p = p[i+1:]
	}
}

func (b *Buffer) addToLine(p []byte) {
	if room := maxLine - len(b.line); room > 0 {
		b.line = append(b.line, p[:min(room, len(p))]...)
	}
}

func (b *Buffer) emitLine() {
	line := b.line
	if len(line) == maxLine {
		line = trimPartialRuneEnd(line)
	}
	b.onLine(strings.TrimSuffix(string(line), "\r"))
	b.line = b.line[:0]
}

// Flush passes the last line to the line function when it was written
// without a line break. Call it once the writing is over.
func (b *Buffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onLine != nil && len(b.line) > 0 {
		b.emitLine()
	}
}

// String returns what the Buffer kept, as the package comment says.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	head, tail := b.head, b.tail
	if len(tail) > b.tailMax {
		tail = tail[len(tail)-b.tailMax:]
	}
	if b.total == int64(len(head)+len(tail)) {
		return string(head) + string(tail)
	}
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
	if b.headMax == 0 {
		return string(tail)
	}
	var s strings.Builder
	s.Grow(len(head) + len(tail) + 40)
	s.Write(head)
	if len(head) > 0 && head[len(head)-1] != '\n' {
		s.WriteByte('\n')
	}
	fmt.Fprintf(&s, "… %d bytes cut …\n", b.total-int64(len(head))-int64(len(tail)))
	s.Write(tail)
	return s.String()
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
