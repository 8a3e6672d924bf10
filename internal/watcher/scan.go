package watcher

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
)

// maxHashSize is the largest file whose content is hashed; bigger files
// are compared by size and modification time only.
const maxHashSize = 64 << 20

// fileState is what the tree remembers about a matching file.
type fileState struct {
	size  int64
	mtime int64  // UnixNano
	sum   uint64 // content hash, unless big
	big   bool   // over maxHashSize (or unreadable): compared by size and mtime
}

// dirState is a directory the tree has entered.
type dirState struct {
	files   map[string]fileState // matching files, by name
	subdirs map[string]struct{}  // entered subdirectories, by name
}

// pathSet is a set of slash paths; adding to a nil set does nothing.
type pathSet map[string]struct{}

func (s pathSet) add(p string) {
	if s != nil {
		s[p] = struct{}{}
	}
}

func (s pathSet) sorted() []string { return slices.Sorted(maps.Keys(s)) }

// dirWatcher is the part of fsnotify.Watcher the tree uses.
type dirWatcher interface {
	Add(name string) error
	Remove(name string) error
}

// errStopped is what sync returns when the tree's done channel closed
// while it ran; the tree may then lack what sync had not reached yet.
var errStopped = errors.New("watcher: stopped")

// tree is the watcher's view of the files: the directories entered, the
// matching files and their fingerprints. Only the Run goroutine uses it.
type tree struct {
	f        *filter
	watch    dirWatcher      // nil: no watches (poll mode, Scan)
	hash     bool            // false: fingerprint by size and mtime only (Scan)
	done     <-chan struct{} // closed: stop scanning and hashing at once (Run's ctx); nil: never
	seed     maphash.Seed
	buf      []byte
	dirs     map[string]*dirState
	nFiles   int
	nWatches int
}

func newTree(f *filter, watch dirWatcher, hash bool) *tree {
	return &tree{
		f:     f,
		watch: watch,
		hash:  hash,
		seed:  maphash.MakeSeed(),
		buf:   make([]byte, 64<<10),
		dirs:  make(map[string]*dirState),
	}
}

func (t *tree) stopped() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *tree) stats() Stats {
	return Stats{Dirs: len(t.dirs), Files: t.nFiles, Watches: t.nWatches}
}

// sync brings directory rel, which the caller keeps, and everything below
// it in line with the disk: new directories are entered (watched before
// they are listed, so nothing created meanwhile is missed), vanished ones
// forgotten, files fingerprinted. Paths whose content changed go to
// changed (nil: record silently, as the initial scan does). It returns a
// failure to set a watch, or errStopped at once when done closes.
func (t *tree) sync(rel string, changed pathSet) error {
	if t.stopped() {
		return errStopped
	}
	abs := t.f.osPath(rel)
	ds := t.dirs[rel]
	if ds == nil {
		if t.watch != nil {
			if err := t.watch.Add(abs); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return fmt.Errorf("watch %s: %w", abs, err)
			}
			t.nWatches++
		}
		ds = &dirState{files: make(map[string]fileState), subdirs: make(map[string]struct{})}
		t.dirs[rel] = ds
		if parent := t.dirs[path.Dir(rel)]; parent != nil && rel != "." && path.Base(rel) != ".." {
			parent.subdirs[path.Base(rel)] = struct{}{}
		}
	}
	if t.f.git != nil {
		t.f.git.load(t.f.abs(rel))
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		if fi, lerr := os.Lstat(abs); lerr != nil || !fi.IsDir() {
			t.forget(rel, changed)
			return nil
		}
		t.f.s.Logger.Warn("cannot list directory; keeping what is known", "dir", abs, "err", err)
		return nil
	}
	seenFiles := make(map[string]bool, len(ds.files))
	seenDirs := make(map[string]bool, len(ds.subdirs))
	for _, e := range entries {
		if t.stopped() {
			return errStopped
		}
		name := e.Name()
		child := path.Join(rel, name)
		switch {
		case e.IsDir():
			if t.f.skipDir(child) {
				continue
			}
			seenDirs[name] = true
			if err := t.sync(child, changed); err != nil {
				return err
			}
		case (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0) && t.f.matchFile(child):
			seenFiles[name] = true
			if t.check(child, false) {
				changed.add(child)
			}
		}
	}
	for name := range ds.files {
		if !seenFiles[name] {
			t.drop(path.Join(rel, name), changed)
		}
	}
	for name := range ds.subdirs {
		if child := path.Join(rel, name); !seenDirs[name] && exists(t.f.osPath(child)) {
			t.forget(child, nil) // now excluded: drop silently
		} else if !seenDirs[name] {
			t.forget(child, changed)
		}
	}
	return nil
}

