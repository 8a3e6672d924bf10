package watcher

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Defaults for the zero values of Config.Debounce and Config.MaxWait.
const (
	DefaultDebounce = 50 * time.Millisecond
	defaultMaxWait  = 3 * time.Second
)

// Config says what to watch and how to batch changes.
type Config struct {
	// Root is the absolute directory that everything is relative to
	// (the config file's folder). Globs match slash paths relative to it.
	Root string
	// Paths are the directories to watch, relative to Root (or absolute);
	// default ["."]. A path inside another one is dropped.
	Paths []string
	// Include lists doublestar globs of the files that count; empty
	// means every file. "./" at the start is dropped; a trailing "/"
	// means "everything under" (it becomes "/**").
	Include []string
	// Exclude lists doublestar globs of files and directories that never
	// count; they win over Include.
	Exclude []string
	// GitIgnore honours .gitignore files and .git/info/exclude.
	GitIgnore bool
	// Ignore lists paths (absolute, or relative to Root) that must never
	// trigger, with everything under them: build output, the run binary.
	Ignore []string
	// Debounce is the quiet time after the last relevant event; default
	// DefaultDebounce.
	Debounce time.Duration
	// MaxWait caps the wait from the first event of a batch; default
	// defaultMaxWait.
	MaxWait time.Duration
	// Poll, when > 0, replaces fsnotify by a walk of the tree at this interval.
	Poll time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// settings is a validated, normalized Config: Root clean, globs
// normalized, Ignore as clean slash paths relative to Root, defaults set.
type settings struct {
	Config
	roots      []string // watch roots: clean slash paths relative to Root
	excludeDir []string // exclude globs with "/**" appended, for directories
}

func newSettings(cfg Config) (*settings, error) {
	if cfg.Root == "" {
		return nil, errors.New("watcher: Root is empty; set it to the project's absolute directory")
	}
	if !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("watcher: root %q is not an absolute path", cfg.Root)
	}
	s := &settings{Config: cfg}
	s.Root = filepath.Clean(cfg.Root)
	s.Debounce = cmp.Or(cfg.Debounce, DefaultDebounce)
	s.MaxWait = cmp.Or(cfg.MaxWait, defaultMaxWait)
	s.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if err := isDir(s.Root); err != nil {
		return nil, fmt.Errorf("watcher: root: %w", err)
	}
	var err error
	if s.roots, err = s.watchRoots(cfg.Paths); err != nil {
		return nil, err
	}
	if s.Include, err = globs("include", cfg.Include); err != nil {
		return nil, err
	}
	if s.Exclude, err = globs("exclude", cfg.Exclude); err != nil {
		return nil, err
	}
	for _, g := range s.Exclude {
		if !strings.HasSuffix(g, "/**") && g != "**" {
			s.excludeDir = append(s.excludeDir, g+"/**")
		}
	}
	s.Ignore = nil
	for _, p := range cfg.Ignore {
		rel, err := s.rel(p)
		if err != nil {
			return nil, fmt.Errorf("watcher: ignore path %q: %w", p, err)
		}
		if rel == "." {
			return nil, fmt.Errorf("watcher: ignore path %q is the root itself; nothing would be watched", p)
		}
		s.Ignore = append(s.Ignore, rel)
	}
	switch {
	case s.Debounce < 0:
		return nil, fmt.Errorf("watcher: negative debounce %v", s.Debounce)
	case s.MaxWait < 0:
		return nil, fmt.Errorf("watcher: negative max wait %v", s.MaxWait)
	case s.Poll < 0:
		return nil, fmt.Errorf("watcher: negative poll interval %v", s.Poll)
	}
	return s, nil
}

// watchRoots checks and normalizes Config.Paths.
func (s *settings) watchRoots(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var roots []string
	for _, p := range paths {
		rel, err := s.rel(p)
		if err == nil {
			err = isDir(filepath.Join(s.Root, filepath.FromSlash(rel)))
		}
		if err != nil {
			return nil, fmt.Errorf("watcher: watch path %q: %w", p, err)
		}
		roots = append(roots, rel)
	}
	// Drop duplicates and paths inside another watch path.
	rootSlash := filepath.ToSlash(s.Root)
	var out []string
next:
	for i, r := range roots {
		for j, o := range roots {
			if i != j && contains(path.Join(rootSlash, o), path.Join(rootSlash, r)) && (r != o || j < i) {
				continue next
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// rel turns an absolute path or one relative to the root into a clean
// slash path relative to the root.
func (s *settings) rel(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if filepath.IsAbs(p) {
		var err error
		if p, err = filepath.Rel(s.Root, p); err != nil {
			return "", err
		}
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

// within reports whether the clean relative slash path p is dir or under it.
func within(dir, p string) bool {
	if dir == "." {
		return p != ".." && !strings.HasPrefix(p, "../")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// contains reports whether the absolute slash path p is dir or under it.
func contains(dir, p string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func isDir(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist", p)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", p)
	}
	return nil
}

func globs(kind string, in []string) ([]string, error) {
	var out []string
	for _, g := range in {
		n := strings.TrimPrefix(filepath.ToSlash(g), "./")
		if strings.HasSuffix(n, "/") {
			n = strings.TrimRight(n, "/") + "/**"
		}
		switch {
		case n == "":
			return nil, fmt.Errorf("watcher: %s glob %q is empty", kind, g)
		case strings.HasPrefix(n, "/"):
			return nil, fmt.Errorf("watcher: %s glob %q starts with /: globs match paths relative to the root, write %q", kind, g, strings.TrimLeft(n, "/"))
		case !doublestar.ValidatePattern(n):
			return nil, fmt.Errorf("watcher: %s glob %q is invalid: %s", kind, g, globProblem(n))
		}
		out = append(out, n)
	}
	return out, nil
}

// globProblem says why doublestar rejects a glob.
func globProblem(g string) string {
	depth := 0
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '\\':
			if i++; i >= len(g) {
				return "it ends with a lone backslash"
			}
		case '[':
			j := i + 1
			if j < len(g) && (g[j] == '^' || g[j] == '!') {
				j++
			}
			if j < len(g) && g[j] == ']' {
				return "it has an empty character class []"
			}
			for ; j < len(g) && g[j] != ']'; j++ {
				if g[j] == '\\' {
					j++
				}
			}
			if j >= len(g) {
				return "a [ character class is never closed with ]"
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return "a } has no matching {"
			}
			depth--
		}
	}
	if depth > 0 {
		return "a { alternative group is never closed with }"
	}
	return "doublestar cannot parse it"
}
