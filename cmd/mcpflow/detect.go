package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/mcpflow/mcpflow/internal/config"
	toml "github.com/pelletier/go-toml/v2"
	"golang.org/x/mod/modfile"
)

// project is what detection learns about a directory: enough to write a
// config that builds, runs and watches it.
type project struct {
	Kind    string   // "go", "rust", "node", "typescript", "python", "" (unknown)
	Name    string   // server name for the client snippet
	Build   string   // build command, run by sh -c; "" = none
	Run     []string // the server command
	Include []string
	Exclude []string
	Env     map[string]string // run.env
	RunWhy  string            // where the run command comes from, "" if obvious
	Notes   []string          // things the user should check, written as comments
	// BuildNotes are comments written above build.command.
	BuildNotes []string
	// Advice is printed by init after the summary, one "Note:" line each.
	Advice []string
}

// detect looks at dir and guesses the project's kind from its manifest.
func detect(dir string) project {
	switch {
	case exists(dir, "go.mod"):
		return detectGo(dir)
	case exists(dir, "Cargo.toml"):
		return detectRust(dir)
	case exists(dir, "package.json"):
		return detectNode(dir)
	case exists(dir, "pyproject.toml"), exists(dir, "uv.lock"), exists(dir, "requirements.txt"),
		exists(dir, "server.py"), exists(dir, "main.py"), exists(dir, "app.py"):
		return detectPython(dir)
	}
	return project{
		Name:    filepath.Base(dir),
		Run:     []string{"./server"},
		Include: []string{"**/*"},
		Exclude: []string{},
		Notes:   []string{"No go.mod, Cargo.toml, package.json or pyproject.toml found: set run.command (and build.command) yourself."},
	}
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func detectGo(dir string) project {
	p := project{
		Kind:    "go",
		Name:    filepath.Base(dir),
		Include: []string{"**/*.go", "go.mod", "go.sum"},
		Exclude: []string{"**/*_test.go"},
	}
	if mod := goModule(filepath.Join(dir, "go.mod")); mod != "" {
		p.Name = filepath.Base(mod)
	}
	pkg := "."
	var mains []string
	entries, _ := os.ReadDir(filepath.Join(dir, "cmd"))
	for _, e := range entries {
		if e.IsDir() && isGoMain(filepath.Join(dir, "cmd", e.Name())) {
			mains = append(mains, e.Name())
		}
	}
	sort.Strings(mains)
	switch {
	case len(mains) > 0:
		pick := mains[0]
		for _, m := range mains {
			if m == p.Name || strings.Contains(m, "server") || strings.Contains(m, "mcp") {
				pick = m
				break
			}
		}
		pkg = "./cmd/" + pick
		p.Name = pick
		if len(mains) > 1 {
			p.Notes = append(p.Notes, "Several main packages under cmd/ ("+strings.Join(mains, ", ")+"); picked "+pick+".")
		}
	case !isGoMain(dir):
		p.Notes = append(p.Notes, "No main package found at the root or under cmd/: point build.command at your server's main package.")
	}
	p.Build = "go build -o .mcpflow/server " + pkg
	p.Run = []string{".mcpflow/server"}
	return p
}

// goModule returns the module path declared in the go.mod at path, or "".
func goModule(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return modfile.ModulePath(b)
}

// isGoMain reports whether dir holds a Go file of package main.
func isGoMain(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "package ") {
				if strings.TrimSpace(strings.TrimPrefix(line, "package ")) == "main" {
					return true
				}
				break
			}
		}
	}
	return false
}

