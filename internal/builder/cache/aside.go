package cache

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// setAside makes way for a build that writes the program the server runs
// (out) where a running program's file cannot be overwritten: on Windows,
// where a running .exe can only be renamed, it moves out into the cache
// folder before the build (the server keeps running from there). restore,
// after the build, moves it back when the build wrote no new one (it
// failed, or writes another file). Copies set aside by earlier builds are
// removed once their processes have exited.
func setAside(out, cacheDir string) (restore func()) {
	if runtime.GOOS != "windows" || !strings.EqualFold(filepath.Ext(out), ".exe") {
		return func() {}
	}
	olds, _ := filepath.Glob(filepath.Join(cacheDir, "old-*-"+filepath.Base(out)))
	for _, o := range olds {
		os.Remove(o) // fails while its process runs: removed by a later build
	}
	if _, err := os.Stat(out); err != nil || os.MkdirAll(cacheDir, 0o755) != nil {
		return func() {}
	}
	old := filepath.Join(cacheDir, "old-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"-"+filepath.Base(out))
	if os.Rename(out, old) != nil {
		return func() {}
	}
	return func() {
		if _, err := os.Stat(out); err != nil {
			os.Rename(old, out)
		}
	}
}
