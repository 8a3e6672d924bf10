package traffic

import (
	"bytes"
	"fmt"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestFileSharedRotation: four Files on one path (as four mcpflow
// instances sharing a log file) append records at once; the file rotates
// several times. Every line of FILE and FILE.1 is a whole record, each
// file stays within the maximum (plus one record per other writer, whose
// write raced the rotation), and both are 0600.
func TestFileSharedRotation(t *testing.T) {
	testkit.UnixOnly(t, "Windows cannot rename or remove a file another handle holds open (file_windows.go: rotation of a shared file fails there)")
	path := filepath.Join(t.TempDir(), "shared.log")
	const writers, records, max = 4, 2000, 16 << 10
	const recLen = len("writer 0 record 0000  end\n") + 40
	var wg sync.WaitGroup
	for w := range writers {
		f, err := OpenFile(path, max)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.Close()
			for i := range records {
				rec := fmt.Appendf(nil, "writer %d record %04d %s end\n", w, i, strings.Repeat("x", 40))
				if _, err := f.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range []string{path, path + ".1"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > int64(max+(writers-1)*recLen) {
			t.Errorf("%s is %d bytes, over %d", p, st.Size(), max)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
		b, _ := os.ReadFile(p)
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !strings.HasPrefix(l, "writer ") || !strings.HasSuffix(l, " end") || len(l) != recLen-1 {
				t.Fatalf("%s: %q is no whole record", p, l)
			}
		}
	}
}

// TestFileBigWriteAndRemoved: a write larger than the maximum gets a file
// of its own; a file removed under a File is created again at the next
// write.
func TestFileBigWriteAndRemoved(t *testing.T) {
	testkit.UnixOnly(t, "Windows cannot rename or remove a file another handle holds open (file_windows.go: rotation of a shared file fails there)")
	path := filepath.Join(t.TempDir(), "f.log")
	f, err := OpenFile(path, 1024)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	small := []byte("small\n")
	big := bytes.Repeat([]byte("b"), 4096)
	for _, p := range [][]byte{small, big, small} {
		if _, err := f.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(path + ".1"); !bytes.Equal(b, big) {
		t.Errorf("FILE.1 has %d bytes, want the big write alone", len(b))
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, small) {
		t.Errorf("FILE has %q", b)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "after\n" {
		t.Errorf("after removal: %q %v", b, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(small); err == nil {
		t.Error("a write after Close succeeded")
	}
}