func detectRust(dir string) project {
	var m struct {
		Package struct {
			Name string `toml:"name"`
		} `toml:"package"`
		Bin []struct {
			Name string `toml:"name"`
		} `toml:"bin"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "Cargo.toml"))
	_ = toml.Unmarshal(b, &m)
	name := m.Package.Name
	if len(m.Bin) > 0 && m.Bin[0].Name != "" {
		name = m.Bin[0].Name
	}
	p := project{
		Kind:    "rust",
		Name:    name,
		Build:   "cargo build",
		Include: []string{"**/*.rs", "Cargo.toml", "Cargo.lock"},
		Exclude: []string{"target/**"},
	}
	if name == "" {
		p.Name = filepath.Base(dir)
		p.Notes = append(p.Notes, "No package name in Cargo.toml: check run.command.")
	}
	p.Run = []string{"target/debug/" + p.Name}
	return p
}

// packageJSON is what detection reads of a package.json.
type packageJSON struct {
	Name    string            `json:"name"`
	Main    string            `json:"main"`
	Bin     json.RawMessage   `json:"bin"`
	Scripts map[string]string `json:"scripts"`
}

// binEntry returns the file package.json's "bin" points to: the string, or
// in an object the command named like the package (else the first by name).
func (m packageJSON) binEntry() string {
	var bin string
	if json.Unmarshal(m.Bin, &bin) == nil {
		return bin
	}
	var bins map[string]string
	if json.Unmarshal(m.Bin, &bins) != nil || len(bins) == 0 {
		return ""
	}
	if b, ok := bins[unscoped(m.Name)]; ok {
		return b
	}
	keys := make([]string, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return bins[keys[0]]
}

func unscoped(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// tsConfig is what detection reads of a tsconfig.json (following
// "extends" to relative files). OutDir and RootDir are relative to the
// project folder, slash-separated, "" when unset.
type tsConfig struct {
	Found         bool
	OutDir        string
	RootDir       string
	NoEmitOnError bool
	Major         int // TypeScript's major version, from node_modules or package.json; 0 if unknown
}

// readTSConfig reads dir/tsconfig.json, which may hold comments and
// trailing commas (tsc reads it as JSONC).
func readTSConfig(dir string) tsConfig {
	var ts tsConfig
	readTSConfigFile(dir, filepath.Join(dir, "tsconfig.json"), &ts, 0)
	ts.Major = typescriptMajor(dir)
	return ts
}

// typescriptMajor is the major version of the project's TypeScript: the
// installed one, else the one package.json asks for; 0 if unknown.
func typescriptMajor(dir string) int {
	var v string
	var installed struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "node_modules", "typescript", "package.json")); err == nil && json.Unmarshal(b, &installed) == nil {
		v = installed.Version
	} else {
		var m struct {
			Dependencies    map[string]string `json:"dependencies"`
			DevDependencies map[string]string `json:"devDependencies"`
		}
		b, _ := os.ReadFile(filepath.Join(dir, "package.json"))
		_ = json.Unmarshal(b, &m)
		v = m.DevDependencies["typescript"]
		if v == "" {
			v = m.Dependencies["typescript"]
		}
	}
	v = strings.TrimLeft(v, "^~>=v ")
	n := 0
	for _, r := range v {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

func readTSConfigFile(projectDir, path string, ts *tsConfig, depth int) {
	b, err := os.ReadFile(path)
	if err != nil || depth > 8 {
		return
	}
	var c struct {
		Extends         json.RawMessage `json:"extends"`
		CompilerOptions struct {
			OutDir        *string `json:"outDir"`
			RootDir       *string `json:"rootDir"`
			NoEmitOnError *bool   `json:"noEmitOnError"`
		} `json:"compilerOptions"`
	}
	if json.Unmarshal(stripJSONC(b), &c) != nil {
		return
	}
	ts.Found = true
	// The base config first, so that this file's options win.
	var bases []string
	var one string
	if json.Unmarshal(c.Extends, &one) == nil {
		bases = []string{one}
	} else {
		_ = json.Unmarshal(c.Extends, &bases)
	}
	for _, base := range bases {
		if strings.HasPrefix(base, "./") || strings.HasPrefix(base, "../") {
			if !strings.HasSuffix(base, ".json") {
				base += ".json"
			}
			readTSConfigFile(projectDir, filepath.Join(filepath.Dir(path), base), ts, depth+1)
		}
	}
	rel := func(p string) string {
		abs := filepath.Join(filepath.Dir(path), p)
		if r, err := filepath.Rel(projectDir, abs); err == nil {
			return filepath.ToSlash(r)
		}
		return filepath.ToSlash(p)
	}
	if o := c.CompilerOptions.OutDir; o != nil {
		ts.OutDir = rel(*o)
	}
	if r := c.CompilerOptions.RootDir; r != nil {
		ts.RootDir = rel(*r)
	}
	if n := c.CompilerOptions.NoEmitOnError; n != nil {
		ts.NoEmitOnError = *n
	}
}

// stripJSONC turns JSON with comments and trailing commas into JSON.
func stripJSONC(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				j = len(b) - 1
			}
			out = append(out, b[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := strings.Index(string(b[i+2:]), "*/")
			if end < 0 {
				i = len(b)
			} else {
				i += 2 + end + 1
			}
			out = append(out, ' ')
		case c == ']' || c == '}':
			// Drop a comma that only whitespace separates from the close.
			k := len(out) - 1
			for k >= 0 && (out[k] == ' ' || out[k] == '\t' || out[k] == '\n' || out[k] == '\r') {
				k--
			}
			if k >= 0 && out[k] == ',' {
				out = append(out[:k], out[k+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// tsOutput is the file tsc writes for the source file src (relative,
// slash-separated) under ts: src mapped through rootDir into outDir, with
// the JavaScript extension. Without rootDir, TypeScript 6 and later use the
// tsconfig.json's folder; earlier versions the sources' common folder,
// taken here as src's own.
func tsOutput(ts tsConfig, src string) string {
	ext := path.Ext(src)
	js := map[string]string{".ts": ".js", ".tsx": ".js", ".mts": ".mjs", ".cts": ".cjs"}[ext]
	if js == "" {
		return ""
	}
	out := strings.TrimSuffix(src, ext) + js
	if ts.OutDir == "" {
		return out
	}
	root := ts.RootDir
	if root == "" {
		root = path.Dir(src)
		if ts.Major >= 6 {
			root = "."
		}
	}
	rel := out
	if root != "." {
		r, ok := strings.CutPrefix(out, root+"/")
		if !ok {
			return ""
		}
		rel = r
	}
	return path.Join(ts.OutDir, rel)
}

// tsEntrySource finds the TypeScript file a server most likely starts
// from: index, server or main (.ts, .mts) in rootDir, src/ or the project
// root.
func tsEntrySource(dir string, ts tsConfig) string {
	folders := []string{"src", "."}
	if ts.RootDir != "" {
		folders = []string{ts.RootDir}
	}
	for _, f := range folders {
		for _, base := range []string{"index", "server", "main"} {
			for _, ext := range []string{".ts", ".mts"} {
				p := path.Join(f, base+ext)
				if exists(dir, p) {
					return p
				}
			}
		}
	}
	return ""
}

// tsSources lists the project's TypeScript sources (relative,
// slash-separated), skipping node_modules, dot folders and the outDir.
func tsSources(dir string, ts tsConfig) []string {
	var srcs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || rel == ts.OutDir) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".d.ts") {
			return nil
		}
		switch path.Ext(rel) {
		case ".ts", ".tsx", ".mts", ".cts":
			srcs = append(srcs, rel)
		}
		return nil
	})
	return srcs
}

// nodeEntryWarning reports, for a run command that starts a script with
// node, when that script does not exist and the project's build (tsc, per
// tsconfig.json) will not write it either; "" when it exists or will. dir
// is the folder run paths are relative to. mcpflow check calls it with the
// resolved run command.
func nodeEntryWarning(dir string, run config.Command) string {
	if run.Shell || len(run.Argv) < 2 || filepath.Base(run.Argv[0]) != "node" {
		return ""
	}
	sr, ok := scriptOf(run.Argv, dir)
	if !ok {
		return ""
	}
	script := sr.script
	abs := absFrom(sr.dir, script)
	if _, err := os.Stat(abs); err == nil {
		return ""
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		rel = script
	}
	rel = filepath.ToSlash(rel)
	ts := readTSConfig(dir)
	if !ts.Found {
		return fmt.Sprintf("run.command starts %s, which does not exist, and there is no tsconfig.json whose build would write it", rel)
	}
	var outs []string
	for _, src := range tsSources(dir, ts) {
		out := tsOutput(ts, src)
		if out == rel {
			return ""
		}
		if out != "" && len(outs) < 3 {
			outs = append(outs, src+" → "+out)
		}
	}
	msg := fmt.Sprintf("run.command starts %s, which does not exist, and tsc will not write it (tsconfig.json: outDir %q, rootDir %q)", rel, ts.OutDir, ts.RootDir)
	if len(outs) > 0 {
		msg += "; the build writes " + strings.Join(outs, ", ")
	}
	return msg
}

// projectOutputs lists the folders the project's own build writes, as
// absolute paths: tsconfig.json's outDir. Everything under them is build
// output, never a source to watch.
func projectOutputs(dir string) []string {
	ts := readTSConfig(dir)
	if ts.OutDir == "" || ts.OutDir == "." || strings.HasPrefix(ts.OutDir, "../") {
		return nil
	}
	return []string{filepath.Join(dir, filepath.FromSlash(ts.OutDir))}
}

func detectNode(dir string) project {
	var m packageJSON
	b, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	_ = json.Unmarshal(b, &m)
	ts := readTSConfig(dir)
	p := project{Kind: "node", Name: unscoped(m.Name)}
	if p.Name == "" {
		p.Name = filepath.Base(dir)
	}
	src := ""
	if ts.Found {
		p.Kind = "typescript"
		src = tsEntrySource(dir, ts)
	}
	buildScript, hasBuild := m.Scripts["build"]
	if hasBuild {
		p.Build = "npm run build"
	}
	// A build script in watch mode never exits: every start would wait on
	// it. TypeScript builds with tsc once instead; otherwise the user says
	// how.
	if w := watchModeBuild(dir, config.Command{Argv: []string{p.Build}, Shell: true}); hasBuild && w != nil {
		buildScript, hasBuild, p.Build = "", false, ""
		if ts.Found {
			p.Notes = append(p.Notes, fmt.Sprintf("package.json's build script runs in watch mode (%s): it never exits, so every call would wait on it. mcpflow watches and rebuilds by itself: init builds with tsc, once, instead.", w.part))
		} else {
			p.Notes = append(p.Notes, fmt.Sprintf("package.json's build script runs in watch mode (%s): it never exits, so every call would wait on it. mcpflow watches and rebuilds by itself: init wrote no build.command; add one that builds once (%s).", w.part, w.instead))
		}
	}

	// The entry point, the way the project says it: bin, then what tsc
	// writes for the source entry, then main.
	clean := func(s string) string { return path.Clean(strings.TrimPrefix(filepath.ToSlash(s), "./")) }
	entry, why := "", ""
	switch bin, out := m.binEntry(), tsOutput(ts, src); {
	case bin != "":
		entry, why = clean(bin), `"bin" in package.json`
	case ts.Found && out != "":
		entry, why = out, "tsc's output for "+src+", through tsconfig.json's rootDir and outDir"
	case m.Main != "":
		entry, why = clean(m.Main), `"main" in package.json`
	default:
		for _, f := range []string{"index.js", "server.js", "main.js", "index.mjs", "server.mjs"} {
			if exists(dir, f) {
				entry, why = f, "the only script found"
				break
			}
		}
	}
	if entry == "" {
		entry = "index.js"
		p.Notes = append(p.Notes, `No "bin", "main", tsconfig.json output or index.js found: set run.command to your server's entry point.`)
	}
	p.Run = []string{"node", entry}
	p.RunWhy = why

	if ts.Found {
		if !hasBuild {
			p.Build = "npx --no -- tsc"
		}
		if !ts.NoEmitOnError {
			// tsc writes JavaScript even when type-checking fails; with
			// --noEmitOnError a failed build leaves the last good output.
			switch f := strings.Fields(buildScript); {
			case !hasBuild:
				p.Build += " --noEmitOnError"
			case len(f) > 0 && f[0] == "tsc" && !strings.ContainsAny(buildScript, "&|;"):
				p.Build = "npm run build -- --noEmitOnError"
			default:
				advice := `tsc writes its output even when type-checking fails: set "noEmitOnError": true in tsconfig.json, so that a failed build never replaces the last good output.`
				p.BuildNotes = append(p.BuildNotes, advice)
				p.Advice = append(p.Advice, "your build script does more than tsc, so init left it as it is. "+advice)
			}
		}
		if p.Build != "npm run build" {
			p.BuildNotes = append(p.BuildNotes,
				"--noEmitOnError: tsc writes its JavaScript even when type-checking fails; with it, a",
				"failed build leaves the last good output, so a restart never runs code that did not",
				`compile. Setting "noEmitOnError": true in tsconfig.json does the same.`)
		}
		if w := nodeEntryWarning(dir, config.Command{Argv: p.Run}); w != "" {
			p.Notes = append(p.Notes, w+".")
		}
	} else if !exists(dir, entry) && p.Build == "" {
		p.Notes = append(p.Notes, fmt.Sprintf("run.command starts %s (%s), which does not exist.", entry, why))
	}

	p.Include = []string{"**/*.ts", "**/*.mts", "**/*.cts", "**/*.js", "**/*.mjs", "**/*.cjs", "**/*.json"}
	p.Exclude = []string{"node_modules/**", "package-lock.json"}
	if p.Build != "" {
		// The build writes these folders: never watch them.
		var outs []string
		if ts.OutDir != "" && ts.OutDir != "." && !strings.HasPrefix(ts.OutDir, "../") {
			outs = append(outs, ts.OutDir)
		}
		for _, e := range []string{m.binEntry(), m.Main, entry} {
			if d := path.Dir(clean(e)); e != "" && d != "." && !strings.HasPrefix(d, "../") && !isSourceDir(d, ts, src) {
				outs = append(outs, d)
			}
		}
		seen := map[string]bool{}
		for _, o := range outs {
			if !seen[o] {
				seen[o] = true
				p.Exclude = append(p.Exclude, o+"/**")
			}
		}
	}
	return p
}

