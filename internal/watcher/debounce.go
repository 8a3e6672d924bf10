package watcher

import (
	"maps"
	"time"
)

// debouncer holds the batching rule ("Debounce" in the package
// documentation).
type debouncer struct {
	quiet, maxWait time.Duration
	first          time.Time // the batch's first event
	armed          bool
}

// touch records an event at now and returns when the batch closes.
func (d *debouncer) touch(now time.Time) time.Time {
	if !d.armed {
		d.armed, d.first = true, now
	}
	if limit := d.first.Add(d.maxWait); limit.Before(now.Add(d.quiet)) {
		return limit
	}
	return now.Add(d.quiet)
}

// batcher collects the changes of the open window and hands closed
// batches to the receiver, merging them while it is not ready.
type batcher struct {
	deb     debouncer
	timer   *time.Timer // fires when the window closes; stopped when idle
	pending pathSet     // changes of the open window
	ready   pathSet     // closed windows not yet received
	batch   Batch       // ready, sorted
}

func newBatcher(quiet, maxWait time.Duration) *batcher {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &batcher{
		deb:     debouncer{quiet: quiet, maxWait: maxWait},
		timer:   t,
		pending: make(pathSet),
		ready:   make(pathSet),
	}
}

func (b *batcher) touch() {
	now := time.Now()
	b.timer.Reset(b.deb.touch(now).Sub(now))
}

// close ends the window, moving its changes to the waiting batch.
func (b *batcher) close() {
	b.deb.armed = false // the next event starts a new batch
	if len(b.pending) == 0 {
		return
	}
	maps.Copy(b.ready, b.pending)
	clear(b.pending)
	b.batch = Batch{Paths: b.ready.sorted()}
}

// out returns ch when a batch is waiting, else nil (a nil channel never
// receives, which disables the send case of a select).
func (b *batcher) out(ch chan<- Batch) chan<- Batch {
	if len(b.ready) == 0 {
		return nil
	}
	return ch
}

func (b *batcher) sent() {
	clear(b.ready)
	b.batch = Batch{}
}
