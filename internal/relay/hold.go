package relay

import (
	"bytes"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// holdQueue holds client messages while no child can take them (the first
// build, a restart), in arrival order, within a count and a byte limit. It
// has no lock: its owner's lock guards it.
type holdQueue struct {
	maxLen, maxBytes int
	q                []queued
	bytes            int
	// added gets a token when a message is held (never blocking): the
	// expiry wakes only while something is held.
	added chan struct{}
}

type queued struct {
	msg  []byte
	env  wire.Envelope
	at   time.Time
	port *Port // whose message it is
}

// holdResult says what add did with a message.
type holdResult int

const (
	held      holdResult = iota
	duplicate            // a held request has the same id
	full                 // the count or byte limit would be passed
)

// add holds port p's msg, unless a held request of p's has its id or the
// queue is full.
func (h *holdQueue) add(p *Port, msg []byte, env wire.Envelope, now time.Time) holdResult {
	if env.IsRequest() && h.holds(p, env.ID) {
		return duplicate
	}
	if len(h.q) >= h.maxLen || h.bytes+len(msg) > h.maxBytes {
		return full
	}
	h.q = append(h.q, queued{msg: msg, env: env, at: now, port: p})
	h.bytes += len(msg)
	select {
	case h.added <- struct{}{}:
	default:
	}
	return held
}

// holds reports whether a request of port p's with this id is held.
func (h *holdQueue) holds(p *Port, id []byte) bool {
	for _, m := range h.q {
		if m.port == p && m.env.IsRequest() && bytes.Equal(m.env.ID, id) {
			return true
		}
	}
	return false
}

// remove drops port p's held request with this id; it reports whether
// there was one.
func (h *holdQueue) remove(p *Port, id []byte) bool {
	for i, m := range h.q {
		if m.port == p && m.env.IsRequest() && bytes.Equal(m.env.ID, id) {
			h.bytes -= len(m.msg)
			h.q = append(h.q[:i], h.q[i+1:]...)
			return true
		}
	}
	return false
}

// takePort removes and returns port p's held messages, oldest first.
func (h *holdQueue) takePort(p *Port) []queued {
	var out []queued
	keep := h.q[:0]
	for _, m := range h.q {
		if m.port == p {
			h.bytes -= len(m.msg)
			out = append(out, m)
			continue
		}
		keep = append(keep, m)
	}
	clear(h.q[len(keep):])
	h.q = keep
	return out
}

// removePort drops port p's held messages.
func (h *holdQueue) removePort(p *Port) { h.takePort(p) }

// take empties the queue and returns what it held, oldest first.
func (h *holdQueue) take() []queued {
	q := h.q
	h.q, h.bytes = nil, 0
	return q
}

// put holds m again, at the back, whatever the limits: it was held before.
func (h *holdQueue) put(m queued) {
	h.q = append(h.q, m)
	h.bytes += len(m.msg)
}

// expire removes and returns the messages held since before cutoff.
func (h *holdQueue) expire(cutoff time.Time) []queued {
	var out []queued
	keep := h.q[:0]
	for _, m := range h.q {
		if m.at.Before(cutoff) {
			h.bytes -= len(m.msg)
			out = append(out, m)
			continue
		}
		keep = append(keep, m)
	}
	clear(h.q[len(keep):])
	h.q = keep
	return out
}

func (h *holdQueue) len() int { return len(h.q) }
