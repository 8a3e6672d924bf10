package watcher

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ignorePattern is one pattern line of a gitignore file, compiled.
type ignorePattern struct {
	segs    []string // slash-separated segments; "**" matches any number of them
	negate  bool     // "!pattern": re-include what an earlier pattern excluded
	dirOnly bool     // "pattern/": matches directories only
}

// ignoreList is the patterns of one ignore file, in file order.
type ignoreList []ignorePattern

// parseIgnore compiles the patterns of a gitignore file as gitignore(5)
// reads them.
func parseIgnore(data []byte) ignoreList {
	var list ignoreList
	text := strings.TrimPrefix(string(data), "\xef\xbb\xbf") // a UTF-8 byte order mark
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if p, ok := parseIgnoreLine(line); ok {
			list = append(list, p)
		}
	}
	return list
}

func parseIgnoreLine(line string) (p ignorePattern, ok bool) {
	if strings.HasPrefix(line, "#") {
		return p, false
	}
	line = trimTrailingSpaces(strings.TrimSuffix(line, "\r"))
	line, p.negate = strings.CutPrefix(line, "!")
	p.dirOnly = strings.HasSuffix(line, "/")
	if line = strings.TrimRight(line, "/"); line == "" {
		return p, false
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
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
		g, ok := goGlob(s)
		if !ok {
			return p, false // matches nothing
		}
		p.segs = append(p.segs, g)
	}
	return p, true
}

// trimTrailingSpaces drops the spaces at the end of line that no
// backslash escapes; a backslash escapes the character after it, so in
// `a\\ ` the space is not escaped.
func trimTrailingSpaces(line string) string {
	keep := 0 // the length up to the last character that stays
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
		case '\\':
			i++
			keep = min(i+1, len(line))
		default:
			keep = i + 1
		}
	}
	return line[:keep]
}

// goGlob translates one segment of a gitignore pattern, in git's
// wildmatch syntax, into the syntax of path.Match. The two agree outside
// bracket expressions; inside them git also takes "!" for negation, a "]"
// right after the opening "[" (or "[!") as a member, a "-" at either end
// as a member, and POSIX classes such as "[:digit:]". ok is false for a
// bracket expression git cannot parse: the pattern then matches nothing.
func goGlob(s string) (glob string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			b.WriteString(s[i : i+2])
			i++
		case s[i] == '[':
			n := goClass(&b, s[i:])
			if n == 0 {
				return "", false
			}
			i += n - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
}

// posixClasses spells out, as path.Match ranges, the POSIX classes git's
// wildmatch knows, in the ASCII range it applies them to.
var posixClasses = map[string]string{
	"alnum":  `\0-\9\A-\Z\a-\z`,
	"alpha":  `\A-\Z\a-\z`,
	"blank":  "\\ \\\t",
	"cntrl":  "\\\x00-\\\x1f\\\x7f",
	"digit":  `\0-\9`,
	"graph":  `\!-\~`,
	"lower":  `\a-\z`,
	"print":  `\ -\~`,
	"punct":  `\!-\/\:-\@\[-\` + "`" + `\{-\~`,
	"space":  "\\ \\\t\\\n\\\v\\\f\\\r",
	"upper":  `\A-\Z`,
	"xdigit": `\0-\9\A-\F\a-\f`,
}

// goClass writes to b the bracket expression at the start of s, parsed
// the way git's wildmatch parses it, as a path.Match class with every
// member escaped, and returns the length of s it took; 0 when git would
// reject the expression.
func goClass(b *strings.Builder, s string) int {
	b.WriteByte('[')
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteByte('^')
		i++
	}
	lit := func(c string) { b.WriteByte('\\'); b.WriteString(c) }
	var prev byte // the last single member; 0 after a range or a class
	for first := true; ; first = false {
		if i >= len(s) {
			return 0
		}
		c := s[i]
		switch {
		case c == ']' && !first:
			b.WriteByte(']')
			return i + 1
		case c == '\\':
			if i+1 >= len(s) {
				return 0
			}
			lit(s[i+1 : i+2])
			prev = s[i+1]
			i += 2
			continue
		case c == '-' && prev != 0 && i+1 < len(s) && s[i+1] != ']':
			hi := s[i+1 : i+2]
			i += 2
			if hi == "\\" {
				if i >= len(s) {
					return 0
				}
				hi = s[i : i+1]
				i++
			}
			if prev <= hi[0] {
				b.WriteByte('-')
				lit(hi)
			} else {
				// git matches nothing; path.Match rejects a reversed
				// range, and no file name holds a NUL.
				lit("\x00")
			}
			prev = 0
			continue
		case c == '[' && strings.HasPrefix(s[i:], "[:"):
			end := strings.IndexByte(s[i+2:], ']')
			if end < 0 {
				return 0
			}
			if name, ok := strings.CutSuffix(s[i+2:i+2+end], ":"); ok {
				members, known := posixClasses[name]
				if !known {
					return 0
				}
				b.WriteString(members)
				i += 2 + end + 1
				prev = 0
				continue
			}
		}
		// A single member; a multi-byte character is taken whole.
		_, size := utf8.DecodeRuneInString(s[i:])
		lit(s[i : i+size])
		prev = c
		if size > 1 {
			prev = 0
		}
		i += size
	}
}

// match reports whether p matches rel, a slash path relative to the
// ignore file's directory.
func (p ignorePattern) match(rel string, isDir bool) bool {
	return (!p.dirOnly || isDir) && matchSegs(p.segs, strings.Split(rel, "/"))
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
		dir := path.Join(filepath.ToSlash(root), r)
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
	gitDir := gitPath
	if data, err := os.ReadFile(gitPath); err == nil { // not a directory
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
	name := filepath.FromSlash(path.Join(dir, ".gitignore"))
	old := g.files[dir]
	if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
		if old != nil && old.size == fi.Size() && old.mtime == fi.ModTime().UnixNano() {
			return false
		}
		if data, err := os.ReadFile(name); err == nil {
			g.files[dir] = &ignoreFile{list: parseIgnore(data), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
			return true
		}
	}
	delete(g.files, dir)
	return old != nil
}

// ignored reports whether p (an absolute slash path) is ignored by the
// rules of its own ancestors. Callers check p's parent directories
// themselves: git never re-includes a file inside an ignored directory.
func (g *gitIgnores) ignored(p string, isDir bool) bool {
	for _, dir := range ancestors(path.Dir(p), "") { // the deepest file wins
		if f := g.files[dir]; f != nil {
			rel, _ := relUnder(dir, p)
			if ign, ok := f.list.match(rel, isDir); ok {
				return ign
			}
		}
	}
	if rel, ok := relUnder(g.repo, p); ok && g.repo != "" {
		ign, _ := g.exclude.match(rel, isDir)
		return ign
	}
	return false
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
