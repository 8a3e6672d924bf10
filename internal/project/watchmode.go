package project

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/config"
)

// A build in watch mode (tsc --watch, nodemon, ...) never exits: mcpflow
// would wait on it before every start, and every call would hang.

// watchingBuild is a build command part that watches instead of building once.
type watchingBuild struct {
	part       string // the simple command that watches: "tsc --watch"
	via        string // where it comes from: `package.json's "build" script`; "" when in the command itself
	instead    string // what to build with instead
	insteadRun string // for a part that restarts a program on each change (nodemon, air): what to run instead
}

// describe says what watches: "tsc -w (package.json's "build" script)".
func (w *watchingBuild) describe() string {
	if w.via == "" {
		return w.part
	}
	return w.part + " (" + w.via + ")"
}

// watchModeBuild finds the part of c, or of the package.json scripts of dir it runs, that watches.
func watchModeBuild(dir string, c config.Command) *watchingBuild {
	if c.IsZero() {
		return nil
	}
	scripts := readPackageJSON(dir).Scripts
	for _, words := range commandWords(c) {
		if w := watchingPart(words, scripts, nil, 0); w != nil {
			return w
		}
	}
	return nil
}

func commandWords(c config.Command) [][]string {
	if c.Shell && len(c.Argv) > 0 {
		return shellCommands(c.Argv[0])
	}
	return [][]string{c.Argv}
}

// shellCommands splits a shell script into its simple commands' words: a
// rough reading, enough to recognize programs and their flags.
func shellCommands(script string) [][]string {
	cmds, _ := shellSplit(script, ";&|\n()")
	return cmds
}

// shellSplit splits s into simple commands at the characters of seps,
// their words unquoted as a shell would, unexpanded; the error is an
// unclosed quote (whose text then runs to the end).
func shellSplit(s, seps string) ([][]string, error) {
	var cmds [][]string
	var words []string
	var word strings.Builder
	var err error
	inWord := false
	endWord := func() {
		if inWord {
			words, inWord = append(words, word.String()), false
			word.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case strings.IndexByte(seps, c) >= 0:
			endWord()
			if len(words) > 0 {
				cmds, words = append(cmds, words), nil
			}
		case c == ' ' || c == '\t' || c == '\n':
			endWord()
		case c == '\'':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				j, err = len(s)-i-1, fmt.Errorf("unclosed ' in %q", s)
			}
			word.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				word.WriteByte(s[i])
			}
			if i >= len(s) {
				err = fmt.Errorf("unclosed \" in %q", s)
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				word.WriteByte(s[i])
			}
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(words) > 0 {
		cmds = append(cmds, words)
	}
	return cmds, err
}

