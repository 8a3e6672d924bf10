package builder

import (
	"context"
	"log/slog"
	"sync"

	"github.com/mcpflow/mcpflow/internal/watcher"
)

// RunWatching runs b's loop (Run) and, when w is not nil, feeds it w's
// batches of changed paths, logging the watch's size (with attrs) once w
// is ready. It returns when ctx ends, once both have stopped (a running
// build is killed). Every mode (single server, [cli], each mux server)
// runs its builds through it.
func (b *Builder) RunWatching(ctx context.Context, w *watcher.Watcher, log *slog.Logger, attrs ...any) {
	var wg sync.WaitGroup
	wg.Go(func() { b.Run(ctx) })
	if w != nil {
		batches := make(chan watcher.Batch, 16)
		wg.Go(func() {
			if err := w.Run(ctx, batches); err != nil && ctx.Err() == nil {
				log.Error("watching stopped", "err", err)
			}
		})
		wg.Go(func() {
			ready := w.Ready()
			for {
				select {
				case <-ctx.Done():
					return
				case batch := <-batches:
					b.Changed(batch.Paths)
				case <-ready:
					ready = nil
					st := w.Stats()
					log.Info("watching", append(attrs, "files", st.Files, "dirs", st.Dirs, "watches", st.Watches)...)
				}
			}
		})
	}
	wg.Wait()
}
