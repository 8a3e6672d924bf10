package relay

import (
	"bytes"
)

// A client batch (protocol 2025-03-26) is answered with one array holding
// the answers of all its requests, in the order they complete. Answers to
// the client go through reply, which collects those that belong to an open
// batch; with no batch open it costs one atomic load.

type batch struct {
	want int      // requests still unanswered
	out  [][]byte // answers so far
}

// reply sends a response to the client, or adds it to its batch.
func (r *Relay) reply(msg []byte) {
	if r.openBatches.Load() == 0 {
		r.out.send(msg)
		return
	}
	env, err := peekEnvelope(msg)
	if err != nil {
		r.out.send(msg)
		return
	}
	r.batchMu.Lock()
	b, ok := r.batches[string(env.id)]
	if ok && string(env.id) != "null" {
		delete(r.batches, string(env.id))
		b.out = append(b.out, msg)
		b.want--
		r.finishBatch(b)
		r.batchMu.Unlock()
		return
	}
	r.batchMu.Unlock()
	r.out.send(msg)
}

// forgetBatchID stops waiting for an answer that will never come (the
// client canceled the request). batchMu must not be held.
func (r *Relay) forgetBatchID(id []byte) {
	if r.openBatches.Load() == 0 {
		return
	}
	r.batchMu.Lock()
	defer r.batchMu.Unlock()
	if b, ok := r.batches[string(id)]; ok {
		delete(r.batches, string(id))
		b.want--
		r.finishBatch(b)
	}
}

// finishBatch sends the array once nothing is missing. batchMu is held.
func (r *Relay) finishBatch(b *batch) {
	if b.want > 0 {
		return
	}
	r.openBatches.Add(-1)
	if len(b.out) == 0 {
		return // only notifications: no answer at all
	}
	r.out.send(append(append([]byte{'['}, bytes.Join(b.out, []byte{','})...), ']'))
}
