package watcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestScan(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		"main.go", "go.mod", "README.md", "pkg/a.go", "pkg/a_test.go",
		"node_modules/x/y.go", ".git/hooks/h.go", "build/out.go", "vendor/v.go",
		".mcpflow/state.go", "pkg/.a.go.swp", "app.log",
	} {
		mustWrite(t, filepath.Join(root, p), p)
	}
	mustWrite(t, filepath.Join(root, ".gitignore"), "build/\n*.log\n")
	got, err := Scan(Config{
		Root:      root,
		Exclude:   []string{"vendor/**", "**/*_test.go"},
		GitIgnore: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".gitignore", "README.md", "go.mod", "main.go", "pkg/a.go"}
	if !slices.Equal(got, want) {
		t.Errorf("Scan = %q, want %q", got, want)
	}
}

// TestRescanReportsByHash covers the rescan after an fsnotify overflow:
// a resync of the tree reports exactly the files whose content changed.
func TestRescanReportsByHash(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"same.go", "touched.go", "edited.go", "deleted.go", "gone/x.go", "gone/deep/y.go"} {
		mustWrite(t, filepath.Join(root, p), "package "+strings.TrimSuffix(filepath.Base(p), ".go"))
	}
	s, err := newSettings(Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(newFilter(s), nil, true)
	if err := tr.sync(".", nil); err != nil {
		t.Fatal(err)
	}
	if st := tr.stats(); st.Files != 6 || st.Dirs != 3 {
		t.Fatalf("stats after scan = %+v", st)
	}

	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(root, "touched.go"), later, later); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "edited.go"), "package edited // changed")
	if err := os.Remove(filepath.Join(root, "deleted.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, "new/dir/n.go"), "package n")

	changed := make(pathSet)
	if err := tr.sync(".", changed); err != nil {
		t.Fatal(err)
	}
	want := []string{"deleted.go", "edited.go", "gone/deep/y.go", "gone/x.go", "new/dir/n.go"}
	if got := changed.sorted(); !slices.Equal(got, want) {
		t.Errorf("changed = %q, want %q", got, want)
	}
	if st := tr.stats(); st.Files != 4 || st.Dirs != 3 {
		t.Errorf("stats after rescan = %+v, want 4 files in 3 dirs", st)
	}
}
