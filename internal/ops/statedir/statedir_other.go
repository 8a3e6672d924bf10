//go:build !unix

package statedir

import (
	"fmt"
	"io/fs"
	"os"
)

func openNoFollow(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, notRegular(name, fi.Mode())
	}
	return os.OpenFile(name, flag, perm)
}

// checkDir refuses the .mcpflow folder dir (fi: its Lstat) unless it is a
// folder, not a link.
func checkDir(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is %s, not a folder: mcpflow keeps its own files there; remove it (mcpflow makes the folder)", dir, kind(fi.Mode()))
	}
	return nil
}
