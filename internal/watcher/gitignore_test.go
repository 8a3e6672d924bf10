package watcher

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIgnorePatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		path    string
		isDir   bool
		want    bool
	}{
		// Unanchored names match at any depth, files and directories.
		{"*.log", "app.log", false, true},
		{"*.log", "a/b/app.log", false, true},
		{"*.log", "app.log.txt", false, false},
		{"build", "build", true, true},
		{"build", "sub/build", false, true},
		{"build", "builder", true, false},
		// Directory-only patterns.
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"build/", "a/build", true, true},
		// A leading slash anchors to the ignore file's directory.
		{"/build", "build", true, true},
		{"/build", "a/build", true, false},
		{"/*.go", "main.go", false, true},
		{"/*.go", "cmd/main.go", false, false},
		// A middle slash anchors too.
		{"doc/frotz", "doc/frotz", true, true},
		{"doc/frotz", "a/doc/frotz", true, false},
		{"a/*.txt", "a/x.txt", false, true},
		{"a/*.txt", "a/b/x.txt", false, false},
		// "**" forms.
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "x/foo/bar", false, true},
		{"abc/**", "abc/x", false, true},
		{"abc/**", "abc/x/y", false, true},
		{"abc/**", "abc", true, false},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/x/y/c", false, false},
		// Character classes, including git's "[!...]".
		{"file[0-9].txt", "file3.txt", false, true},
		{"file[!0-9].txt", "file3.txt", false, false},
		{"file[!0-9].txt", "filex.txt", false, true},
		{"?.c", "a.c", false, true},
		{"?.c", "ab.c", false, false},
		// Escapes.
		{`\#notcomment`, "#notcomment", false, true},
		{`\!bang`, "!bang", false, true},
		{`trailing\ `, "trailing ", false, true},
		{"spaces   ", "spaces", false, true},
		// Found by TestGitIgnoreAgainstGit. Bracket expressions as git's
		// wildmatch reads them: "]" first is a member, "-" at either end
		// or after a range is a member, a range's low end is a member even
		// when the range is reversed, POSIX classes, and an unknown class
		// makes the pattern match nothing.
		{"[]]x", "]x", false, true},
		{"[!]]x", "ax", false, true},
		{"[!]]x", "]x", false, false},
		{"x[]a]", "xa", false, true},
		{"[a-]x", "-x", false, true},
		{"[-a]x", "-x", false, true},
		{"[a-c-e]x", "-x", false, true},
		{"[a-c-e]x", "dx", false, false},
		{"[z-a]x", "zx", false, true},
		{"[z-a]x", "ax", false, false},
		{"[!z-a]x", "ax", false, true},
		{`[\-]x`, "-x", false, true},
		{"[[:digit:]].txt", "1.txt", false, true},
		{"[[:digit:]].txt", "a.txt", false, false},
		{"[![:lower:]]*", "Z9", false, true},
		{"[![:lower:]]*", "z9", false, false},
		{"[[:punct:]]x", "]x", false, true},
		{"[[:punct:]]x", "^x", false, true},
		{"[^[:alpha:][:digit:]]x", "-x", false, true},
		{"[^[:alpha:][:digit:]]x", "bx", false, false},
		{"[[:]x", "[x", false, true},
		{"[[:]x", ":x", false, true},
		// A backslash escapes the next character, so a space after an
		// escaped backslash is trailing and dropped.
		{`trail\\ `, `trail\`, false, true},
		{`trail\ \ `, "trail  ", false, true},
	}
	for _, tt := range tests {
		p, ok := parseIgnoreLine(tt.pattern)
		if !ok {
			t.Errorf("parseIgnoreLine(%q) dropped the line", tt.pattern)
			continue
		}
		if got := p.match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("%q matching %q (dir %v) = %v, want %v", tt.pattern, tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestParseIgnoreSkipsBlankAndComments(t *testing.T) {
	// An unknown POSIX class or an unclosed bracket expression makes git's
	// pattern match nothing.
	for _, line := range []string{"", "   ", "# comment", "!", "/", "\r", "[[:foo:]]x", "*[", "[!]"} {
		if _, ok := parseIgnoreLine(line); ok {
			t.Errorf("parseIgnoreLine(%q) kept the line", line)
		}
	}
}

func TestIgnoreListLastMatchWins(t *testing.T) {
	list := parseIgnore([]byte("*.log\n!keep.log\n# comment\n\nsecret/\n!secret/\nfinal.log\r\n"))
	tests := []struct {
		path    string
		isDir   bool
		ignored bool
		matched bool
	}{
		{"x.log", false, true, true},
		{"keep.log", false, false, true},
		{"a/keep.log", false, false, true},
		{"final.log", false, true, true},
		{"secret", true, false, true},
		{"main.go", false, false, false},
	}
	for _, tt := range tests {
		ign, m := list.match(tt.path, tt.isDir)
		if ign != tt.ignored || m != tt.matched {
			t.Errorf("match(%q) = %v, %v; want %v, %v", tt.path, ign, m, tt.ignored, tt.matched)
		}
	}
}

func TestGitIgnoresNestedAndExclude(t *testing.T) {
	repo := t.TempDir()
	mustWrite(t, filepath.Join(repo, ".git", "info", "exclude"), "*.local\nsecret.txt\n")
	mustWrite(t, filepath.Join(repo, ".gitignore"), "*.log\n/root-only\n")
	mustWrite(t, filepath.Join(repo, "proj", ".gitignore"), "!important.log\ngen/\n")
	mustWrite(t, filepath.Join(repo, "proj", "sub", ".gitignore"), "secret.txt\n!secret.txt\n*.tmp\n")

	root := filepath.Join(repo, "proj")
	g := newGitIgnores(root, []string{"."})
	if g.repo != filepath.ToSlash(repo) {
		t.Fatalf("repo = %q, want %q", g.repo, repo)
	}
	// The walk loads the tree's own files; do what it would.
	g.load(filepath.ToSlash(root))
	g.load(filepath.ToSlash(filepath.Join(root, "sub")))

	abs := func(rel string) string { return filepath.ToSlash(filepath.Join(root, rel)) }
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"main.go", false, false},
		{"app.log", false, true},            // repo .gitignore, above the root
		{"important.log", false, false},     // re-included by proj/.gitignore
		{"sub/important.log", false, false}, // still re-included deeper down
		{"gen", true, true},
		{"gen", false, false},
		{"x.local", false, true},         // info/exclude
		{"secret.txt", false, true},      // info/exclude
		{"sub/secret.txt", false, false}, // sub/.gitignore wins over info/exclude
		{"sub/a.tmp", false, true},       // scoped to sub
		{"a.tmp", false, false},          // sub's rule does not leak up
		{"root-only", false, false},      // anchored at the repo top, not proj
	}
	for _, tt := range tests {
		if got := g.ignored(abs(tt.rel), tt.isDir); got != tt.want {
			t.Errorf("ignored(%q, dir %v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
	if !g.ignored(filepath.ToSlash(filepath.Join(repo, "root-only")), false) {
		t.Errorf("/root-only should match at the repo top")
	}

	// Reload picks up edits and removals.
	mustWrite(t, filepath.Join(root, "sub", ".gitignore"), "*.go\n")
	if !g.load(abs("sub")) {
		t.Fatalf("load after edit reported no change")
	}
	if !g.ignored(abs("sub/x.go"), false) || g.ignored(abs("sub/a.tmp"), false) {
		t.Errorf("edited sub/.gitignore not applied")
	}
	if err := os.Remove(filepath.Join(root, "sub", ".gitignore")); err != nil {
		t.Fatal(err)
	}
	if !g.load(abs("sub")) || g.ignored(abs("sub/x.go"), false) {
		t.Errorf("removed sub/.gitignore still applied")
	}
}

func TestExcludeFileOfWorktree(t *testing.T) {
	base := t.TempDir()
	common := filepath.Join(base, "main", ".git")
	wt := filepath.Join(common, "worktrees", "wt")
	mustWrite(t, filepath.Join(wt, "commondir"), "../..\n")
	top := filepath.Join(base, "wt")
	mustWrite(t, filepath.Join(top, ".git"), "gitdir: "+wt+"\n")
	got := excludeFile(top, filepath.Join(top, ".git"))
	if want := filepath.Join(common, "info", "exclude"); got != want {
		t.Errorf("excludeFile = %q, want %q", got, want)
	}
}

func mustWrite(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Found by TestGitIgnoreAgainstGit: git skips a UTF-8 byte order mark at
// the start of an ignore file.
func TestParseIgnoreSkipsByteOrderMark(t *testing.T) {
	list := parseIgnore([]byte("\xef\xbb\xbf*.log\n"))
	if ign, _ := list.match("a.log", false); !ign {
		t.Errorf("the first pattern after a byte order mark does not match")
	}
}
