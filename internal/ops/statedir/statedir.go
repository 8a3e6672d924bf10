// Package statedir is the one way mcpflow makes and opens what it keeps
// in a project's .mcpflow folder (the last start, the log file, the build
// cache and its locks). The folder is mcpflow's own: it is created 0700,
// and refused (with what to do) when it is a link, not a folder, another
// user's, or writable by group or others, since what is in it decides what
// mcpflow answers and runs. Its files are opened only as regular files,
// never through a link: a FIFO or a device there never blocks the open,
// and the check is of the open file, with no gap before the use.
package statedir

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Name is the project folder's name for mcpflow's own folder.
const Name = ".mcpflow"

// Of is a project's .mcpflow folder.
func Of(project string) string { return filepath.Join(project, Name) }

// Check refuses dir, a .mcpflow folder, when it exists and is not mcpflow's own.
func Check(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return checkDir(dir, fi)
}

// checkDir refuses the .mcpflow folder dir (fi: its Lstat) unless it is a
// folder, not a link, and mcpflow's own (checkOwner).
func checkDir(dir string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		return fmt.Errorf("%s is %s, not a folder: mcpflow keeps its own files there; remove it (mcpflow makes the folder)", dir, kind(fi.Mode()))
	}
	return checkOwner(dir, fi)
}

// MkdirFor makes the folder that holds file: from a .mcpflow folder on
// 0700 and checked (Check), elsewhere as os.MkdirAll does.
func MkdirFor(file string) error {
	dir := filepath.Dir(file)
	root, rest, ok := split(dir)
	if !ok {
		return os.MkdirAll(dir, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return err
	}
	dir = root // then each folder below it
	for i, part := range append([]string{""}, rest...) {
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err := os.Lstat(dir)
		switch {
		case err != nil:
			return err
		case i == 0:
			if err := checkDir(dir, fi); err != nil {
				return err
			}
		case !fi.IsDir():
			return fmt.Errorf("%s is not a folder (%s): mcpflow keeps its own files there; remove it", dir, kind(fi.Mode()))
		}
	}
	return nil
}

// split finds the last .mcpflow folder on dir's path: it, and the
// folders below it on the way to dir.
func split(dir string) (root string, rest []string, ok bool) {
	parts := strings.Split(filepath.Clean(dir), string(filepath.Separator))
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == Name {
			root = strings.Join(parts[:i+1], string(filepath.Separator))
			return cmp.Or(root, string(filepath.Separator)), parts[i+1:], true
		}
	}
	return "", nil, false
}

// OpenFile is os.OpenFile of regular files only, never through a link.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := openNoFollow(name, flag, perm)
	if err != nil {
		if fi, lerr := os.Lstat(name); lerr == nil && !fi.Mode().IsRegular() && !errors.Is(err, fs.ErrExist) {
			return nil, notRegular(name, fi.Mode())
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(name, fi.Mode())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the regular file name (OpenFile).
func ReadFile(name string) ([]byte, error) {
	f, err := OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteFile writes data to name, 0600, whole or not at all: to a new file
// beside it, renamed over name. It makes the folder (MkdirFor).
func WriteFile(name string, data []byte) error {
	if err := MkdirFor(name); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+"-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err = cmp.Or(err, tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Ignore makes folder dir with a .gitignore that keeps it out of git (the
// first line says why), unless it has one.
func Ignore(dir, why string) error {
	ignore := filepath.Join(dir, ".gitignore")
	if err := MkdirFor(ignore); err != nil {
		return err
	}
	f, err := OpenFile(ignore, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString("# " + why + "\n*\n")
	return cmp.Or(err, f.Close())
}

// ErrNotRegular is the error of OpenFile for anything but a regular file.
var ErrNotRegular = errors.New("not a regular file")

func notRegular(name string, m fs.FileMode) error {
	return fmt.Errorf("%s is %w (%s): mcpflow leaves it alone; remove it", name, ErrNotRegular, kind(m))
}

func kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeDevice != 0, t&fs.ModeCharDevice != 0:
		return "a device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t.IsDir():
		return "a folder"
	case t == 0:
		return "a file"
	}
	return "mode " + m.String()
}