// watchingPart finds whether words watches, through the package.json scripts it runs (via).
func watchingPart(words []string, scripts map[string]string, via []string, depth int) *watchingBuild {
	words = unwrapRunner(words)
	if len(words) == 0 || depth > 4 {
		return nil
	}
	hit := func(instead, insteadRun string) *watchingBuild {
		w := &watchingBuild{part: strings.Join(words, " "), instead: instead, insteadRun: insteadRun}
		if len(via) > 0 {
			w.via = "package.json's " + strings.Join(via, " → ") + " script"
			if len(via) > 1 {
				w.via += "s"
			}
		}
		return w
	}
	if name, args, ok := packageScript(words, scripts); ok {
		if name == "watch" || strings.HasPrefix(name, "watch:") || strings.HasSuffix(name, ":watch") {
			return hit("a script that builds once, without watching", "")
		}
		script, found := scripts[name]
		if !found {
			return nil
		}
		script = strings.Join(append([]string{script}, args...), " ") // npm run NAME -- ARGS runs the script with ARGS
		for _, sub := range shellCommands(script) {
			if w := watchingPart(sub, scripts, append(slices.Clip(via), `"`+name+`"`), depth+1); w != nil {
				return w
			}
		}
		return nil
	}
	prog, args := strings.TrimSuffix(path.Base(filepath.ToSlash(words[0])), ".cmd"), words[1:]
	if (prog == "python" || prog == "python3") && len(args) > 1 && args[0] == "-m" {
		prog, args = args[1], args[2:] // python -m uvicorn ...
	}
	first := ""
	if len(args) > 0 {
		first = args[0]
	}
	flag := func(names ...string) bool {
		for _, a := range args {
			if a == "--" {
				return false
			}
			for _, n := range names {
				if a == n || strings.HasPrefix(a, n+"=") && !strings.HasSuffix(a, "=false") {
					return true
				}
			}
		}
		return false
	}
	const restarter = `mcpflow restarts the server itself: drop the watcher from the build (or have no build) and put the server in run.command, e.g. ["node", "dist/index.js"]`
	const runIt = `the program it restarts, e.g. ["node", "dist/index.js"]`
	const anyRun = "the command it runs on each change, once"
	switch {
	case prog == "tsc" && flag("--watch", "-w"):
		return hit(`tsc without --watch, e.g. build.command = "npx --no -- tsc --noEmitOnError"`, "")
	case prog == "tsc-watch":
		return hit(`tsc, e.g. build.command = "npx --no -- tsc --noEmitOnError"`, "")
	case slices.Contains([]string{"nodemon", "ts-node-dev", "tsnd", "node-dev", "supervisor", "forever", "pm2-dev"}, prog),
		prog == "tsx" && (first == "watch" || flag("--watch")),
		(prog == "node" || prog == "deno" || prog == "bun") && flag("--watch", "--watch-path", "--hot"):
		return hit(restarter, runIt)
	case slices.Contains([]string{"uvicorn", "hypercorn", "fastmcp", "gunicorn", "flask"}, prog) && flag("--reload"):
		return hit("the same without --reload: "+without(words, "--reload"), "the same without --reload: "+without(words, "--reload"))
	case prog == "cargo" && first == "watch", prog == "cargo-watch":
		return hit(`cargo build`, `the built server, e.g. ["target/debug/NAME"] with build.command = "cargo build"`)
	case prog == "go" && first == "run" && goWatcher(args[1:]), slices.Contains(goWatchers, prog):
		return hit(`go build -o .mcpflow/server .`, `the built server, e.g. [".mcpflow/server"] with build.command = "go build -o .mcpflow/server ."`)
	case slices.Contains([]string{"watchexec", "entr", "chokidar", "onchange", "npm-watch", "watch", "when-changed", "watchmedo", "watchfiles"}, prog):
		return hit(anyRun, anyRun)
	case prog == "dotnet" && first == "watch":
		return hit("dotnet build", `the built server, with build.command = "dotnet build"`)
	case (prog == "gradle" || prog == "gradlew") && flag("-t", "--continuous"):
		return hit("the same gradle command without --continuous", "")
	case prog == "vite" && (first == "" || first == "dev" || first == "serve" || strings.HasPrefix(first, "-") && !flag("build")),
		slices.Contains([]string{"next", "nuxt", "nuxi", "astro", "remix"}, prog) && first == "dev",
		prog == "webpack-dev-server", prog == "webpack" && (first == "serve" || first == "watch"):
		return hit(prog+" build", "")
	case slices.Contains([]string{"make", "just", "task", "gulp", "grunt", "mage"}, prog) && slices.Contains(args, "watch"):
		return hit("a target that builds once", "")
	case flag("--watch", "--watchAll"):
		return hit("the same without --watch: "+without(words, "--watch", "--watchAll"), "")
	case slices.Contains(shortWatchFlag, prog) && flag("-w"):
		return hit("the same without -w: "+without(words, "-w"), "")
	}
	return nil
}

func without(words []string, flags ...string) string {
	return strings.Join(slices.DeleteFunc(slices.Clone(words), func(w string) bool {
		name, _, _ := strings.Cut(w, "=")
		return slices.Contains(flags, name)
	}), " ")
}

var (
	// shortWatchFlag lists the builders whose -w means --watch.
	shortWatchFlag = []string{"rollup", "webpack", "rspack", "rolldown", "tsup", "babel", "swc", "vite", "sass", "microbundle", "ncc", "tailwindcss", "postcss", "tsc-alias", "coffee"}
	// goWatchers are the Go programs that rebuild and restart on each change.
	goWatchers = []string{"air", "reflex", "gow", "CompileDaemon", "modd", "realize", "fresh"}
)

// goWatcher reports whether "go run ARGS" runs a watcher (github.com/air-verse/air@latest).
func goWatcher(args []string) bool {
	i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	if i < 0 {
		return false
	}
	pkg, _, _ := strings.Cut(args[i], "@")
	return slices.Contains(goWatchers, path.Base(pkg)) || path.Base(pkg) == "watchexec"
}