// forget drops directory rel and everything below it: its watch, its
// ignore rules, its files (which go to changed as deleted).
func (t *tree) forget(rel string, changed pathSet) {
	ds := t.dirs[rel]
	if ds == nil {
		return
	}
	for name := range ds.subdirs {
		t.forget(path.Join(rel, name), changed)
	}
	for name := range ds.files {
		changed.add(path.Join(rel, name))
	}
	t.nFiles -= len(ds.files)
	if t.watch != nil {
		// The kernel may have dropped the watch already; that is fine.
		_ = t.watch.Remove(t.f.osPath(rel))
		t.nWatches--
	}
	if t.f.git != nil {
		delete(t.f.git.files, t.f.abs(rel))
	}
	delete(t.dirs, rel)
	if parent := t.dirs[path.Dir(rel)]; parent != nil {
		delete(parent.subdirs, path.Base(rel))
	}
}

// drop forgets the file rel after it left the listing. A file that still
// exists was excluded (a .gitignore changed) and is dropped silently; one
// that is gone counts as changed.
func (t *tree) drop(rel string, changed pathSet) {
	ds := t.dirs[path.Dir(rel)]
	if ds == nil {
		return
	}
	if _, ok := ds.files[path.Base(rel)]; !ok {
		return
	}
	delete(ds.files, path.Base(rel))
	t.nFiles--
	if !exists(t.f.osPath(rel)) {
		changed.add(rel)
	}
}

// check fingerprints the file rel (whose directory the tree holds) and
// reports whether its content was created, modified or deleted. Without
// force, an unchanged size and mtime short-cut the hash. When done closes
// during the hash, the file is left as it was and check reports false.
func (t *tree) check(rel string, force bool) bool {
	ds := t.dirs[path.Dir(rel)]
	if ds == nil {
		return false
	}
	name := path.Base(rel)
	old, known := ds.files[name]
	gone := func() bool {
		if known {
			delete(ds.files, name)
			t.nFiles--
		}
		return known
	}
	abs := t.f.osPath(rel)
	fi, err := os.Stat(abs) // follows symlinks
	if err != nil || !fi.Mode().IsRegular() {
		return gone()
	}
	st := fileState{size: fi.Size(), mtime: fi.ModTime().UnixNano(), big: !t.hash || fi.Size() > maxHashSize}
	if known && !force && st.size == old.size && st.mtime == old.mtime {
		return false
	}
	if !st.big {
		sum, err := t.sum(abs)
		switch {
		case err == errStopped:
			return false
		case errors.Is(err, fs.ErrNotExist):
			return gone()
		case err != nil:
			t.f.s.Logger.Warn("cannot read file; comparing size and time only", "file", abs, "err", err)
			st.big = true
		default:
			st.sum = sum
		}
	}
	ds.files[name] = st
	if !known {
		t.nFiles++
		return true
	}
	if st.big || old.big {
		return st.big != old.big || st.size != old.size || st.mtime != old.mtime
	}
	return st.sum != old.sum
}

// sum hashes a file's content, streaming; it returns errStopped as soon
// as the done channel closes.
func (t *tree) sum(abs string) (uint64, error) {
	f, err := os.Open(abs)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h maphash.Hash
	h.SetSeed(t.seed)
	for {
		if t.stopped() {
			return 0, errStopped
		}
		n, err := f.Read(t.buf)
		_, _ = h.Write(t.buf[:n])
		if err == io.EOF {
			return h.Sum64(), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func (t *tree) files() []string {
	all := make(pathSet, t.nFiles)
	for dir, ds := range t.dirs {
		for name := range ds.files {
			all.add(path.Join(dir, name))
		}
	}
	return all.sorted()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// Scan returns the files cfg matches, as sorted slash paths relative to
// cfg.Root, without watching anything (for `mcpflow check`). Unreadable
// directories are skipped and logged.
func Scan(cfg Config) (files []string, err error) {
	s, err := newSettings(cfg)
	if err != nil {
		return nil, err
	}
	t := newTree(newFilter(s), nil, false)
	for _, r := range s.roots {
		if err := t.sync(r, nil); err != nil {
			return nil, err
		}
	}
	return t.files(), nil
}