// isSourceDir reports whether d holds the TypeScript sources.
func isSourceDir(d string, ts tsConfig, src string) bool {
	if ts.OutDir != "" && (d == ts.OutDir || strings.HasPrefix(d, ts.OutDir+"/")) {
		return false
	}
	return d == ts.RootDir || (src != "" && d == path.Dir(src))
}

func detectPython(dir string) project {
	var m struct {
		Project struct {
			Name    string            `toml:"name"`
			Scripts map[string]string `toml:"scripts"`
		} `toml:"project"`
		BuildSystem map[string]any `toml:"build-system"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	_ = toml.Unmarshal(b, &m)
	p := project{
		Kind:    "python",
		Name:    m.Project.Name,
		Include: []string{"**/*.py", "pyproject.toml"},
		Exclude: []string{".venv/**", "**/__pycache__/**", "**/*.egg-info/**"},
	}
	if p.Name == "" {
		p.Name = filepath.Base(dir)
	}

	// The interpreter: uv's when the project is managed by uv, else the
	// project's virtual environment, else python3 from PATH.
	e := pyEnv{dir: dir, uv: exists(dir, "uv.lock"), py: []string{"python3"}}
	e.venv = !e.uv && exists(dir, ".venv/bin/python")
	switch {
	case e.uv:
		e.py = []string{"uv", "run", "python"}
	case e.venv:
		e.py = []string{".venv/bin/python"}
	}
	// uv installs the project itself (and its scripts) when it has a
	// build system.
	e.installed = e.uv && m.BuildSystem != nil

	// How the project says it is run ([project.scripts]), then a package
	// with __main__.py, then a top-level script.
	cands := e.scripts(m.Project.Scripts, p.Name)
	cands = append(cands, e.mainPackages()...)
	cands = append(cands, e.topScripts()...)
	if len(cands) == 0 {
		p.Run = append(slices.Clone(e.py), "server.py")
		p.Notes = append(p.Notes, "No [project.scripts], package with __main__.py or top-level script found: set run.command to your server.")
		return p
	}
	pick := cands[0]
	p.Run, p.Env = pick.run, pick.env
	p.RunWhy = pick.what
	if pick.why != "" {
		p.RunWhy += ": " + pick.why
	}
	if len(cands) > 1 {
		others := make([]string, 0, len(cands)-1)
		for _, c := range cands[1:] {
			others = append(others, c.what)
		}
		p.Notes = append(p.Notes, fmt.Sprintf("Picked %s: %s. Also found: %s. Change run.command if the server is another one.", pick.what, pick.why, strings.Join(others, ", ")))
	}
	return p
}

// pyEnv is how a Python project's code is run.
type pyEnv struct {
	dir       string
	py        []string // the interpreter
	uv, venv  bool     // managed by uv; has .venv (and not uv)
	installed bool     // uv installs the project and its scripts
}

// pyCandidate is one way to run a Python server, and why.
type pyCandidate struct {
	run  []string
	env  map[string]string
	what string
	why  string
}

// srcPath is the environment that lets pkg be imported from src/.
func (e pyEnv) srcPath(pkg string) map[string]string {
	if !e.installed && !exists(e.dir, pkg) && exists(e.dir, "src/"+pkg) {
		return map[string]string{"PYTHONPATH": "src"}
	}
	return nil
}

// scripts are the [project.scripts] of the project called name, the most
// likely server first.
func (e pyEnv) scripts(scripts map[string]string, name string) []pyCandidate {
	keys := make([]string, 0, len(scripts))
	for k := range scripts {
		keys = append(keys, k)
	}
	sort.SliceStable(keys, func(i, j int) bool { return scriptRank(keys[i], name) < scriptRank(keys[j], name) })
	var cands []pyCandidate
	for _, k := range keys {
		target := strings.TrimSpace(scripts[k])
		mod, fn, _ := strings.Cut(target, ":")
		mod, fn = strings.TrimSpace(mod), strings.TrimSpace(fn)
		c := pyCandidate{what: "the script " + k + " (" + target + ")", why: "[project.scripts] is how the project says it is run"}
		inVenv := e.venv && exists(e.dir, ".venv/bin/"+k)
		switch {
		case e.installed:
			c.run = []string{"uv", "run", k}
		case inVenv:
			c.run = []string{".venv/bin/" + k}
		case fn == "":
			c.run = append(slices.Clone(e.py), "-m", mod)
		default:
			obj, _, _ := strings.Cut(fn, ".")
			c.run = append(slices.Clone(e.py), "-c", fmt.Sprintf("import sys; from %s import %s; sys.exit(%s())", mod, obj, fn))
		}
		if !e.installed && !inVenv {
			top, _, _ := strings.Cut(mod, ".")
			c.env = e.srcPath(top)
		}
		cands = append(cands, c)
	}
	return cands
}

// mainPackages are the packages with a __main__.py (run with -m), at the
// top or under src/.
func (e pyEnv) mainPackages() []pyCandidate {
	var cands []pyCandidate
	for _, root := range []string{".", "src"} {
		entries, _ := os.ReadDir(filepath.Join(e.dir, root))
		for _, d := range entries {
			if d.IsDir() && !strings.HasPrefix(d.Name(), ".") && exists(e.dir, filepath.Join(root, d.Name(), "__main__.py")) {
				cands = append(cands, pyCandidate{
					run:  append(slices.Clone(e.py), "-m", d.Name()),
					env:  e.srcPath(d.Name()),
					what: "the package " + d.Name(),
					why:  "it has a __main__.py",
				})
			}
		}
	}
	return cands
}

// topScripts are the top-level scripts: server.py, main.py, app.py, or
// the only one first.
func (e pyEnv) topScripts() []pyCandidate {
	var scripts []string
	top, _ := filepath.Glob(filepath.Join(e.dir, "*.py"))
	for _, f := range top {
		switch base := filepath.Base(f); base {
		case "setup.py", "conftest.py", "noxfile.py", "__init__.py":
		default:
			scripts = append(scripts, base)
		}
	}
	sort.SliceStable(scripts, func(i, j int) bool { return scriptFileRank(scripts[i]) < scriptFileRank(scripts[j]) })
	var cands []pyCandidate
	for i, s := range scripts {
		why := "it is the only top-level script"
		if len(scripts) > 1 {
			why = "it is the most likely top-level script (server.py, main.py, app.py, in that order)"
		}
		if i > 0 {
			why = ""
		}
		run := append(slices.Clone(e.py), s)
		if e.uv {
			run = []string{"uv", "run", s}
		}
		cands = append(cands, pyCandidate{run: run, what: s, why: why})
	}
	return cands
}

// scriptRank orders console scripts: the one named like the project, then
// any with "mcp" or "server" in its name, then the rest.
func scriptRank(name, project string) int {
	switch {
	case name == project:
		return 0
	case strings.Contains(name, "mcp"), strings.Contains(name, "server"):
		return 1
	}
	return 2
}

func scriptFileRank(name string) int {
	switch name {
	case "server.py":
		return 0
	case "main.py":
		return 1
	case "app.py":
		return 2
	}
	if strings.Contains(name, "server") || strings.Contains(name, "mcp") {
		return 3
	}
	return 4
}

// zeroConfig is the config of "mcpflow watch -- CMD": the command is the
// server, build is optional, the watch set comes from detection.
func zeroConfig(dir string, argv []string, build string) *config.Config {
	c := config.Default(dir)
	c.Run.Command = config.Command{Argv: argv}
	if build != "" {
		c.Build.Command = config.Command{Argv: []string{build}, Shell: true}
	}
	p := detect(c.Dir)
	if p.Kind != "" {
		c.Watch.Include = p.Include
		c.Watch.Exclude = p.Exclude
	}
	return c
}

// projectWarnings is what mcpflow check adds for the project's own
// layout: a node entry point that neither exists nor will be built, and a
// build output folder (tsconfig.json's outDir) that the watch globs cover.
func projectWarnings(cfg *config.Config) []string {
	var out []string
	if w := nodeEntryWarning(cfg.Run.Cwd, cfg.Run.Command); w != "" && !builtByOther(cfg) {
		out = append(out, w)
	}
	if cfg.Watch.Enabled {
		for _, d := range watchedOutputDirs(cfg.Dir, cfg.Watch.Include, cfg.Watch.Exclude) {
			out = append(out, fmt.Sprintf("the watch globs cover %s/, where the build writes (tsconfig.json outDir): mcpflow ignores it so a build cannot trigger the next one, but add \"%s/**\" to watch.exclude to make that explicit", d, d))
		}
	}
	return out
}

// builtByOther reports whether the script node runs, missing now, is
// what a build other than tsc writes: the project has no tsconfig.json,
// and the script lies in a build output folder (dist/, ...) or is the
// build command's -o, --outdir or --outfile.
func builtByOther(cfg *config.Config) bool {
	sr, ok := scriptOf(cfg.Run.Command.Argv, cfg.Run.Cwd)
	if !ok || cfg.Build.Command.IsZero() || readTSConfig(cfg.Dir).Found {
		return false
	}
	abs := absFrom(sr.dir, sr.script)
	if inAny(outputFolders(cfg), abs) {
		return true
	}
	for _, words := range commandWords(cfg.Build.Command) {
		for i, w := range words {
			name, v, attached := strings.Cut(w, "=")
			if name != "--outfile" && name != "--out-file" && name != "-o" {
				continue
			}
			if !attached && i+1 < len(words) {
				v = words[i+1]
			}
			if v != "" && absFrom(cfg.Dir, v) == abs {
				return true
			}
		}
	}
	return false
}

// watchedOutputDirs lists the project's build output folders (relative to
// dir, slash-separated) in which a file the build writes, or one already
// there, matches include and not exclude.
func watchedOutputDirs(dir string, include, exclude []string) []string {
	match := func(globs []string, rel string) bool {
		for _, g := range globs {
			if ok, _ := doublestar.Match(g, rel); ok {
				return true
			}
		}
		return false
	}
	var out []string
	for _, abs := range projectOutputs(dir) {
		rel, err := filepath.Rel(dir, abs)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		probes := []string{"index.js", "index.mjs", "index.cjs", "index.d.ts", "index.js.map", "sub/index.js"}
		if files, err := os.ReadDir(abs); err == nil {
			for i, f := range files {
				if i == 50 {
					break
				}
				probes = append(probes, f.Name())
			}
		}
		for _, p := range probes {
			if f := rel + "/" + p; match(include, f) && !match(exclude, f) {
				out = append(out, rel)
				break
			}
		}
	}
	return out
}
