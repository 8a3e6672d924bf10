package project

import (
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/config"
)

// interpreter is how an interpreter's command line names the file it runs.
type interpreter struct {
	valued   []string // options that take the next word as their value
	stop     []string // options after which no script file follows: -c CODE, -m MODULE
	cwd      []string // options whose value is the folder the rest runs in
	script   []string // options whose value is the script: php -f FILE
	subs     []string // subcommands that run a script (deno run); another first word must look like a file
	fileOnly bool     // the first word is the script only if it looks like a file (bun X may run a package script)
	remote   bool     // the script may be a URL or a registry specifier (deno)
}

var (
	pythonRE     = regexp.MustCompile(`^(python|pypy)[0-9.]*w?$`) // python3.12, pypy3, pythonw
	remoteRE     = regexp.MustCompile(`^[a-z][a-z0-9+.-]+:`)      // a module deno fetches: https:, jsr:, npm:
	assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) // a shell variable assignment: NODE_ENV=dev
)

// interpreterFor is how prog (a base name) names its script; false for an unknown program.
func interpreterFor(prog string) (interpreter, bool) {
	prog = strings.TrimSuffix(strings.ToLower(prog), ".exe")
	switch {
	case pythonRE.MatchString(prog):
		return interpreter{valued: []string{"-W", "-X", "--check-hash-based-pycs"}, stop: []string{"-c", "-m", "-"}}, true
	case prog == "node" || prog == "nodejs":
		return interpreter{
			valued: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions", "--inspect-port", "--title", "--input-type", "--env-file", "--watch-path"},
			stop:   []string{"-e", "--eval", "-p", "--print", "-i", "--interactive", "--test", "-"},
		}, true
	case prog == "tsx" || prog == "ts-node" || prog == "ts-node-esm":
		return interpreter{
			valued: []string{"-r", "--require", "--import", "--tsconfig", "-P", "--project", "-O", "--compiler-options", "--env-file"},
			stop:   []string{"-e", "--eval", "-p", "--print", "-i", "--interactive", "--test", "-"},
			subs:   []string{"watch"},
		}, true
	case prog == "ruby":
		return interpreter{valued: []string{"-I", "-r", "-E", "--encoding"}, cwd: []string{"-C"}, stop: []string{"-e", "-"}}, true
	case prog == "sh" || prog == "bash" || prog == "zsh" || prog == "dash" || prog == "ksh":
		return interpreter{valued: []string{"-o", "+o", "-O", "+O"}, stop: []string{"-c", "-s", "-"}}, true
	case prog == "perl":
		return interpreter{stop: []string{"-e", "-E", "-"}}, true
	case prog == "php":
		return interpreter{valued: []string{"-c", "-d", "-z"}, stop: []string{"-r", "-S", "-a", "-"}, script: []string{"-f"}}, true
	case prog == "deno":
		return interpreter{
			valued: []string{"--config", "-c", "--import-map", "--lock", "--cert", "--location", "--seed", "--v8-flags", "--ext"},
			subs:   []string{"run", "serve"},
			remote: true,
		}, true
	case prog == "bun":
		return interpreter{valued: []string{"-r", "--preload", "--config", "-c", "--env-file", "--tsconfig-override"}, cwd: []string{"--cwd"}, subs: []string{"run"}, fileOnly: true}, true
	}
	return interpreter{}, false
}

// scriptRun is the script file a command line runs through an interpreter.
type scriptRun struct {
	prog   string // the interpreter, as written: "python3"
	script string // the file, as written: "sever.py"
	dir    string // the folder it is relative to (the command's, or the one an option moved to)
}

