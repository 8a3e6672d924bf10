package relay

import (
	"runtime/debug"
	"sync"
	"time"
)

// Long lines are read into fixed-size chunks that are recycled from one
// long line to the next: fresh memory costs a page fault per 4 KiB on
// first touch, a recycled chunk none (BENCHMARKS.md). The pool is only an
// optimization: a chunk that is never given back is ordinary garbage.
//
// The rule that keeps it safe: a chunk is put back only after its last
// use (written to the peer, or copied into a joined line), never while any
// slice of it may still be read.

// chunkSize is the size of one chunk; a long line wastes less than one.
const chunkSize = 1 << 20

// poolIdle is how long unused chunks are kept: past it, they are dropped
// and their memory is returned to the operating system, so a burst of
// large messages does not leave the process large.
const poolIdle = 5 * time.Second

type chunkPool struct {
	mu    sync.Mutex
	free  [][]byte
	timer *time.Timer
	idle  time.Duration
	fresh int // chunks allocated, for tests
}

// linePool is the process's pool (relays in one process share it).
var linePool = &chunkPool{idle: poolIdle}

// get returns an empty chunk of capacity chunkSize, and whether it is
// newly allocated.
func (p *chunkPool) get() (c []byte, fresh bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		c = p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return c[:0], false
	}
	p.fresh++
	return make([]byte, 0, chunkSize), true
}

// put gives chunks back for reuse. Only chunks from get may be put, and
// only after their last use; the slices in cs are cleared.
func (p *chunkPool) put(cs [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range cs {
		if cap(c) == chunkSize {
			p.free = append(p.free, c[:0])
		}
		cs[i] = nil
	}
	if p.timer == nil {
		p.timer = time.AfterFunc(p.idle, p.release)
	} else {
		p.timer.Reset(p.idle)
	}
}

// join returns a copy of the chunks as one slice and puts them back: a
// long line that is not written from its chunks.
func (p *chunkPool) join(cs [][]byte) []byte {
	n := 0
	for _, c := range cs {
		n += len(c)
	}
	line := make([]byte, 0, n)
	for _, c := range cs {
		line = append(line, c...)
	}
	p.put(cs)
	return line
}

// release drops the free chunks after poolIdle without a put, and hands
// the memory back to the operating system.
func (p *chunkPool) release() {
	p.mu.Lock()
	n := len(p.free)
	p.free = nil
	p.mu.Unlock()
	if n > 0 {
		debug.FreeOSMemory()
	}
}

// setIdle changes poolIdle (for tests) and returns the previous value.
func (p *chunkPool) setIdle(d time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.idle
	p.idle = d
	return old
}

// stats reports how many chunks are free and how many were allocated in
// all (for tests).
func (p *chunkPool) stats() (free, fresh int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free), p.fresh
}