// unwrapRunner drops what runs a command as it is: assignments, env, exec,
// time, nice, cross-env, npx, pnpm exec, yarn dlx, uv run, poetry run, ...
func unwrapRunner(words []string) []string {
	for len(words) > 0 {
		w := words[0]
		switch base := path.Base(filepath.ToSlash(w)); {
		case assignmentRE.MatchString(w):
			words = words[1:]
		case base == "env" || base == "exec" || base == "time" || base == "nice" || base == "nohup" || base == "command" || base == "cross-env":
			words = words[1:]
			for len(words) > 0 && strings.HasPrefix(words[0], "-") {
				words = words[1:]
			}
		case base == "npx" || base == "bunx" || base == "pnpx":
			words = skipOptions(words[1:], "-p", "--package", "-c", "--call")
		case (base == "pnpm" || base == "yarn" || base == "bun") && len(words) > 1 && (words[1] == "exec" || words[1] == "dlx" || words[1] == "x"):
			words = skipOptions(words[2:])
		case (base == "uv" || base == "poetry" || base == "pipenv" || base == "pdm") && len(words) > 1 && words[1] == "run":
			words = skipOptions(words[2:], "--with", "--python", "-p", "--project", "--directory", "--package", "--extra", "--group", "--env-file", "--from")
		case base == "uvx":
			words = skipOptions(words[1:], "--with", "--python", "-p", "--from")
		default:
			return words
		}
	}
	return words
}

// skipOptions drops leading options (valued ones with their value) and a "--".
func skipOptions(words []string, valued ...string) []string {
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		if words[0] == "--" {
			return words[1:]
		}
		if slices.Contains(valued, words[0]) && len(words) > 1 {
			words = words[1:]
		}
		words = words[1:]
	}
	return words
}

// packageScript recognizes npm run NAME [-- ARGS], npm start, pnpm [run]
// NAME, yarn [run] NAME, bun run NAME: the script and the arguments it gets.
func packageScript(words []string, scripts map[string]string) (string, []string, bool) {
	prog := strings.TrimSuffix(path.Base(filepath.ToSlash(words[0])), ".cmd")
	rest := skipOptions(words[1:], "--prefix", "-C", "--dir", "--cwd", "--filter", "-F", "--workspace", "-w")
	if len(rest) == 0 || !slices.Contains([]string{"npm", "pnpm", "yarn", "bun"}, prog) {
		return "", nil, false
	}
	args := func(after []string) []string {
		if prog == "npm" {
			if i := slices.Index(after, "--"); i >= 0 {
				return after[i+1:]
			}
			return nil
		}
		return slices.DeleteFunc(slices.Clone(after), func(s string) bool { return s == "--" })
	}
	switch {
	case prog == "npm" && (rest[0] == "start" || rest[0] == "restart"):
		return "start", args(rest[1:]), true
	case rest[0] == "run" || rest[0] == "run-script" || prog == "npm" && (rest[0] == "rum" || rest[0] == "urn"):
		r := skipOptions(rest[1:])
		if len(r) == 0 {
			return "", nil, false
		}
		if _, ok := scripts[r[0]]; ok || prog != "bun" || !looksLikeFile(r[0]) { // bun run FILE runs the file
			return r[0], args(r[1:]), true
		}
	case prog == "pnpm" || prog == "yarn":
		if _, ok := scripts[rest[0]]; ok {
			return rest[0], args(rest[1:]), true
		}
	}
	return "", nil, false
}

// looksLikeFile reports an argument with a path or a script's extension.
func looksLikeFile(a string) bool {
	return strings.ContainsAny(a, `/\`) || slices.Contains([]string{".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts",
		".tsx", ".py", ".rb", ".sh", ".php", ".pl"}, strings.ToLower(path.Ext(a)))
}

// runRestarterWarning warns about a run command that restarts the server
// on each change (nodemon, air): it races with mcpflow's restarts.
func runRestarterWarning(v checkView) string {
	w := watchModeBuild(v.cfg.Dir, v.cfg.Run.Command)
	if v.cfg.CLI != nil || w == nil || w.insteadRun == "" {
		return ""
	}
	return v.at("run.command", "restarts the server itself on each change: %s; mcpflow already restarts it, after building, and keeps the client's session across its restarts, while the watcher's restarts race with mcpflow's and drop an HTTP client's session; run instead %s", w.describe(), w.insteadRun)
}
