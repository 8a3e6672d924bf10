package project

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	toml "github.com/pelletier/go-toml/v2"
	"golang.org/x/mod/modfile"

	"github.com/mcpflow/mcpflow/internal/config"
)

// Project is what detection learns about a folder: enough to build, run and watch it.
type Project struct {
	Kind             string   // "go", "rust", "node", "typescript", "python", "" (unknown)
	Name             string   // server name for the client snippet
	Build            string   // build command, run by sh -c; "" = none
	Run              []string // the server command
	Include, Exclude []string
	Env              map[string]string // run.env
	RunWhy           string            // where the run command comes from, "" if obvious
	Notes            []string          // things the user should check, written as comments
	BuildNotes       []string          // comments written above build.command
	Advice           []string          // printed by init after the summary, one "Note:" line each
	URL, URLWhy      string            // run.url for a server that serves only Streamable HTTP, and why
}

// Detect guesses the project in dir from its manifest, and from its
// sources whether it serves only Streamable HTTP (then it gets run.url).
func Detect(dir string) Project {
	p := detectManifest(dir)
	s := scanServing(dir, p.Kind)
	switch {
	case s.OnlyHTTP():
		url, why, sure := s.URL()
		p.URL, p.URLWhy = url, s.HTTP+" serves Streamable HTTP; "+why
		if !sure {
			p.Notes = append(p.Notes, "The server serves Streamable HTTP ("+s.HTTP+"), but init found no port in the source: "+
				"run.url's {port} works only if the server listens on $PORT; otherwise write its port in run.url.")
		}
	case s.OnlySSE():
		p.Notes = append(p.Notes, "The server serves the legacy HTTP+SSE transport ("+s.SSE+"), which mcpflow does not speak: make it serve stdio (init wrote a stdio config) or Streamable HTTP (then add run.url).")
	case s.HTTP != "":
		url, _, _ := s.URL()
		p.Advice = append(p.Advice, fmt.Sprintf("the source has both a stdio transport (%s) and a Streamable HTTP one (%s); init set mcpflow up for stdio. To run the server over HTTP, make run.command start it that way and add url = %s to [run].", s.Stdio, s.HTTP, config.TOMLString(url)))
	}
	return p
}

// projectKind is the kind Detect gives the project in dir, from its manifest alone.
func projectKind(dir string) string {
	switch {
	case exists(dir, "go.mod"):
		return "go"
	case exists(dir, "Cargo.toml"):
		return "rust"
	case exists(dir, "package.json") && exists(dir, "tsconfig.json"):
		return "typescript"
	case exists(dir, "package.json"):
		return "node"
	case firstExisting(dir, "pyproject.toml", "uv.lock", "requirements.txt", "server.py", "main.py", "app.py") != "":
		return "python"
	case firstExisting(dir, "server.js", "index.js", "server.mjs", "index.mjs") != "":
		return "node"
	}
	return ""
}

// detectManifest is Detect without the sources' search.
func detectManifest(dir string) Project {
	detectors := map[string]func(string) Project{"go": detectGo, "rust": detectRust, "node": detectNode, "typescript": detectNode, "python": detectPython}
	if detect := detectors[projectKind(dir)]; detect != nil {
		return detect(dir)
	}
	return Project{
		Name:    filepath.Base(dir),
		Run:     []string{"./server"},
		Include: []string{"**/*"},
		Notes:   []string{"No go.mod, Cargo.toml, package.json or pyproject.toml found: set run.command (and build.command) yourself."},
	}
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func firstExisting(dir string, names ...string) string {
	for _, n := range names {
		if exists(dir, n) {
			return n
		}
	}
	return ""
}

func detectGo(dir string) Project {
	p := Project{
		Kind:    "go",
		Name:    filepath.Base(dir),
		Include: []string{"**/*.go", "go.mod", "go.sum"},
		Exclude: []string{"**/*_test.go"},
	}
	b, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if mod := modfile.ModulePath(b); mod != "" {
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
	switch {
	case len(mains) > 0:
		pick := mains[max(0, slices.IndexFunc(mains, func(m string) bool {
			return m == p.Name || strings.Contains(m, "server") || strings.Contains(m, "mcp")
		}))]
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

func isGoMain(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "package "); ok {
				if strings.TrimSpace(name) == "main" {
					return true
				}
				break
			}
		}
	}
	return false
}

func detectRust(dir string) Project {
	p := Project{
		Kind:    "rust",
		Name:    filepath.Base(dir),
		Build:   "cargo build",
		Include: []string{"**/*.rs", "Cargo.toml", "Cargo.lock"},
		Exclude: []string{"target/**"},
	}
	if bins := cargoBins(dir); len(bins) > 0 {
		p.Name = bins[0]
	} else {
		p.Notes = append(p.Notes, "No package name in Cargo.toml: check run.command.")
	}
	p.Run = []string{"target/debug/" + p.Name}
	return p
}

// packageJSON is what detection reads of a package.json (json matches the keys without tags).
type packageJSON struct {
	Name, Main, Version           string
	Bin                           json.RawMessage
	Scripts                       map[string]string
	Dependencies, DevDependencies map[string]string
}

// binEntry is the file "bin" names: the string, or the command named like
// the package (else the first).
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
	return bins[slices.Sorted(maps.Keys(bins))[0]]
}

