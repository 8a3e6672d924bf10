package watcher

import (
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// filter decides which directories are entered and which files count.
// Paths are clean slash paths relative to the root.
type filter struct {
	s         *settings
	rootSlash string      // the root as an absolute slash path
	git       *gitIgnores // nil unless Config.GitIgnore
}

func newFilter(s *settings) *filter {
	f := &filter{s: s, rootSlash: filepath.ToSlash(s.Root)}
	if s.GitIgnore {
		f.git = newGitIgnores(s.Root, s.roots)
	}
	return f
}

// BuiltinDir reports the directory names that are never entered.
func BuiltinDir(name string) bool {
	return slices.Contains([]string{".git", ".hg", ".svn", ".jj", "node_modules", ".mcpflow"}, name)
}

// builtinFile reports file names editors and OSes write as scratch:
// vim swap files and its "4913" write probe, backups ending in "~",
// Emacs lock files, JetBrains safe-write files, and .DS_Store.
func builtinFile(name string) bool {
	return name == "4913" || name == ".DS_Store" ||
		strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".swx") ||
		strings.HasSuffix(name, "~") || strings.HasPrefix(name, ".#") ||
		strings.HasSuffix(name, "___jb_tmp___") || strings.HasSuffix(name, "___jb_old___")
}

// ignored reports whether rel is, or lies under, a Config.Ignore path.
func (f *filter) ignored(rel string) bool {
	return slices.ContainsFunc(f.s.Ignore, func(ig string) bool { return within(ig, rel) })
}

func matchAny(globs []string, rel string) bool {
	return slices.ContainsFunc(globs, func(g string) bool { return doublestar.MatchUnvalidated(g, rel) })
}

// skipDir reports whether the directory rel is pruned: not entered, not
// watched, nothing under it counts. Its parent is assumed kept.
func (f *filter) skipDir(rel string) bool {
	return BuiltinDir(path.Base(rel)) || f.ignored(rel) ||
		matchAny(f.s.Exclude, rel) || matchAny(f.s.excludeDir, rel) ||
		f.git != nil && f.git.ignored(f.abs(rel), true)
}

// matchFile reports whether the file rel, in a kept directory, counts.
func (f *filter) matchFile(rel string) bool {
	if builtinFile(path.Base(rel)) || f.ignored(rel) || matchAny(f.s.Exclude, rel) {
		return false
	}
	if len(f.s.Include) > 0 && !matchAny(f.s.Include, rel) {
		return false
	}
	return f.git == nil || !f.git.ignored(f.abs(rel), false)
}

func (f *filter) isIgnoreFile(rel string) bool {
	return f.git != nil && path.Base(rel) == ".gitignore"
}

// abs returns rel as an absolute slash path.
func (f *filter) abs(rel string) string { return path.Join(f.rootSlash, rel) }

// osPath returns rel as an absolute OS path.
func (f *filter) osPath(rel string) string {
	return filepath.Join(f.s.Root, filepath.FromSlash(rel))
}

// relOf turns an absolute OS path into a path relative to the root.
func (f *filter) relOf(name string) (string, bool) {
	r, err := filepath.Rel(f.s.Root, name)
	return filepath.ToSlash(r), err == nil
}
