package watcher

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchFile sends on the returned channel each time the file at path may
// have changed (written, created, renamed over or removed), once quiet
// for debounce, until ctx ends; then the channel is closed. It watches the
// file's folder (an editor may save by rename) for a config file, not a
// source tree. A change while the last one is unread is folded into it.
func WatchFile(ctx context.Context, path string, debounce time.Duration) (<-chan struct{}, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(filepath.Dir(path)); err != nil {
		fw.Close()
		return nil, err
	}
	out := make(chan struct{}, 1)
	name := filepath.Base(path)
	go func() {
		defer close(out)
		defer fw.Close()
		quiet := time.NewTimer(time.Hour)
		quiet.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) == name {
					quiet.Reset(debounce)
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
			case <-quiet.C:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}
