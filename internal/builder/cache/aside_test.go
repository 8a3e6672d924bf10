package cache

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSetAside: on Windows the program is moved out of the build's way and
// back when the build wrote none; a new one stays, the old copies go.
// (make test-windows's end-to-end session builds over a running .exe.)
func TestSetAside(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Skip("Windows only: elsewhere a build may overwrite a running program")
	}
	dir := t.TempDir()
	out, cacheDir := filepath.Join(dir, "server.exe"), filepath.Join(dir, "cache")
	read := func() string { b, _ := os.ReadFile(out); return string(b) }
	os.WriteFile(out, []byte("v1"), 0o755)
	restore := setAside(out, cacheDir)
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the program was not set aside")
	}
	restore() // the build wrote nothing
	if read() != "v1" {
		t.Fatalf("after a build that wrote nothing: %q, want v1 back", read())
	}
	restore = setAside(out, cacheDir)
	os.WriteFile(out, []byte("v2"), 0o755)
	restore()
	if read() != "v2" {
		t.Fatalf("after a build: %q, want v2", read())
	}
	restore = setAside(out, cacheDir)
	if olds, _ := filepath.Glob(filepath.Join(cacheDir, "old-*")); len(olds) != 1 {
		t.Errorf("copies set aside: %v, want the last one alone", olds)
	}
	restore()
}
