package watcher

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The names and patterns the generated trees are made of. They cover what
// gitignore(5) describes: negation, directory-only patterns, anchoring by
// a leading or middle slash, "**" in each position, character classes
// (with "!" and "^"), escaped "#", "!", "*", "[", "\" and spaces, trailing
// spaces, case, and patterns that match everything.
var (
	diffDirNames  = []string{"a", "b", "build", "doc", "logs", "src", "keep", "x y", "deep", "foo"}
	diffFileNames = []string{
		"main.go", "app.log", "keep.log", "foo", "foo.txt", "Foo.TXT", "file1.txt", "filex.txt",
		"#hash", "!bang", "trail ", "trail  ", "a.tmp", "debug.o", "x[1].c", "star*", `back\slash`,
		".hidden", "b", "README.md", "]x", "a b", "abc", "x]", "[x", `trail\`, "1.txt", "Z9", "-x", "^x",
	}
	diffPatterns = []string{
		"*.log", "!keep.log", "build/", "/foo", "foo/", "doc/*.txt", "**/logs", "logs/**",
		"a/**/b", "a/**/b/", "file[0-9].txt", "file[!0-9].txt", "file[^0-9].txt", "[a-c]*.tmp",
		`\#hash`, `\!bang`, `trail\ `, `trail\ \ `, "*.o   ", "!debug.o", "src/", "!src/",
		`x\[1\].c`, "x[[]1].c", "**/b/*.go", "/a/b/", "*/foo.txt", "!*/", "?oo", "Foo.TXT",
		"b/**/", "deep/*", "!deep/keep", "*.TXT", `star\*`, `back\\slash`, ".*", "!.gitignore",
		"**/keep/**", "*", "!*.go", "/*/", "# comment", "", "[]]x", "main.go/", "doc", "x y/",
		"!/a", "**/", "a/", "/b", "b/*", "a?b", "a[ ]b", "**/*.md", "abc/**", "**/a/**/keep.log",
		"!**/keep", "keep/", "/x y/deep", "deep/**/*.txt", "!abc", "a\\", "*[", "**",
		`trail\\ `, `trail\\`, "[]x]", "[!]]x", "[^]]x", "[[]x", "x[]]", "[\\-]x", "[a-]x", "[-a]x",
		"[[:digit:]].txt", "file[[:digit:]].txt", "[[:upper:]][[:digit:]]", "[[:alpha:]]oo", "[[:punct:]]x",
		"[[:alnum:]]*.TXT", "[![:lower:]]*", "[[:space:]]x", "[[:xdigit:]].txt", "[^[:alpha:][:digit:]]x",
		" foo", "foo ", "\\ ", "!!bang", "/**/b", "b/**", "**/b/**", "x[!a-z]",
		"x**", "**x", "a**/b", "**/x y", "doc/**/", "*.t?t", `\[x`, `\]x`, `\-x`, "[[:alpha:]-]x", "[[:digit:]-z]x",
	}
)

// TestGitIgnoreAgainstGit generates trees of nested .gitignore files (and
// .git/info/exclude) in a real git repository and checks that the watcher
// enters exactly the directories and counts exactly the files that
// `git check-ignore` does not ignore, for every path of the tree, with the
// watch root at the repository's top and in a subdirectory.
func TestGitIgnoreAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			repo := t.TempDir()
			home := t.TempDir() // no global excludes file: mcpflow does not read it
			git(t, repo, home, nil, "init", "-q")
			rng := rand.New(rand.NewPCG(seed, 0x6769746967))
			var paths []string // repo-relative; directories end in "/"
			genTree(t, rng, repo, ".", 0, &paths)
			mustWrite(t, filepath.Join(repo, ".git", "info", "exclude"), genIgnore(rng, 3))

			ignored := checkIgnore(t, repo, home, paths)
			compareWatcher(t, repo, ".", paths, ignored)
			// A watch root below the top: .gitignore files above it apply
			// too. Take the first directory git keeps.
			for _, p := range paths {
				if strings.HasSuffix(p, "/") && !ignored[p] && strings.Count(p, "/") == 1 {
					compareWatcher(t, repo, strings.TrimSuffix(p, "/"), paths, ignored)
					break
				}
			}
		})
	}
}

