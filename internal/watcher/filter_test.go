package watcher

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestNewRejectsBadConfig(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error
	}{
		{"unclosed class", Config{Root: root, Include: []string{"src/[ab"}}, []string{`"src/[ab"`, "never closed"}},
		{"unclosed brace", Config{Root: root, Exclude: []string{"*.{go,mod"}}, []string{`"*.{go,mod"`, "exclude", "never closed"}},
		{"stray brace", Config{Root: root, Exclude: []string{"a}"}}, []string{`"a}"`, "no matching {"}},
		{"lone backslash", Config{Root: root, Include: []string{`a\`}}, []string{"backslash"}},
		{"absolute glob", Config{Root: root, Include: []string{"/src/**"}}, []string{`"/src/**"`, `"src/**"`}},
		{"missing path", Config{Root: root, Paths: []string{"nope"}}, []string{`"nope"`, "does not exist"}},
		{"file path", Config{Root: root, Paths: []string{"f.txt"}}, []string{`"f.txt"`, "not a directory"}},
		{"missing root", Config{Root: filepath.Join(root, "gone")}, []string{"gone", "does not exist"}},
		{"relative root", Config{Root: "rel"}, []string{`"rel"`, "absolute"}},
		{"empty root", Config{}, []string{"Root"}},
		{"ignore root", Config{Root: root, Ignore: []string{"."}}, []string{"root itself"}},
		{"negative debounce", Config{Root: root, Debounce: -1}, []string{"debounce"}},
	}
	mustWrite(t, filepath.Join(root, "f.txt"), "x")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "lone backslash" && runtime.GOOS == "windows" {
				t.Skip("Unix only: on Windows a backslash is a path separator")
			}
			_, err := New(tt.cfg)
			if err == nil {
				t.Fatalf("New succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestSettingsNormalize(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "cmd", "x.go"), "")
	s, err := newSettings(Config{
		Root:    root,
		Paths:   []string{"cmd", ".", "./"},
		Include: []string{"./src/", "**/*.go"},
		Ignore:  []string{filepath.Join(root, "bin", "app"), "out/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.roots, ","); got != "." {
		t.Errorf("roots = %q, want %q", got, ".")
	}
	if got := strings.Join(s.Include, ","); got != "src/**,**/*.go" {
		t.Errorf("include = %q", got)
	}
	if got := strings.Join(s.Ignore, ","); got != "bin/app,out" {
		t.Errorf("ignore = %q", got)
	}
	if s.Debounce != DefaultDebounce || s.MaxWait != defaultMaxWait {
		t.Errorf("defaults not applied: %v %v", s.Debounce, s.MaxWait)
	}
}

func TestFilter(t *testing.T) {
	root := t.TempDir()
	s, err := newSettings(Config{
		Root:    root,
		Include: []string{"**/*.go", "go.mod"},
		Exclude: []string{"**/*_test.go", "vendor", "gen/*"},
		Ignore:  []string{"bin", "cmd/app/app.go"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFilter(s)
	files := map[string]bool{
		"main.go":             true,
		"pkg/a/b.go":          true,
		"go.mod":              true,
		"sub/go.mod":          false,
		"README.md":           false,
		"main_test.go":        false,
		"bin/x.go":            false,
		"cmd/app/app.go":      false,
		"cmd/app/other.go":    true,
		".main.go.swp":        false,
		"main.go~":            false,
		".#main.go":           false,
		"4913":                false,
		"main.go___jb_tmp___": false,
		"main.go___jb_old___": false,
		".DS_Store":           false,
	}
	for p, want := range files {
		if got := f.matchFile(p); got != want {
			t.Errorf("matchFile(%q) = %v, want %v", p, got, want)
		}
	}
	all := newFilter(&settings{Config: Config{Root: root}})
	for _, p := range []string{".main.go.swp", ".x.swx", "main.go~", ".#main.go", "4913", "a/4913",
		"main.go___jb_tmp___", "main.go___jb_old___", ".DS_Store", "a/.DS_Store"} {
		if all.matchFile(p) {
			t.Errorf("matchFile(%q) with no globs = true, want false", p)
		}
	}
	for _, p := range []string{"main.go", "4913.go", ".gitignore", "a/b/c"} {
		if !all.matchFile(p) {
			t.Errorf("matchFile(%q) with no globs = false, want true", p)
		}
	}
	dirs := map[string]bool{
		"pkg":              false,
		".git":             true,
		"a/.hg":            true,
		".svn":             true,
		".jj":              true,
		"web/node_modules": true,
		".mcpflow":         true,
		"vendor":           true,
		"gen/sub":          true, // "gen/*" + "/**" covers it
		"gen":              false,
		"bin":              true,
		"binary":           false,
	}
	for p, want := range dirs {
		if got := f.skipDir(p); got != want {
			t.Errorf("skipDir(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDebouncer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := debouncer{quiet: 100 * time.Millisecond, maxWait: time.Second}
	if got := d.touch(t0); !got.Equal(t0.Add(100 * time.Millisecond)) {
		t.Fatalf("first deadline %v", got.Sub(t0))
	}
	// Each event pushes the deadline out...
	if got := d.touch(t0.Add(50 * time.Millisecond)); !got.Equal(t0.Add(150 * time.Millisecond)) {
		t.Fatalf("second deadline %v", got.Sub(t0))
	}
	// ...but never past maxWait from the first event.
	if got := d.touch(t0.Add(950 * time.Millisecond)); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("capped deadline %v", got.Sub(t0))
	}
	d.armed = false // as batcher.close does
	t1 := t0.Add(5 * time.Second)
	if got := d.touch(t1); !got.Equal(t1.Add(100 * time.Millisecond)) {
		t.Fatalf("deadline after reset %v", got.Sub(t1))
	}
}

func TestBatcherMergesWhileReceiverIsBusy(t *testing.T) {
	b := newBatcher(time.Millisecond, time.Second)
	defer b.timer.Stop()
	out := make(chan Batch)
	if b.out(out) != nil {
		t.Fatal("out is enabled with nothing to send")
	}
	b.pending.add("b.go")
	b.close()
	b.pending.add("a.go")
	b.pending.add("b.go")
	b.close()
	if b.out(out) == nil {
		t.Fatal("out is disabled with a batch waiting")
	}
	if got := strings.Join(b.batch.Paths, ","); got != "a.go,b.go" {
		t.Fatalf("batch = %q", got)
	}
	b.sent()
	if b.out(out) != nil || len(b.pending) != 0 {
		t.Fatal("state not cleared after send")
	}
}
