// Package logring keeps the last lines of mcpflow's log in memory, for
// mcpflow logs, also when no log file was configured.
//
// A Ring is an io.Writer that keeps its newest lines, each whole: a line
// written in pieces is stored once its newline arrives (one longer than
// maxLine in maxLine pieces). Follow hands out the lines kept so far and,
// from the same instant, every new line on a channel: none is in both, and
// none falls between. A follower that does not keep up loses lines
// (counted by Dropped); it never slows the writer. Every method is safe
// for concurrent use.
package logring

import (
	"bytes"
	"sync"
)

const (
	defaultLines  = 5000     // the capacity of a Ring made with New(0)
	maxLine       = 64 << 10 // the longest line kept whole; longer ones are cut into pieces of this size
	defaultBuffer = 1024     // the channel capacity of a Follow made with buffer 0
)

// Ring is an in-memory tail of a log; make it with New.
type Ring struct {
	mu      sync.Mutex
	lines   []string // circular once len(lines) == cap
	next    int      // the oldest line, where the next one goes once full
	cap     int
	partial []byte // a line written without its newline yet
	subs    map[*Sub]struct{}
}

// New returns a Ring that keeps the last n lines (defaultLines if n <= 0).
func New(n int) *Ring {
	if n <= 0 {
		n = defaultLines
	}
	return &Ring{cap: n, subs: make(map[*Sub]struct{})}
}

// Write stores every complete line in p, without a trailing "\r"; it never
// fails and never blocks on a follower.
func (r *Ring) Write(p []byte) (int, error) {
	n := len(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(p) > 0 {
		line, rest, found := bytes.Cut(p, []byte("\n"))
		if len(r.partial) > 0 {
			r.partial = append(r.partial, line...)
			line = r.partial
		}
		for len(line) > maxLine {
			r.addLocked(string(line[:maxLine]))
			line = line[maxLine:]
		}
		if !found {
			r.partial = append(r.partial[:0], line...)
			break
		}
		r.addLocked(string(bytes.TrimSuffix(line, []byte("\r"))))
		r.partial, p = r.partial[:0], rest
	}
	if cap(r.partial) > maxLine {
		r.partial = bytes.Clone(r.partial) // the buffer of a long line is not kept
	}
	return n, nil
}

func (r *Ring) addLocked(line string) {
	if len(r.lines) < r.cap {
		r.lines = append(r.lines, line)
	} else {
		r.lines[r.next] = line
		r.next = (r.next + 1) % r.cap
	}
	for s := range r.subs {
		select {
		case s.c <- line:
		default:
			s.dropped++
		}
	}
}

// Lines returns a copy of the kept lines, oldest first.
func (r *Ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshotLocked()
}

func (r *Ring) snapshotLocked() []string {
	out := append(make([]string, 0, len(r.lines)), r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// Follow returns the kept lines and a subscription, with a channel of
// buffer lines (defaultBuffer if <= 0), to every line stored after them.
func (r *Ring) Follow(buffer int) ([]string, *Sub) {
	if buffer <= 0 {
		buffer = defaultBuffer
	}
	c := make(chan string, buffer)
	s := &Sub{C: c, r: r, c: c}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs[s] = struct{}{}
	return r.snapshotLocked(), s
}

// Sub is one follower of a Ring.
type Sub struct {
	C <-chan string // each new line; closed by Close

	r       *Ring
	c       chan string
	dropped uint64 // guarded by r.mu
}

// Dropped reports how many lines this follower has lost to a full channel.
func (s *Sub) Dropped() uint64 {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.dropped
}

// Close ends the subscription and closes C; it may be called again.
func (s *Sub) Close() {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if _, ok := s.r.subs[s]; !ok {
		return
	}
	delete(s.r.subs, s)
	close(s.c)
}
