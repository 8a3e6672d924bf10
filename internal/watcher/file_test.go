package watcher

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WatchFile sees a write and a save by rename of its file, and not a
// write to another file of the folder.
func TestWatchFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpflow.toml")
	if err := os.WriteFile(path, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := WatchFile(ctx, path, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	expect := func(what string, want bool) {
		t.Helper()
		select {
		case <-ch:
			if !want {
				t.Fatalf("%s: a change was reported", what)
			}
		case <-time.After(500 * time.Millisecond):
			if want {
				t.Fatalf("%s: no change reported", what)
			}
		}
	}
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("x"), 0o644)
	expect("another file", false)
	os.WriteFile(path, []byte("b"), 0o644)
	expect("a write", true)
	tmp := filepath.Join(dir, ".mcpflow.toml.swp")
	os.WriteFile(tmp, []byte("c"), 0o644)
	os.Rename(tmp, path)
	expect("a save by rename", true)
	cancel()
	for range ch {
	}
}
