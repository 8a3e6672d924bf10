package relay

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// batches collects the answers to client batches (protocol 2025-03-26): a
// batch is answered with one array holding the answers of all its requests,
// in the order they complete. Answers to the client go through collect,
// which takes those that belong to an open batch; with no batch open it
// costs one atomic load. Its mutex guards its map and the batches in it.
type batches struct {
	send func(msg []byte) // writes a message to the client

	mu   sync.Mutex
	byID map[string]*batch // client request id -> the batch it came in
	open atomic.Int32      // batches not yet answered
}

type batch struct {
	want int      // requests still unanswered, +1 until every element is dispatched
	out  [][]byte // answers so far
}

func newBatches(send func([]byte)) *batches {
	return &batches{send: send, byID: map[string]*batch{}}
}

// begin opens a batch: envs are its elements (isArray set on one that is
// not a JSON-RPC object, answered at once with invalid). Each request gets
// its place in the answer. Call dispatched once every element is handled.
func (bs *batches) begin(envs []envelope, invalid []byte) *batch {
	b := &batch{want: 1}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, env := range envs {
		if env.isArray {
			b.out = append(b.out, invalid)
			continue
		}
		key := string(env.id)
		if env.isRequest() && key != "null" && bs.byID[key] == nil {
			bs.byID[key] = b
			b.want++
		}
	}
	bs.open.Add(1)
	return b
}

// dispatched says every element of b was handled; b is answered once its
// last request is.
func (bs *batches) dispatched(b *batch) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b.want--
	bs.finish(b)
}

// collect takes msg, a response to the client, if it answers a request of
// an open batch; otherwise it reports false and the caller sends it.
func (bs *batches) collect(msg []byte) bool {
	if bs.open.Load() == 0 {
		return false
	}
	env, err := peekEnvelope(msg)
	if err != nil {
		return false
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.byID[string(env.id)]
	if !ok || string(env.id) == "null" {
		return false
	}
	delete(bs.byID, string(env.id))
	b.out = append(b.out, msg)
	b.want--
	bs.finish(b)
	return true
}

// forget stops waiting for an answer that will never come (the client
// canceled the request).
func (bs *batches) forget(id []byte) {
	if bs.open.Load() == 0 {
		return
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b, ok := bs.byID[string(id)]; ok {
		delete(bs.byID, string(id))
		b.want--
		bs.finish(b)
	}
}

// finish sends the array once nothing is missing. bs.mu is held.
func (bs *batches) finish(b *batch) {
	if b.want > 0 {
		return
	}
	bs.open.Add(-1)
	if len(b.out) == 0 {
		return // only notifications: no answer at all
	}
	bs.send(append(append([]byte{'['}, bytes.Join(b.out, []byte{','})...), ']'))
}

// reply sends a response to the client, or adds it to its batch.
func (r *switchboard) reply(msg []byte) {
	if !r.batches.collect(msg) {
		r.out.send(msg)
	}
}
