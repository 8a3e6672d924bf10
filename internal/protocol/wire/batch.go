package wire

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// Batches collects the answers to a client's JSON-RPC batches (protocol
// 2025-03-26 has them): a batch is answered with one array holding the
// answers of all its requests, in the order they complete; a batch of
// notifications gets no answer. Every answer to the client goes through
// Collect, which takes those that belong to an open batch; with no batch
// open it costs one atomic load. It is safe for concurrent use.
type Batches struct {
	send func(msg []byte) // writes a message to the client

	mu   sync.Mutex
	byID map[string]*Batch // raw request id -> the batch it came in
	open atomic.Int32      // batches not yet answered
}

// A Batch is one open batch.
type Batch struct {
	want int      // requests still unanswered, +1 until every element is dispatched
	out  [][]byte // answers so far
}

// NewBatches returns Batches that write finished batches with send.
func NewBatches(send func([]byte)) *Batches {
	return &Batches{send: send, byID: map[string]*Batch{}}
}

// Begin opens a batch whose elements are requests with these raw ids (nil
// for an element that is no request) and answers already made (the
// errors of elements that are no JSON-RPC message). Call Dispatched once
// every element is handled.
func (bs *Batches) Begin(ids [][]byte, answered [][]byte) *Batch {
	b := &Batch{want: 1, out: answered}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, id := range ids {
		key := string(id)
		if id != nil && key != "null" && bs.byID[key] == nil {
			bs.byID[key] = b
			b.want++
		}
	}
	bs.open.Add(1)
	return b
}

// Dispatched says every element of b was handled; b is answered once its
// last request is.
func (bs *Batches) Dispatched(b *Batch) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b.want--
	bs.finish(b)
}

// Collect takes msg, a response to the client, if it answers a request of
// an open batch; otherwise it reports false and the caller sends msg.
func (bs *Batches) Collect(msg []byte) bool {
	if bs.open.Load() == 0 {
		return false
	}
	env, err := Peek(msg)
	if err != nil || env.ID == nil {
		return false
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b, ok := bs.byID[string(env.ID)]
	if !ok {
		return false
	}
	delete(bs.byID, string(env.ID))
	b.out = append(b.out, msg)
	b.want--
	bs.finish(b)
	return true
}

// Forget stops waiting for an answer that will never come (the client
// canceled the request).
func (bs *Batches) Forget(id []byte) {
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
func (bs *Batches) finish(b *Batch) {
	if b.want > 0 {
		return
	}
	bs.open.Add(-1)
	if len(b.out) == 0 {
		return // only notifications: no answer at all
	}
	bs.send(append(append([]byte{'['}, bytes.Join(b.out, []byte{','})...), ']'))
}
