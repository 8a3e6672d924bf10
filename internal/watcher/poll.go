package watcher

import (
	"context"
	"time"
)

// runPoll is Run without fsnotify: every Poll interval it walks the tree,
// comparing each file's size and modification time and, when those
// differ, its content hash. Changes found go through the same debounce.
func (w *Watcher) runPoll(ctx context.Context, out chan<- Batch) error {
	t := newTree(newFilter(w.s), nil, true)
	t.done = ctx.Done()
	if err := w.scan(ctx, t); err != nil || ctx.Err() != nil {
		return err
	}
	w.s.log.Debug("polling", "root", w.s.root, "every", w.s.poll, "dirs", len(t.dirs), "files", t.nFiles)
	close(w.ready)

	tick := time.NewTicker(w.s.poll)
	defer tick.Stop()
	b := newBatcher(w.s.debounce, w.s.maxWait)
	defer b.stop()
	found := make(pathSet)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			for _, r := range w.s.roots {
				// A vanished root is forgotten by sync and found again
				// here once it is back.
				if err := t.sync(r, found); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
			}
			if len(found) > 0 {
				for p := range found {
					b.pending.add(p)
				}
				clear(found)
				b.touch()
			}
		case <-b.timer.C:
			b.close()
			if len(b.ready) > 0 {
				w.s.log.Debug("changes", "paths", len(b.ready))
			}
		case b.out(out) <- b.batch:
			b.sent()
		}
		w.setStats(t.stats())
	}
}