// genTree fills dir (repo-relative) with files, maybe a .gitignore, and
// subdirectories up to depth 3, and appends every path it creates.
func genTree(t *testing.T, rng *rand.Rand, repo, dir string, depth int, paths *[]string) {
	join := func(name string) string { return path.Join(dir, name) }
	for _, name := range pick(rng, diffFileNames, 3+rng.IntN(6)) {
		mustWrite(t, filepath.Join(repo, filepath.FromSlash(join(name))), "x")
		*paths = append(*paths, join(name))
	}
	if rng.IntN(3) > 0 {
		mustWrite(t, filepath.Join(repo, filepath.FromSlash(join(".gitignore"))), genIgnore(rng, 6))
		*paths = append(*paths, join(".gitignore"))
	}
	if depth == 3 {
		return
	}
	for _, name := range pick(rng, diffDirNames, 1+rng.IntN(3)) {
		if slices.Contains(*paths, join(name)) {
			continue // a file of that name is there
		}
		if err := os.MkdirAll(filepath.Join(repo, filepath.FromSlash(join(name))), 0o755); err != nil {
			t.Fatal(err)
		}
		*paths = append(*paths, join(name)+"/")
		genTree(t, rng, repo, join(name), depth+1, paths)
	}
}

// genIgnore returns up to n random pattern lines, some with CRLF endings,
// sometimes after a UTF-8 byte order mark.
func genIgnore(rng *rand.Rand, n int) string {
	var b strings.Builder
	if rng.IntN(6) == 0 {
		b.WriteString("\xef\xbb\xbf")
	}
	for _, p := range pick(rng, diffPatterns, 1+rng.IntN(n)) {
		b.WriteString(p)
		if rng.IntN(8) == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func pick(rng *rand.Rand, from []string, n int) []string {
	perm := rng.Perm(len(from))
	out := make([]string, 0, n)
	for _, i := range perm[:min(n, len(from))] {
		out = append(out, from[i])
	}
	return out
}

// checkIgnore asks git about every path in one call and returns the
// ignored ones. A path matched by a negated pattern is not ignored.
func checkIgnore(t *testing.T, repo, home string, paths []string) map[string]bool {
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(strings.TrimSuffix(p, "/"))
		in.WriteByte(0)
	}
	out := git(t, repo, home, &in, "check-ignore", "--stdin", "-z", "-v", "--non-matching")
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields) != 4*len(paths) {
		t.Fatalf("git check-ignore answered %d fields for %d paths", len(fields), len(paths))
	}
	ignored := make(map[string]bool)
	for i, p := range paths {
		source, pattern, got := fields[4*i], fields[4*i+2], fields[4*i+3]
		if got != strings.TrimSuffix(p, "/") {
			t.Fatalf("git check-ignore answered for %q, asked about %q", got, p)
		}
		if source != "" && !strings.HasPrefix(pattern, "!") {
			ignored[p] = true
		}
	}
	return ignored
}

// compareWatcher walks the tree under root (repo-relative) as the watcher
// does and compares what it enters and counts with git's answers.
func compareWatcher(t *testing.T, repo, root string, paths []string, ignored map[string]bool) {
	t.Helper()
	s, err := newSettings(Config{Root: filepath.Join(repo, filepath.FromSlash(root)), GitIgnore: true})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTree(newFilter(s), nil, false)
	if err := tr.sync(".", nil); err != nil {
		t.Fatal(err)
	}
	files := tr.files()
	var bad []string
	for _, p := range paths {
		rel, ok := relUnder(root, strings.TrimSuffix(p, "/"))
		if root == "." {
			rel, ok = strings.TrimSuffix(p, "/"), true
		}
		if !ok {
			continue
		}
		var kept bool
		if strings.HasSuffix(p, "/") {
			_, kept = tr.dirs[rel]
		} else {
			_, kept = slices.BinarySearch(files, rel)
		}
		if kept != ignored[p] {
			continue
		}
		bad = append(bad, fmt.Sprintf("%q: git ignored=%v, watcher ignored=%v", p, ignored[p], !kept))
	}
	if len(bad) > 0 {
		t.Errorf("root %q: the watcher disagrees with git on %d of %d paths:\n%s\n%s",
			root, len(bad), len(paths), strings.Join(bad, "\n"), dumpIgnores(repo))
	}
}

// dumpIgnores shows every ignore file of the repository, for a failure.
func dumpIgnores(repo string) string {
	var b strings.Builder
	for _, name := range []string{".git/info/exclude"} {
		data, _ := os.ReadFile(filepath.Join(repo, name))
		fmt.Fprintf(&b, "--- %s\n%s", name, data)
	}
	_ = filepath.WalkDir(repo, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Name() == ".gitignore" {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(repo, p)
			fmt.Fprintf(&b, "--- %s\n%q\n", rel, data)
		}
		if err == nil && e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		return nil
	})
	return b.String()
}

// git runs git in repo with no global or system configuration.
func git(t *testing.T, repo, home string, stdin *bytes.Buffer, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// check-ignore exits 1 when it found nothing to ignore.
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && args[0] == "check-ignore" {
		err = nil
	}
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
