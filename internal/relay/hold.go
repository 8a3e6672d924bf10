package relay

import (
	"bytes"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// holdQueue holds a session's client messages while no child can take
// them (the first build, a restart), in arrival order, within a count and
// a byte limit. It has no lock: its session's guards it.
type holdQueue struct {
	maxLen, maxBytes int
	q                []queued
	bytes            int
}

type queued struct {
	msg []byte
	env wire.Envelope
	at  time.Time
}

// holdResult says what add did with a message.
type holdResult int

const (
	held      holdResult = iota
	duplicate            // a held request has the same id
	full                 // the count or byte limit would be passed
)

// add holds msg, unless a held request has its id or the queue is full.
func (h *holdQueue) add(msg []byte, env wire.Envelope, now time.Time) holdResult {
	if env.IsRequest() && h.index(env.ID) >= 0 {
		return duplicate
	}
	if len(h.q) >= h.maxLen || h.bytes+len(msg) > h.maxBytes {
		return full
	}
	h.q = append(h.q, queued{msg: msg, env: env, at: now})
	h.bytes += len(msg)
	return held
}

func (h *holdQueue) index(id []byte) int {
	for i, m := range h.q {
		if m.env.IsRequest() && bytes.Equal(m.env.ID, id) {
			return i
		}
	}
	return -1
}

// remove drops the held request with this id; it reports whether there
// was one.
func (h *holdQueue) remove(id []byte) bool {
	i := h.index(id)
	if i < 0 {
		return false
	}
	h.bytes -= len(h.q[i].msg)
	h.q = append(h.q[:i], h.q[i+1:]...)
	return true
}

// has reports whether a message like env is held: a request with its id,
// or a notification of its method.
func (h *holdQueue) has(env wire.Envelope) bool {
	for _, m := range h.q {
		if env.ID != nil && bytes.Equal(m.env.ID, env.ID) || env.ID == nil && m.env.ID == nil && m.env.Method == env.Method {
			return true
		}
	}
	return false
}

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