// unscoped is a package name without its @scope/.
func unscoped(name string) string { return name[strings.LastIndex(name, "/")+1:] }

// readPackageJSON reads dir/package.json; zero when it is missing or bad.
func readPackageJSON(dir string) packageJSON {
	var m packageJSON
	b, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	_ = json.Unmarshal(b, &m)
	return m
}

// tsConfig is what detection reads of tsconfig.json, following relative
// "extends"; OutDir and RootDir are slash paths relative to the project.
type tsConfig struct {
	Found           bool
	OutDir, RootDir string
	NoEmitOnError   bool
	Major           int // TypeScript's major version, from node_modules or package.json; 0 if unknown
}

// ownOutDir is OutDir when it lies inside the project, else "".
func (ts tsConfig) ownOutDir() string {
	if ts.OutDir == "." || strings.HasPrefix(ts.OutDir, "../") {
		return ""
	}
	return ts.OutDir
}

// readTSConfig reads dir/tsconfig.json, which tsc reads as JSONC.
func readTSConfig(dir string) tsConfig {
	ts := tsConfig{Major: typescriptMajor(dir)}
	readTSConfigFile(dir, filepath.Join(dir, "tsconfig.json"), &ts, 0)
	return ts
}

// typescriptMajor is the installed TypeScript's major version, else package.json's; 0 if unknown.
func typescriptMajor(dir string) int {
	m := readPackageJSON(dir)
	v := cmp.Or(readPackageJSON(filepath.Join(dir, "node_modules", "typescript")).Version,
		m.DevDependencies["typescript"], m.Dependencies["typescript"])
	v = strings.TrimLeft(v, "^~>=v ")
	n, _ := strconv.Atoi(v[:len(v)-len(strings.TrimLeft(v, "0123456789"))])
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
	bases := []string{""}
	if json.Unmarshal(c.Extends, &bases[0]) != nil {
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
			j = min(j, len(b)-1)
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
			if k := len(bytes.TrimRight(out, " \t\n\r")) - 1; k >= 0 && out[k] == ',' {
				out = append(out[:k], out[k+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// tsOutput is the file tsc writes for the slash path src: through rootDir
// into outDir. Without rootDir, TypeScript 6+ uses tsconfig.json's folder,
// earlier versions the sources' common folder (taken here as src's own).
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
	if root == "." {
		return path.Join(ts.OutDir, out)
	}
	if rel, ok := strings.CutPrefix(out, root+"/"); ok {
		return path.Join(ts.OutDir, rel)
	}
	return ""
}

// tsEntrySource is index, server or main (.ts, .mts) in rootDir, src/ or the root.
func tsEntrySource(dir string, ts tsConfig) string {
	folders := []string{"src", "."}
	if ts.RootDir != "" {
		folders = []string{ts.RootDir}
	}
	var names []string
	for _, f := range folders {
		for _, base := range []string{"index", "server", "main"} {
			names = append(names, path.Join(f, base+".ts"), path.Join(f, base+".mts"))
		}
	}
	return firstExisting(dir, names...)
}

// tsSources lists the TypeScript sources, skipping node_modules, dot folders and the outDir.
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
		if slices.Contains([]string{".ts", ".tsx", ".mts", ".cts"}, path.Ext(rel)) && !strings.HasSuffix(rel, ".d.ts") {
			srcs = append(srcs, rel)
		}
		return nil
	})
	return srcs
}

// NodeEntryWarning warns when run starts node on a missing script that tsc will not write either.
func NodeEntryWarning(dir string, run config.Command) string {
	sr, ok := scriptOf(run.Argv, dir)
	if !ok || run.Shell || len(run.Argv) < 2 || filepath.Base(run.Argv[0]) != "node" {
		return ""
	}
	abs := config.AbsFrom(sr.dir, sr.script)
	if _, err := os.Stat(abs); err == nil {
		return ""
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		rel = sr.script
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

// projectOutputs is tsconfig.json's outDir, absolute: build output, never a source to watch.
func projectOutputs(dir string) []string {
	if o := readTSConfig(dir).ownOutDir(); o != "" {
		return []string{filepath.Join(dir, filepath.FromSlash(o))}
	}
	return nil
}

func detectNode(dir string) Project {
	m := readPackageJSON(dir)
	ts := readTSConfig(dir)
	p := Project{Kind: "node", Name: cmp.Or(unscoped(m.Name), filepath.Base(dir))}
	src := ""
	if ts.Found {
		p.Kind = "typescript"
		src = tsEntrySource(dir, ts)
	}
	buildScript, hasBuild := m.Scripts["build"]
	if hasBuild {
		p.Build = "npm run build"
	}
	// A build script in watch mode would never exit: TypeScript builds with
	// tsc once instead; otherwise the user says how.
	if w := watchModeBuild(dir, config.Command{Argv: []string{p.Build}, Shell: true}); hasBuild && w != nil {
		buildScript, hasBuild, p.Build = "", false, ""
		instead := "init wrote no build.command; add one that builds once (" + w.instead + ")"
		if ts.Found {
			instead = "init builds with tsc, once, instead"
		}
		p.Notes = append(p.Notes, fmt.Sprintf("package.json's build script runs in watch mode (%s): it never exits, so every call would wait on it. mcpflow watches and rebuilds by itself: %s.", w.part, instead))
	}
	// The entry point: bin, then what tsc writes for the source entry, then main.
	clean := func(s string) string { return path.Clean(strings.TrimPrefix(filepath.ToSlash(s), "./")) }
	var entry, why string
	lone := firstExisting(dir, "index.js", "server.js", "main.js", "index.mjs", "server.mjs")
	switch bin, out := m.binEntry(), tsOutput(ts, src); {
	case bin != "":
		entry, why = clean(bin), `"bin" in package.json`
	case ts.Found && out != "":
		entry, why = out, "tsc's output for "+src+", through tsconfig.json's rootDir and outDir"
	case m.Main != "":
		entry, why = clean(m.Main), `"main" in package.json`
	case lone != "":
		entry, why = lone, "the only script found"
	default:
		entry = "index.js"
		p.Notes = append(p.Notes, `No "bin", "main", tsconfig.json output or index.js found: set run.command to your server's entry point.`)
	}
	p.Run, p.RunWhy = []string{"node", entry}, why
	if ts.Found {
		if !hasBuild {
			p.Build = "npx --no -- tsc"
		}
		if !ts.NoEmitOnError {
			// Without it, tsc writes JavaScript even when type-checking fails.
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
		if w := NodeEntryWarning(dir, config.Command{Argv: p.Run}); w != "" {
			p.Notes = append(p.Notes, w+".")
		}
	} else if !exists(dir, entry) && p.Build == "" {
		p.Notes = append(p.Notes, fmt.Sprintf("run.command starts %s (%s), which does not exist.", entry, why))
	}
	if _, script := m.Scripts["build"]; p.Build == "" && !script { // a build script in watch mode: the note says what to write
		p.Build = `find . -path ./node_modules -prune -o -path './.*' -prune -o \( -name '*.js' -o -name '*.mjs' -o -name '*.cjs' \) -print0 | xargs -0 -n1 node --check`
		p.BuildNotes = append(p.BuildNotes, checkStepNote)
	}
	p.Include = []string{"**/*.ts", "**/*.mts", "**/*.cts", "**/*.js", "**/*.mjs", "**/*.cjs", "**/*.json"}
	p.Exclude = []string{"node_modules/**", "package-lock.json"}
	if p.Build != "" {
		// The build writes these folders: never watch them.
		outs := []string{ts.ownOutDir()}
		for _, e := range []string{m.binEntry(), m.Main, entry} {
			if d := path.Dir(clean(e)); e != "" && d != "." && !strings.HasPrefix(d, "../") && !isSourceDir(d, ts, src) {
				outs = append(outs, d)
			}
		}
		for _, o := range outs {
			if o != "" && !slices.Contains(p.Exclude, o+"/**") {
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

// checkStepNote explains the build init writes for an interpreted server.
const checkStepNote = "A syntax check of the sources: on an error, the old server keeps serving and the agent reads file:line."

func detectPython(dir string) Project {
	var m struct {
		Project struct {
			Name    string            `toml:"name"`
			Scripts map[string]string `toml:"scripts"`
		} `toml:"project"`
		BuildSystem map[string]any `toml:"build-system"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	_ = toml.Unmarshal(b, &m)
	p := Project{
		Kind:    "python",
		Name:    cmp.Or(m.Project.Name, filepath.Base(dir)),
		Include: []string{"**/*.py", "pyproject.toml"},
		Exclude: []string{".venv/**", "**/__pycache__/**", "**/*.egg-info/**"},
	}
	// The interpreter: uv's, else the project's .venv, else python3 from PATH.
	e := pyEnv{dir: dir, uv: exists(dir, "uv.lock"), py: []string{"python3"}}
	e.venv = !e.uv && exists(dir, ".venv/bin/python")
	switch {
	case e.uv:
		e.py = []string{"uv", "run", "python"}
	case e.venv:
		e.py = []string{".venv/bin/python"}
	}
	// uv installs the project and its scripts when it has a build system.
	e.installed = e.uv && m.BuildSystem != nil
	// [project.scripts], then a package with __main__.py, then a top-level script.
	cands := slices.Concat(e.scripts(m.Project.Scripts, p.Name), e.mainPackages(), e.topScripts())
	if len(cands) == 0 {
		p.Run = append(slices.Clone(e.py), "server.py")
		p.Notes = append(p.Notes, "No [project.scripts], package with __main__.py or top-level script found: set run.command to your server.")
		return p
	}
	p.Build = "find . -path './.*' -prune -o -name '*.py' -print0 | xargs -0 " + strings.Join(e.py, " ") + " -m py_compile"
	p.BuildNotes = append(p.BuildNotes, checkStepNote)
	pick := cands[0]
	p.Run, p.Env, p.RunWhy = pick.run, pick.env, pick.what
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
	run       []string
	env       map[string]string
	what, why string
}

// srcPath is the environment that lets pkg be imported from src/.
func (e pyEnv) srcPath(pkg string) map[string]string {
	if !e.installed && !exists(e.dir, pkg) && exists(e.dir, "src/"+pkg) {
		return map[string]string{"PYTHONPATH": "src"}
	}
	return nil
}

// scripts are the [project.scripts] of the project called name, the likeliest server first.
func (e pyEnv) scripts(scripts map[string]string, name string) []pyCandidate {
	keys := slices.Sorted(maps.Keys(scripts))
	slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(scriptRank(a, name), scriptRank(b, name)) })
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

// mainPackages are the packages with a __main__.py, at the top or under src/.
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

// topScripts are the top-level scripts, server.py, main.py, app.py first.
func (e pyEnv) topScripts() []pyCandidate {
	var scripts []string
	top, _ := filepath.Glob(filepath.Join(e.dir, "*.py"))
	for _, f := range top {
		if base := filepath.Base(f); !slices.Contains([]string{"setup.py", "conftest.py", "noxfile.py", "__init__.py"}, base) {
			scripts = append(scripts, base)
		}
	}
	slices.SortStableFunc(scripts, func(a, b string) int { return cmp.Compare(scriptFileRank(a), scriptFileRank(b)) })
	var cands []pyCandidate
	why := "it is the only top-level script"
	if len(scripts) > 1 {
		why = "it is the most likely top-level script (server.py, main.py, app.py, in that order)"
	}
	for _, s := range scripts {
		run := append(slices.Clone(e.py), s)
		if e.uv {
			run = []string{"uv", "run", s}
		}
		cands = append(cands, pyCandidate{run: run, what: s, why: why})
		why = "" // only the first is picked
	}
	return cands
}

// scriptRank puts the script named like the project first, then those named mcp or server.
func scriptRank(name, project string) int {
	switch {
	case name == project:
		return 0
	case strings.Contains(name, "mcp"), strings.Contains(name, "server"):
		return 1
	}
	return 2
}

// scriptFileRank puts server.py, main.py and app.py first, then files named server or mcp.
func scriptFileRank(name string) int {
	if i := slices.Index([]string{"server.py", "main.py", "app.py"}, name); i >= 0 {
		return i
	}
	if strings.Contains(name, "server") || strings.Contains(name, "mcp") {
		return 3
	}
	return 4
}

// ZeroConfig is the config of "mcpflow watch -- CMD", with detection's watch set.
func ZeroConfig(dir string, argv []string, build string) *config.Config {
	c := config.Default(dir)
	c.Run.Command = config.Command{Argv: argv}
	if build != "" {
		c.Build.Command = config.Command{Argv: []string{build}, Shell: true}
	}
	p := detectManifest(c.Dir)
	if p.Kind != "" {
		c.Watch.Include, c.Watch.Exclude = p.Include, p.Exclude
	}
	return c
}

// projectWarnings warn about a node entry point that will not exist and a watched tsc outDir.
func projectWarnings(cfg *config.Config) []string {
	var out []string
	if w := NodeEntryWarning(cfg.Run.Cwd, cfg.Run.Command); w != "" && !builtByOther(cfg) {
		out = append(out, w)
	}
	if d := watchedOutputDir(cfg); d != "" {
		out = append(out, fmt.Sprintf("the watch globs cover %s/, where the build writes (tsconfig.json outDir): mcpflow ignores it so a build cannot trigger the next one, but add \"%s/**\" to watch.exclude to make that explicit", d, d))
	}
	return out
}

// builtByOther reports whether node's missing script is what a build other than tsc writes.
func builtByOther(cfg *config.Config) bool {
	sr, ok := scriptOf(cfg.Run.Command.Argv, cfg.Run.Cwd)
	return ok && !cfg.Build.Command.IsZero() && !readTSConfig(cfg.Dir).Found && inAny(outputFolders(cfg), config.AbsFrom(sr.dir, sr.script))
}

// watchedOutputDir is tsconfig.json's outDir when the watch globs cover a file the build writes there.
func watchedOutputDir(cfg *config.Config) string {
	rel := readTSConfig(cfg.Dir).ownOutDir()
	if !cfg.Watch.Enabled || rel == "" {
		return ""
	}
	probes := []string{"index.js", "index.mjs", "index.cjs", "index.d.ts", "index.js.map", "sub/index.js"}
	files, _ := os.ReadDir(filepath.Join(cfg.Dir, filepath.FromSlash(rel)))
	for _, f := range files[:min(len(files), 50)] {
		probes = append(probes, f.Name())
	}
	for _, p := range probes {
		if f := rel + "/" + p; matchesAny(cfg.Watch.Include, f) && !matchesAny(cfg.Watch.Exclude, f) {
			return rel
		}
	}
	return ""
}

// serving is what a rough text search of the sources says about how the
// server speaks: marks read "StreamableHTTPServerTransport at
// src/index.ts:3", PortAt and PathAt "file:line"; "" when not found.
type serving struct {
	HTTP        string // a Streamable HTTP server transport
	Stdio       string // a stdio server transport
	SSE         string // the legacy HTTP+SSE server transport, which mcpflow does not speak
	Env         string // a read of the PORT environment variable
	Port        int    // a literal port where the server listens; 0 if none
	PortAt      string
	Path        string // the URL path it serves, when the source names one; "" unknown
	PathAt      string
	DefaultPort int // the framework's port when the source names none (FastMCP's 8000); 0 if none
}

// OnlyHTTP reports a server with Streamable HTTP and no stdio: it needs run.url.
func (s serving) OnlyHTTP() bool { return s.HTTP != "" && s.Stdio == "" }

// OnlySSE reports a server with only the legacy HTTP+SSE transport, which mcpflow does not speak.
func (s serving) OnlySSE() bool { return s.SSE != "" && s.HTTP == "" && s.Stdio == "" }

// URL is run.url for an HTTP server: {port} when it reads $PORT, else its
// port, else the framework's default, else {port} with sure false.
func (s serving) URL() (url, why string, sure bool) {
	port, sure := config.PortPlaceholder, true
	switch {
	case s.Env != "":
		why = fmt.Sprintf("it reads $PORT (%s)", s.Env)
	case s.Port != 0:
		port, why = strconv.Itoa(s.Port), fmt.Sprintf("it listens on port %d (at %s)", s.Port, s.PortAt)
	case s.DefaultPort != 0:
		port, why = strconv.Itoa(s.DefaultPort), fmt.Sprintf("the source names no port: %d is FastMCP's default", s.DefaultPort)
	default:
		why, sure = "init found no port in the source: {port} works if the server listens on $PORT; otherwise write its port in run.url", false
	}
	if s.PathAt != "" {
		why += fmt.Sprintf("; path %s (at %s)", s.Path, s.PathAt)
	}
	return "http://127.0.0.1:" + port + cmp.Or(s.Path, "/mcp"), why, sure
}

// servingMark is a pattern; with needs, it counts only in a file that
// holds one of needs (the SDK's import: a usage text is no transport).
type servingMark struct {
	re    *regexp.Regexp
	needs []string
}

type servingLang struct {
	exts                  []string
	isTest                func(base string) bool
	http, stdio, sse, env []servingMark
	port                  []servingMark // group 1: the port
	path                  []servingMark // group 1: the path
	defaultPort           int
}

func marks(needs []string, res ...string) []servingMark {
	out := make([]servingMark, len(res))
	for i, r := range res {
		out[i] = servingMark{regexp.MustCompile(r), needs}
	}
	return out
}

// servingLangs are scanServing's languages by project kind, compiled on first use.
var servingLangs = sync.OnceValue(func() map[string]*servingLang {
	jsSDK := []string{"@modelcontextprotocol/", "fastmcp"}
	pySDK := []string{"mcp"} // mcp, fastmcp, FastMCP
	goSDK := []string{"modelcontextprotocol/go-sdk", "mark3labs/mcp-go"}
	js := &servingLang{
		exts: []string{".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs"},
		isTest: func(b string) bool {
			return strings.HasSuffix(b, ".d.ts") || strings.Contains(b, ".test.") || strings.Contains(b, ".spec.")
		},
		// SDK 1.x's StreamableHTTPServerTransport, 2.x's WebStandard… and
		// NodeStreamableHTTPServerTransport, fastmcp's start({ transportType: "httpStream" }).
		http:  marks(jsSDK, `\w*StreamableHTTPServerTransport\b`, `\btransportType:\s*['"]httpStream['"]`),
		stdio: marks(jsSDK, `\bStdioServerTransport\b`, `\btransportType:\s*['"]stdio['"]`),
		sse:   marks(jsSDK, `\bSSEServerTransport\b`),
		env: marks(nil, `process\.env\.PORT\b`, `process\.env\[\s*['"]PORT['"]\s*\]`,
			`\{[^}]*\bPORT\b[^}]*\}\s*=\s*process\.env\b`, `\b(?:Bun|Deno)\.env(?:\.PORT\b|\.get\(\s*['"]PORT['"])`),
		port: marks(nil, `\.listen\(\s*(\d{2,5})\b`, `(?i)\bport\s*[:=]\s*(\d{2,5})\b`),
		path: marks(nil, "\\.(?:post|all|use|route)\\(\\s*['\"`](/[\\w\\-./]*)['\"`]"),
	}
	py := &servingLang{
		exts: []string{".py"},
		isTest: func(b string) bool {
			return strings.HasPrefix(b, "test_") || strings.HasSuffix(b, "_test.py") || b == "conftest.py"
		},
		http: marks(pySDK, `\btransport\s*=\s*['"](?:http|streamable-http|streamable_http)['"]`,
			`\.run\(\s*['"](?:http|streamable-http)['"]`, `\b(?:streamable_)?http_app\(`,
			`\brun_(?:streamable_)?http_async\b`, `\bStreamableHTTPSessionManager\b`),
		stdio: append(marks(pySDK, `\btransport\s*=\s*['"]stdio['"]`, `\.run\(\s*['"]stdio['"]`,
			`\bstdio_server\(`, `\brun_stdio_async\b`),
			marks([]string{"FastMCP"}, `\.run\(\s*\)`)...), // FastMCP's run() serves stdio
		sse:         marks(pySDK, `\btransport\s*=\s*['"]sse['"]`, `\.run\(\s*['"]sse['"]`, `\bsse_app\(`, `\brun_sse_async\b`),
		env:         marks(nil, `\benviron\[\s*['"]PORT['"]`, `\benviron\.get\(\s*['"]PORT['"]`, `\bgetenv\(\s*['"]PORT['"]`),
		port:        marks(nil, `(?i)\bport\s*[:=]\s*(\d{2,5})\b`),
		path:        marks(nil, `\b(?:path|streamable_http_path)\s*=\s*['"](/[\w\-./]*)['"]`),
		defaultPort: 8000,
	}
	goLang := &servingLang{
		exts:   []string{".go"},
		isTest: func(b string) bool { return strings.HasSuffix(b, "_test.go") },
		// The Go SDK's handler, and mark3labs/mcp-go's server.
		http:  marks(goSDK, `\bNewStreamableHTTPHandler\b`, `\bNewStreamableHTTPServer\b`),
		stdio: marks(goSDK, `\bStdioTransport\b`, `\bNewStdioTransport\b`, `\bServeStdio\b`),
		sse:   marks(goSDK, `\bNewSSEHandler\b`, `\bNewSSEServer\b`),
		env:   marks(nil, `\b(?:Getenv|LookupEnv)\(\s*"PORT"\s*\)`),
		// Where it listens first: a DSN's "host:5432" is no server's.
		port: marks(nil, `(?:Listen\w*\(|Addr:|Start\()\s*"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\])?:(\d{2,5})"`,
			`"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\])?:(\d{2,5})"`),
		path: marks(nil, `\bHandle(?:Func)?\(\s*"(?:[A-Z]+ +)?(/[\w\-./]*)"`),
	}
	rust := &servingLang{
		exts:   []string{".rs"},
		isTest: func(string) bool { return false },
		http:   marks([]string{"rmcp"}, `\bStreamableHttpService\b`),
		stdio:  marks([]string{"rmcp"}, `\bstdio\(\)`),
		env:    marks(nil, `\bvar\(\s*"PORT"\s*\)`),
		port:   marks(nil, `"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]):(\d{2,5})"`),
		path:   marks(nil, `\.(?:nest_service|route_service|route)\(\s*"(/[\w\-./]*)"`),
	}
	return map[string]*servingLang{"node": js, "typescript": js, "python": py, "go": goLang, "rust": rust}
})

// Bounds of scanServing: files read, bytes of each, entries walked.
const (
	servingMaxFiles   = 400
	servingMaxBytes   = 512 << 10
	servingMaxEntries = 20000
)

// servingSkipDirs are the folders scanServing never enters: dependencies, outputs, tests, examples.
var servingSkipDirs = []string{"node_modules", "vendor", "testdata", "target", "dist", "build", "out", "venv", "__pycache__",
	"test", "tests", "__tests__", "example", "examples", "site-packages"}

// scanServing searches the project's sources, within the bounds above, for how its server speaks.
func scanServing(dir, kind string) serving {
	lang := servingLangs()[kind]
	if lang == nil {
		return serving{}
	}
	files := servingFiles(dir, lang)
	texts := map[string]string{}
	for _, f := range files {
		if fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
			b, _ := io.ReadAll(io.LimitReader(fh, servingMaxBytes))
			fh.Close()
			texts[f] = string(b)
		}
	}
	// The transports: in a Go module, its main packages' choice when they
	// make one (another package may hold a transport main does not use).
	var s serving
	httpFile := ""
	find := func(files []string) {
		for _, f := range files {
			if s.HTTP == "" {
				s.HTTP, httpFile = findMark(lang.http, f, texts[f]), f
			}
			if s.Stdio == "" {
				s.Stdio = findMark(lang.stdio, f, texts[f])
			}
			if s.SSE == "" {
				s.SSE = findMark(lang.sse, f, texts[f])
			}
		}
	}
	if kind == "go" {
		mains := map[string]bool{} // the root's or cmd/X's folder → it holds package main
		find(slices.DeleteFunc(slices.Clone(files), func(f string) bool {
			d := path.Dir(f)
			if _, ok := mains[d]; !ok && (d == "." || path.Dir(d) == "cmd") {
				mains[d] = isGoMain(filepath.Join(dir, filepath.FromSlash(d)))
			}
			return !mains[d]
		}))
	}
	if s.HTTP == "" && s.Stdio == "" && s.SSE == "" {
		find(files)
	}
	for _, f := range files {
		if s.Env == "" {
			s.Env = findMark(lang.env, f, texts[f])
		}
	}
	if s.HTTP == "" {
		return s
	}
	s.DefaultPort = lang.defaultPort
	// Where it listens and at what path: the transport's file first.
	order := append([]string{httpFile}, slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f == httpFile })...)
	var paths, ats []string
	for _, f := range order {
		for _, pm := range lang.port {
			if m := pm.re.FindStringSubmatchIndex(texts[f]); m != nil && s.Port == 0 {
				if n, err := strconv.Atoi(texts[f][m[2]:m[3]]); err == nil && n > 0 && n < 65536 {
					s.Port, s.PortAt = n, lineOf(f, texts[f], m[0])
				}
			}
		}
		for _, pm := range lang.path {
			for _, m := range pm.re.FindAllStringSubmatchIndex(texts[f], 20) {
				if p := texts[f][m[2]:m[3]]; !slices.Contains(paths, p) {
					paths, ats = append(paths, p), append(ats, lineOf(f, texts[f], m[0]))
				}
			}
		}
	}
	// The path: one with "mcp" in it, else the only one named.
	i := slices.IndexFunc(paths, func(p string) bool { return strings.Contains(strings.ToLower(p), "mcp") })
	if i < 0 && len(paths) == 1 {
		i = 0
	}
	if i >= 0 {
		s.Path, s.PathAt = paths[i], ats[i]
	}
	return s
}

// servingFiles lists the slash paths of lang's sources that scanServing reads.
func servingFiles(dir string, lang *servingLang) []string {
	outDir := readTSConfig(dir).OutDir
	var files []string
	seen := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return filepath.SkipDir
		}
		if seen++; len(files) >= servingMaxFiles || seen > servingMaxEntries {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") || rel == outDir || slices.Contains(servingSkipDirs, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if slices.Contains(lang.exts, path.Ext(name)) && !lang.isTest(name) {
			files = append(files, rel)
		}
		return nil
	})
	return files
}

// findMark is the first of ms in text, as "MATCH at f:LINE"; "" if none.
func findMark(ms []servingMark, f, text string) string {
	for _, m := range ms {
		if m.needs != nil && !slices.ContainsFunc(m.needs, func(n string) bool { return strings.Contains(text, n) }) {
			continue
		}
		if loc := m.re.FindStringIndex(text); loc != nil {
			return strings.TrimLeft(text[loc[0]:loc[1]], ".") + " at " + lineOf(f, text, loc[0])
		}
	}
	return ""
}

// lineOf is "f:LINE" for the byte offset at in text.
func lineOf(f, text string, at int) string {
	return fmt.Sprintf("%s:%d", f, strings.Count(text[:at], "\n")+1)
}