// scriptOf finds the script file argv runs in cwd, through runners (uv
// run, npx, env); false for none (python -m, a console script, a URL).
func scriptOf(argv []string, cwd string) (scriptRun, bool) {
	argv, cwd = unwrapScriptRunner(argv, cwd)
	if len(argv) == 0 {
		return scriptRun{}, false
	}
	prog := argv[0]
	it, ok := interpreterFor(path.Base(filepath.ToSlash(prog)))
	if !ok {
		return scriptRun{}, false
	}
	args := argv[1:]
	if len(it.subs) > 0 && len(args) > 0 {
		switch {
		case slices.Contains(it.subs, args[0]):
			args = args[1:]
		case !strings.HasPrefix(args[0], "-") && !looksLikeFile(args[0]):
			return scriptRun{}, false // another subcommand: deno task, bun install
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, attached := strings.Cut(a, "=")
		switch {
		case (a == "--" || slices.Contains(it.script, a)) && i+1 < len(args):
			return scriptRun{prog, args[i+1], cwd}, true
		case a == "--" || slices.Contains(it.stop, a):
			return scriptRun{}, false
		case slices.Contains(it.cwd, name):
			if !attached && i+1 < len(args) {
				i++
				val = args[i]
			}
			cwd = config.AbsFrom(cwd, val)
		case slices.Contains(it.valued, a):
			i++
		case strings.HasPrefix(a, "-") && a != "-":
		case it.fileOnly && !looksLikeFile(a), it.remote && remoteRE.MatchString(a):
			return scriptRun{}, false
		default:
			return scriptRun{prog, a, cwd}, true
		}
	}
	return scriptRun{}, false
}

// unwrapScriptRunner drops the runners that start a command in the project's
// environment; "uv run x.py" (and pdm's, rye's) becomes ["python", "x.py"].
func unwrapScriptRunner(argv []string, cwd string) ([]string, string) {
	for len(argv) > 0 {
		switch base := path.Base(filepath.ToSlash(argv[0])); {
		case base == "env":
			argv = argv[1:]
			for len(argv) > 0 && (assignmentRE.MatchString(argv[0]) || strings.HasPrefix(argv[0], "-")) {
				argv = argv[1:]
			}
		case base == "uv" && len(argv) > 1 && argv[1] == "run":
			rest := argv[2:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
				name, val, hasVal := strings.Cut(rest[0], "=")
				if rest[0] == "--" {
					rest = rest[1:]
					break
				}
				if !hasVal && len(rest) > 1 && (name == "--directory" || slices.Contains(uvValued, name)) {
					val, hasVal, rest = rest[1], true, rest[1:]
				}
				if name == "--directory" && hasVal {
					cwd = config.AbsFrom(cwd, val)
				}
				rest = rest[1:]
			}
			argv = pythonFile(rest)
		case (base == "pdm" || base == "rye") && len(argv) > 1 && argv[1] == "run":
			argv = pythonFile(skipOptions(argv[2:]))
		case (base == "poetry" || base == "pipenv" || base == "hatch") && len(argv) > 1 && argv[1] == "run":
			argv = skipOptions(argv[2:])
		case base == "npx" || base == "bunx" || base == "pnpx":
			argv = skipOptions(argv[1:], "-p", "--package")
		case base == "pnpm" && len(argv) > 1 && argv[1] == "exec":
			argv = skipOptions(argv[2:])
		default:
			return argv, cwd
		}
	}
	return argv, cwd
}

func pythonFile(argv []string) []string {
	if len(argv) > 0 && strings.HasSuffix(argv[0], ".py") {
		return append([]string{"python"}, argv...)
	}
	return argv
}

// uvValued lists uv run's options that take a value.
var uvValued = []string{
	"--with", "-w", "--with-editable", "--with-requirements", "--python", "-p", "--project",
	"--env-file", "--extra", "--group", "--only-group", "--no-group", "--package", "--index",
	"--default-index", "--index-url", "-i", "--extra-index-url", "--find-links", "-f",
	"--config-file", "--cache-dir", "--color", "--exclude-newer", "--prerelease", "--resolution",
	"--index-strategy", "--keyring-provider", "--python-preference", "--link-mode", "-P",
	"--upgrade-package", "--reinstall-package", "--refresh-package", "--no-binary-package", "--no-build-package",
}
