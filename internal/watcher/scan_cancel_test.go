package watcher

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
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
// (12 GB to read, seconds of work); canceling its context once the scan
// has begun makes Run return nil, never ready, having read next to
// nothing after the cancel (a few chunks of the file it was hashing, not
// the rest of that file, let alone of the tree), in both modes. What the
// scan read is counted in bytes (the test binary's rchar), not timed.
func TestScanStopsAtOnce(t *testing.T) {
	const files, size = 200, 60 << 20
	// Run reads at most one more chunk per file it hashes once the
	// cancel is seen; a scan that stopped only between files would read
	// the rest of the file it was in, 30 MiB on average.
	const afterCancel = 1 << 20
	if _, ok := testkit.BytesRead(0); !ok {
		t.Skip("no /proc/self/io: the bytes the scan reads cannot be counted")
	}
	root := bigTree(t, files, size)
	for _, poll := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			w, err := New(Config{Root: root, Poll: poll})
			if err != nil {
				t.Fatal(err)
			}
			base, _ := testkit.BytesRead(0)
			read := func() int64 {
				n, _ := testkit.BytesRead(0)
				return n - base
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan error, 1)
			go func() { ran <- w.Run(ctx, make(chan Batch, 1)) }()
			// The scan has begun: it has read a file's worth.
			testkit.Eventually(t, 30*time.Second, "the scan to read its first file", func() bool { return read() >= size })
			select {
			case <-w.Ready():
				t.Fatal("the scan was over before the cancel: the test shows nothing")
			default:
			}
			cancel()
			atCancel := read() // everything read after this was read after the cancel
			select {
			case err := <-ran:
				if err != nil {
					t.Errorf("Run = %v, want nil", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after the cancel")
			}
			total := read()
			t.Logf("read %d MiB before the cancel, %d KiB after it", atCancel>>20, (total-atCancel)>>10)
			if total-atCancel >= afterCancel {
				t.Errorf("Run read %d KiB after the cancel before it returned, want under %d KiB: it did not stop at once", (total-atCancel)>>10, afterCancel>>10)
			}
			if total >= files*size {
				t.Errorf("Run read %d bytes, the whole tree (%d): the scan did not stop", total, files*size)
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
