//go:build unix

package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A FIFO, a device or a symbolic link in the folder is refused at once
// (never waited on, never followed); a regular file is opened.
func TestOpenFileOnlyRegular(t *testing.T) {
	dir := Of(t.TempDir())
	if err := MkdirFor(filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		flag int
	}{
		{fifo, os.O_RDONLY}, {fifo, os.O_WRONLY | os.O_APPEND | os.O_CREATE},
		{link, os.O_RDONLY}, {link, os.O_WRONLY | os.O_CREATE | os.O_TRUNC},
		{"/dev/null", os.O_WRONLY},
	} {
		if f, err := OpenFile(tc.name, tc.flag, 0o600); err == nil {
			f.Close()
			t.Errorf("OpenFile(%s, %#x) opened it", tc.name, tc.flag)
		} else if !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("OpenFile(%s): %v, want it named as not a regular file", tc.name, err)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the file a link points at was changed: %q", b)
	}
	if err := WriteFile(filepath.Join(dir, "f"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "x" {
		t.Fatalf("ReadFile of a regular file: %q, %v", b, err)
	}
}

// The folder is made 0700, and one writable by others or not a folder is
// refused with the fix.
func TestFolder(t *testing.T) {
	project := t.TempDir()
	dir := Of(project)
	if err := MkdirFor(filepath.Join(dir, "cache", "lock")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "cache")} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v, want a folder 0700", d, fi.Mode(), err)
		}
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{Check(dir), MkdirFor(filepath.Join(dir, "f"))} {
		if err == nil || !strings.Contains(err.Error(), "chmod 700 "+dir) {
			t.Errorf("a folder 0777: %v, want it refused with the fix", err)
		}
	}
	other := Of(t.TempDir())
	if err := os.Symlink(dir, other); err != nil {
		t.Fatal(err)
	}
	if err := Check(other); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a linked folder: %v, want it refused", err)
	}
	if err := Check(Of(t.TempDir())); err != nil {
		t.Errorf("a missing folder: %v", err)
	}
}
