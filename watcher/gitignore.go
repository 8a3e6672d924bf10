package watcher

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ignorePattern is one pattern line of a gitignore file, compiled.
type ignorePattern struct {
	segs    []string // slash-separated segments; "**" matches any number of them
	negate  bool     // "!pattern": re-include what an earlier pattern excluded
	dirOnly bool     // "pattern/": matches directories only
}

// ignoreList is the patterns of one ignore file, in file order.
type ignoreList []ignorePattern

// parseIgnore compiles the patterns of a gitignore file, following
// gitignore(5): blank lines and "#" comments are skipped, trailing spaces
// are dropped unless escaped, "!" negates, a trailing "/" restricts to
// directories, a leading or middle "/" anchors the pattern to the file's
// directory, and "**" spans directories.
func parseIgnore(data []byte) ignoreList {
	var list ignoreList
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if p, ok := parseIgnoreLine(sc.Text()); ok {
			list = append(list, p)
		}
	}
	return list
}

func parseIgnoreLine(line string) (ignorePattern, bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are ignored unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return ignorePattern{}, false
	}
	var p ignorePattern
	if line[0] == '!' {
		p.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignorePattern{}, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return ignorePattern{}, false
	}
	if !anchored {
		p.segs = append(p.segs, "**")
	}
	for _, s := range strings.Split(line, "/") {
		if s == "" {
			continue // "a//b" is "a/b"
		}
		if s == "**" && len(p.segs) > 0 && p.segs[len(p.segs)-1] == "**" {
			continue
		}
		p.segs = append(p.segs, bangClass(s))
	}
	return p, true
}

// bangClass rewrites the gitignore class negation "[!...]" into the
// "[^...]" that path.Match understands.
func bangClass(s string) string {
	if !strings.Contains(s, "[!") {
		return s
	}
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '[' && i+1 < len(b) && b[i+1] == '!':
			b[i+1] = '^'
		}
	}
	return string(b)
}

// match reports whether p matches rel, a slash path relative to the
// directory of the ignore file.
func (p ignorePattern) match(rel string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	return matchSegs(p.segs, strings.Split(rel, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				// A trailing "/**" matches everything inside, not the
				// directory itself.
				return len(name) > 0
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// match applies the list to rel: the last matching pattern decides.
// matched is false when no pattern matches.
func (l ignoreList) match(rel string, isDir bool) (ignored, matched bool) {
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].match(rel, isDir) {
			return !l[i].negate, true
		}
	}
	return false, false
}

// ignoreFile is a loaded .gitignore; size and mtime let a reload skip an
// unchanged file.
type ignoreFile struct {
	list  ignoreList
	size  int64
	mtime int64
}

// gitIgnores holds the ignore rules of one tree: .git/info/exclude and
// every .gitignore loaded so far, keyed by the absolute slash path of the
// directory that holds it. Precedence, lowest first: info/exclude, then
// .gitignore files from the top down; the last matching pattern wins.
type gitIgnores struct {
	repo    string     // absolute slash path of the repository's top, "" if none
	exclude ignoreList // .git/info/exclude, relative to repo
	files   map[string]*ignoreFile
}

// newGitIgnores finds the repository that holds root (an absolute OS
// path), reads its info/exclude, and loads the .gitignore files of the
// directories between the repository's top and each watch root (the
// roots themselves and everything below are loaded by the walk).
func newGitIgnores(root string, roots []string) *gitIgnores {
	g := &gitIgnores{files: make(map[string]*ignoreFile)}
	top, gitPath := findRepo(root)
	if top == "" {
		return g
	}
	g.repo = filepath.ToSlash(top)
	if data, err := os.ReadFile(excludeFile(top, gitPath)); err == nil {
		g.exclude = parseIgnore(data)
	}
	for _, r := range roots {
		dir := slashJoin(filepath.ToSlash(root), r)
		for _, a := range ancestors(dir, g.repo) {
			if a != dir {
				g.load(a)
			}
		}
	}
	return g
}

// findRepo walks up from dir to the first directory holding ".git".
func findRepo(dir string) (top, gitPath string) {
	for {
		p := filepath.Join(dir, ".git")
		if _, err := os.Lstat(p); err == nil {
			return dir, p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ""
		}
		dir = parent
	}
}

// excludeFile locates info/exclude for the repository at top. ".git" is
// either the git directory or, for worktrees and submodules, a file
// "gitdir: <path>"; a worktree keeps info/exclude in its common dir.
func excludeFile(top, gitPath string) string {
	fi, err := os.Stat(gitPath)
	if err != nil {
		return ""
	}
	gitDir := gitPath
	if !fi.IsDir() {
		data, err := os.ReadFile(gitPath)
		if err != nil {
			return ""
		}
		d, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
		if !ok {
			return ""
		}
		gitDir = strings.TrimSpace(d)
		if !filepath.IsAbs(gitDir) {
			gitDir = filepath.Join(top, gitDir)
		}
		if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
			common := strings.TrimSpace(string(c))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitDir, common)
			}
			gitDir = common
		}
	}
	return filepath.Join(gitDir, "info", "exclude")
}

// load (re)reads dir/.gitignore, dir an absolute slash path. It reports
// whether the rules changed.
func (g *gitIgnores) load(dir string) bool {
	name := filepath.FromSlash(slashJoin(dir, ".gitignore"))
	old := g.files[dir]
	fi, err := os.Stat(name)
	if err != nil || !fi.Mode().IsRegular() {
		delete(g.files, dir)
		return old != nil
	}
	if old != nil && old.size == fi.Size() && old.mtime == fi.ModTime().UnixNano() {
		return false
	}
	data, err := os.ReadFile(name)
	if err != nil {
		delete(g.files, dir)
		return old != nil
	}
	g.files[dir] = &ignoreFile{list: parseIgnore(data), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	return true
}

// drop forgets the rules of dir, an absolute slash path.
func (g *gitIgnores) drop(dir string) { delete(g.files, dir) }

// ignored reports whether p (an absolute slash path) is ignored by the
// rules of its own ancestors. Callers check p's parent directories
// themselves: git never re-includes a file inside an ignored directory.
func (g *gitIgnores) ignored(p string, isDir bool) bool {
	ignored := false
	if g.repo != "" && len(g.exclude) > 0 {
		if rel, ok := relUnder(g.repo, p); ok {
			if ign, ok := g.exclude.match(rel, isDir); ok {
				ignored = ign
			}
		}
	}
	dirs := ancestors(path.Dir(p), "")
	for i := len(dirs) - 1; i >= 0; i-- {
		f := g.files[dirs[i]]
		if f == nil {
			continue
		}
		rel, _ := relUnder(dirs[i], p)
		if ign, ok := f.list.match(rel, isDir); ok {
			ignored = ign
		}
	}
	return ignored
}

// ancestors lists dir and its parents, deepest first, stopping at top
// (included) or at the filesystem root. All paths are absolute slash paths.
func ancestors(dir, top string) []string {
	var out []string
	for {
		out = append(out, dir)
		if dir == top {
			return out
		}
		parent := path.Dir(dir)
		if parent == dir {
			if top != "" {
				return nil // top is not an ancestor
			}
			return out
		}
		dir = parent
	}
}

// relUnder returns p relative to dir when p is strictly inside dir.
func relUnder(dir, p string) (string, bool) {
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), p != "/"
	}
	rest, ok := strings.CutPrefix(p, dir+"/")
	return rest, ok && rest != ""
}

// slashJoin joins an absolute slash path and a relative one.
func slashJoin(dir, rel string) string { return path.Join(dir, rel) }
