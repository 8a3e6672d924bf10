package watcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// bigTree writes that many sparse files of size bytes into a new temp
// dir (no disk space taken; hashing one still reads every byte), spread
// over a few subdirectories.
func bigTree(t testing.TB, files int, size int64) string {
	t.Helper()
	root := t.TempDir()
	for i := range files {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%8), fmt.Sprintf("f%03d.bin", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return root
}

// TestScanStopsAtOnce: Run's initial scan hashes 200 files of 60 MiB
// (12 GB to read, seconds of work); canceling its context in the middle
// makes Run return within a fraction of a second, in both modes.
func TestScanStopsAtOnce(t *testing.T) {
	root := bigTree(t, 200, 60<<20)
	for _, poll := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			w, err := New(Config{Root: root, Poll: poll})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- w.Run(ctx, make(chan Batch, 1)) }()
			time.Sleep(300 * time.Millisecond)
			select {
			case <-w.Ready():
				t.Fatal("the scan was over before the cancel: the test shows nothing")
			default:
			}
			cancel()
			canceled := time.Now()
			select {
			case err := <-ran:
				if err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
				if d := time.Since(canceled); d > 250*time.Millisecond {
					t.Errorf("Run returned %v after the cancel, want a fraction of a second", d)
				}
				t.Logf("Run returned %v after the cancel", time.Since(canceled))
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return within 5s of the cancel")
			}
			select {
			case <-w.Ready():
				t.Error("Ready closed after a canceled scan")
			default:
			}
		})
	}
}

// TestScanHashesBigFiles: the scan the test above cancels does hash
// (a change to a big file is told apart by content, not size and time).
func TestScanHashesBigFiles(t *testing.T) {
	root := bigTree(t, 1, 5<<20)
	s, err := newSettings(Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(newFilter(s), nil, true)
	if err := tr.sync(".", nil); err != nil {
		t.Fatal(err)
	}
	st := tr.dirs["d0"].files["f000.bin"]
	if st.big || st.sum == 0 {
		t.Errorf("a 5 MB file was not hashed: %+v", st)
	}
	// A closed done channel stops a sync before it reads anything.
	done := make(chan struct{})
	close(done)
	tr2 := newTree(newFilter(s), nil, true)
	tr2.done = done
	if err := tr2.sync(".", nil); err != errStopped || tr2.nFiles != 0 {
		t.Errorf("stopped sync = %v with %d files, want errStopped and none", err, tr2.nFiles)
	}
}
