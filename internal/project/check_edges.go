package project

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/pelletier/go-toml/v2"

	"github.com/mcpflow/mcpflow/internal/builder"
	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/mux"
	"github.com/mcpflow/mcpflow/internal/watcher"
)

// commandChecks checks the folder, program and script of run.command (or
// [cli]): the notes say where its programs are, the warnings what is wrong.
func commandChecks(v checkView) (notes, warnings []string) {
	cfg := v.cfg
	warn := func(w string) {
		if w != "" {
			warnings = append(warnings, w)
		}
	}
	program := func(key, name, cwd string) {
		n, w := programStatus(v, key, name, cwd)
		if n != "" {
			notes = append(notes, n)
		}
		warn(w)
	}
	key, cwdKey, cwd, argv := "run.command", "run.cwd", cfg.Run.Cwd, cfg.Run.Command.Argv
	switch c := cfg.Run.Command; {
	case cfg.CLI != nil:
		program("cli.schema", cfg.CLI.Schema[0], cfg.CLI.Cwd)
		if cfg.CLI.Command[0] != cfg.CLI.Schema[0] {
			program("cli.command", cfg.CLI.Command[0], cfg.CLI.Cwd)
		}
		key, cwdKey, cwd, argv = "cli.schema", "cli.cwd", cfg.CLI.Cwd, cfg.CLI.Schema
	case c.IsZero():
		return nil, nil
	case c.Shell:
		argv = nil // a script: no program or script file to look for
	default:
		program("run.command", c.Argv[0], cfg.Run.Cwd)
	}
	if w := cwdProblem(v, cwdKey, cwd); w != "" {
		return notes, []string{w}
	}
	warn(scriptProblem(v, key, argv, cwd))
	return notes, warnings
}

// cwdProblem warns when the working folder set by key is no folder (a build may create it).
func cwdProblem(v checkView, key, dir string) string {
	st, err := os.Stat(dir)
	switch {
	case err == nil && st.IsDir():
		return ""
	case err == nil:
		return v.at(key, "%s is not a folder; the server starts in this folder: set %s to a folder (relative to the config file)", dir, key)
	case !v.cfg.Build.Command.IsZero():
		return v.at(key, "%s does not exist yet: fine if build.command creates it; otherwise the server cannot start there: fix %s", dir, key)
	}
	return v.at(key, "%s does not exist, so the server cannot start there (every program would look missing): fix %s, or create the folder", dir, key)
}

// programStatus warns when the program named by key cannot be found, on
// PATH or among buildProducts; else its note says where the program is.
func programStatus(v checkView, key, name, cwd string) (note, warning string) {
	full := v.table + key
	if !strings.ContainsRune(name, '/') && !strings.ContainsRune(name, filepath.Separator) {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", v.at(key, "%s %q is not on PATH", full, name)
		}
		return fmt.Sprintf("%s %s: on PATH (%s)", full, name, p), ""
	}
	p := config.AbsFrom(cwd, name)
	if _, err := os.Stat(p); err == nil {
		return fmt.Sprintf("%s %s: exists (%s)", full, name, p), ""
	}
	if v.cfg.Build.Command.IsZero() {
		return "", v.at(key, "%s %q not found (%s) and there is no build step to make it", full, name, p)
	}
	products := buildProducts(v.cfg)
	if len(products) == 0 {
		return "", v.at(key, "%s %q does not exist yet (%s); fine if the build writes it", full, name, p)
	}
	var files, names []string
	for _, o := range products {
		if o.path == p || o.dir && strings.HasPrefix(p, o.path+string(filepath.Separator)) {
			return fmt.Sprintf("%s %s: not built yet; the build writes it (%s)", full, name, o.how), ""
		}
		if !o.dir {
			rel := o.path
			if r, err := filepath.Rel(cwd, o.path); err == nil && !strings.HasPrefix(r, "..") {
				rel = r
			}
			files = append(files, rel)
			names = append(names, filepath.Base(o.path))
		}
	}
	hint := ""
	if s := config.Suggest(filepath.Base(p), names); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", files[slices.Index(names, s)])
	}
	writes := "writes into " + products[0].path + string(filepath.Separator)
	if len(files) > 0 {
		writes = "writes " + strings.Join(files, ", ")
	}
	return "", v.at(key, "%s %q does not exist (%s) and the build does not write it: it %s (%s); fix %s or the build's output%s", full, name, p, writes, products[0].how, full, hint)
}

// product is a file or folder a build writes, and what says so.
type product struct {
	path, how string // path is absolute
	dir       bool
}

// buildProducts are what cfg's build writes, as far as its command tells:
// go build -o, cargo build's binaries, tsc's outDir, other tools' -o,
// --outdir or --outfile. nil when it cannot tell (make, a script).
func buildProducts(cfg *config.Config) []product {
	var out []product
	add := func(p string, dir bool, how string) {
		out = append(out, product{path: config.AbsFrom(cfg.Dir, p), dir: dir, how: how})
	}
	for _, words := range commandWords(cfg.Build.Command) {
		if len(words) == 0 {
			continue
		}
		line := strings.Join(words, " ")
		cargo := path.Base(filepath.ToSlash(words[0])) == "cargo" && slices.Contains(words, "build")
		if !cargo && (hasWord(line, "tsc") || len(tscScripts(cfg.Dir, line)) > 0) {
			for _, d := range projectOutputs(cfg.Dir) {
				out = append(out, product{path: d, dir: true, how: line + " (tsconfig.json outDir)"})
			}
		}
		dir, profile := "target", "debug" // cargo's
		for i, w := range words {
			name, val, attached := strings.Cut(w, "=")
			if !attached && i+1 < len(words) {
				val = words[i+1]
			}
			switch {
			case cargo && (w == "--release" || w == "-r"):
				profile = "release"
			case cargo && name == "--profile" && val != "dev":
				profile = val
			case cargo && name == "--target-dir":
				dir = val
			case cargo || val == "": // cargo has no -o; an option without a value names nothing
			case name == "-o" || name == "--outfile" || name == "--out-file":
				st, err := os.Stat(config.AbsFrom(cfg.Dir, val))
				add(val, strings.HasSuffix(val, "/") || err == nil && st.IsDir(), line)
			case name == "--outdir" || name == "--out-dir" || name == "--outDir":
				add(val, true, line)
			}
		}
		if cargo {
			for _, b := range cargoBins(cfg.Dir) {
				add(filepath.Join(dir, profile, b), false, line)
			}
		}
	}
	return out
}

// tscScripts are the package.json scripts line runs (npm run NAME, ...) that run tsc.
func tscScripts(dir, line string) []string {
	var out []string
	for name, script := range readPackageJSON(dir).Scripts {
		if (hasWord(line, "run "+name) || hasWord(line, "pnpm "+name) || hasWord(line, "yarn "+name)) && hasWord(script, "tsc") {
			out = append(out, script)
		}
	}
	return out
}

// cargoBins are the [[bin]] names of dir's Cargo.toml, else the package's.
func cargoBins(dir string) []string {
	var m struct {
		Package struct {
			Name string `toml:"name"`
		} `toml:"package"`
		Bin []struct {
			Name string `toml:"name"`
		} `toml:"bin"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "Cargo.toml"))
	if err != nil || toml.Unmarshal(b, &m) != nil {
		return nil
	}
	var out []string
	for _, b := range m.Bin {
		if b.Name != "" {
			out = append(out, b.Name)
		}
	}
	if len(out) == 0 && m.Package.Name != "" {
		out = append(out, m.Package.Name)
	}
	return out
}

// scriptProblem warns when argv gives an interpreter other than node a script that does not exist.
func scriptProblem(v checkView, key string, argv []string, cwd string) string {
	sr, ok := scriptOf(argv, cwd)
	if !ok || path.Base(filepath.ToSlash(sr.prog)) == "node" {
		return ""
	}
	abs := config.AbsFrom(sr.dir, sr.script)
	if _, err := os.Stat(abs); err == nil {
		return ""
	}
	hint := ""
	entries, _ := os.ReadDir(filepath.Dir(abs))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if s := config.Suggest(filepath.Base(abs), names); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", filepath.Join(filepath.Dir(sr.script), s))
	}
	if !v.cfg.Build.Command.IsZero() {
		if inAny(outputFolders(v.cfg), abs) {
			return ""
		}
		return v.at(key, "%s runs %s, which does not exist yet (%s): fine if build.command writes it; otherwise fix the file name in %s%s", sr.prog, sr.script, abs, key, hint)
	}
	return v.at(key, "%s runs %s, which does not exist (%s), so the server would exit at once: fix the file name in %s%s", sr.prog, sr.script, abs, key, hint)
}

// outputFolders are the folders a build writes (absolute): usual ones, tsc's outDir, -o/--outdir.
func outputFolders(cfg *config.Config) []string {
	var out []string
	for _, d := range builder.OutputDirs() {
		out = append(out, filepath.Join(cfg.Dir, filepath.FromSlash(d)))
	}
	return append(out, buildOutputs(cfg)...)
}

// watchModeWarning warns about a build in watch mode: every start would wait on it.
func watchModeWarning(v checkView) string {
	w := watchModeBuild(v.cfg.Dir, v.cfg.Build.Command)
	if w == nil {
		return ""
	}
	return v.at("build.command", "runs in watch mode: %s never exits, so mcpflow would wait on it before every start and every call would hang (until build.timeout, %s); mcpflow watches the files and rebuilds by itself, so build once instead: %s", w.describe(), config.DurationText(v.cfg.Build.Timeout), w.instead)
}

// dataFileWarnings warns about watched files that look like data a server writes as it runs.
func dataFileWarnings(v checkView, files []string) []string {
	outs := outputFolders(v.cfg)
	var found, globs []string
	for _, f := range files {
		// A build's output is watchedBuildOutputs'.
		if g, ok := dataFile(f); ok && !inAny(outs, filepath.Join(v.cfg.Dir, filepath.FromSlash(f))) {
			found = append(found, f)
			if !slices.Contains(globs, g) {
				globs = append(globs, g)
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	list := strings.Join(found[:min(len(found), 3)], ", ")
	if len(found) > 3 {
		list += fmt.Sprintf(" and %d more", len(found)-3)
	}
	return []string{v.at("watch.include", "covers %s, which look like data a server writes, not source: if the server writes them, each write rebuilds and restarts it, in a loop; add %s to watch.exclude, or keep the data outside the watched folders (under .mcpflow/, which is never watched)", list, config.TOMLStrings(globs))}
}

// dataFile reports whether the slash path f looks like data written at run
// time (a log, a database, a file under data/, tmp/, ...), and its exclude glob.
func dataFile(f string) (string, bool) {
	base := strings.ToLower(path.Base(f))
	ext := path.Ext(base)
	dirs := strings.Split(path.Dir(f), "/")
	for i, d := range dirs {
		if slices.Contains([]string{"data", "tmp", "temp", "logs", "log", "storage", "cache", ".cache", "uploads", "db", "var"}, strings.ToLower(d)) &&
			!slices.Contains(sourceExts, ext) {
			return strings.Join(dirs[:i+1], "/") + "/**", true
		}
	}
	switch {
	case ext == ".log":
		return "**/*.log", true
	case slices.Contains([]string{".db", ".sqlite", ".sqlite3", ".db3", ".jsonl", ".ndjson", ".pid", ".rdb", ".aof", ".pickle", ".pkl", ".parquet"}, ext),
		strings.HasSuffix(base, "-wal"), strings.HasSuffix(base, "-shm"), strings.HasSuffix(base, "-journal"),
		strings.Contains(base, ".log."), // server.log.1
		ext == ".json" && !strings.Contains(f, "/") && !configJSONRE.MatchString(base) && !slices.Contains(configJSONs, base):
		return f, true
	}
	return "", false
}

// sourceExts are the extensions of sources: under data/, such a file is code, not data.
var sourceExts = []string{
	".go", ".rs", ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".py", ".pyi", ".rb",
	".php", ".java", ".kt", ".swift", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".lua", ".sh",
	".pl", ".ex", ".exs", ".zig", ".dart", ".scala", ".sql", ".proto", ".graphql", ".prisma",
}

// configJSONs are the JSON files projects keep at the top as config.
var configJSONs = []string{
	"package.json", "composer.json", "deno.json", "biome.json", "turbo.json", "nx.json",
	"lerna.json", "vercel.json", "renovate.json", "app.json", "angular.json", "project.json",
	"components.json", "wrangler.json", "firebase.json", "server.json", "smithery.json", "cspell.json",
	"typedoc.json", "api-extractor.json", "nodemon.json", "dprint.json", "knip.json", "devcontainer.json",
	"global.json", "openapi.json", "swagger.json", "mcp.json", "dxt.json",
}

// configJSONRE matches more config files: tsconfig.build.json, .eslintrc.json, x.schema.json, ...
var configJSONRE = regexp.MustCompile(`^(?:tsconfig|jsconfig|appsettings\.|\.)|(?:config|rc|-lock|\.lock|\.schema|manifest)\.json$`)

// logFileWarnings warns when mcpflow's log or traffic file (or its FILE.1)
// would be watched: one the watcher does not ignore would restart the server at each line.
func logFileWarnings(v checkView, files []string) []string {
	cfg := v.cfg
	ignored := IgnoredOutputs(cfg)
	var out []string
	for _, lf := range []struct{ key, file string }{{"log.file", cfg.Log.File}, {"log.traffic", cfg.Log.Traffic}} {
		if lf.file == "" {
			continue
		}
		var hit, loop []string
		for _, p := range []string{lf.file, lf.file + ".1"} {
			if rel, ok := watchedPath(cfg, p, files); ok {
				hit = append(hit, rel)
				if !slices.Contains(ignored, p) {
					loop = append(loop, rel)
				}
			}
		}
		if len(hit) == 0 {
			continue
		}
		rel := hit[0]
		what := rel + " lies in the watched folders and watch.include covers it"
		if len(hit) > 1 {
			what = strings.Join(hit, " and ") + " lie in the watched folders and watch.include covers them"
		}
		if len(loop) > 0 {
			out = append(out, v.at(lf.key, "%s: each time mcpflow writes %s the server would rebuild and restart, in a loop; put the file under .mcpflow/ (never watched), e.g. %q, or add %q to watch.exclude", what, strings.Join(loop, " or "), ".mcpflow/"+path.Base(rel), rel+"*"))
		} else {
			out = append(out, v.at(lf.key, "%s: mcpflow ignores its own writes there, but put the file under .mcpflow/ (never watched), e.g. %q, or add %q to watch.exclude to make that explicit", what, ".mcpflow/"+path.Base(rel), rel+"*"))
		}
	}
	return out
}

// watchedPath is p relative to the config's folder, when the file would be
// watched (existing files must be among those scanned, which honour .gitignore).
func watchedPath(cfg *config.Config, p string, scanned []string) (string, bool) {
	rel, err := filepath.Rel(cfg.Dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if !inAny(cfg.Watch.Paths, p) || slices.ContainsFunc(strings.Split(path.Dir(rel), "/"), watcher.BuiltinDir) ||
		!matchesAny(cfg.Watch.Include, rel) || matchesAny(cfg.Watch.Excludes(cfg.Dir), rel) {
		return "", false
	}
	if _, err := os.Stat(p); err == nil && !slices.Contains(scanned, rel) {
		return "", false
	}
	return rel, true
}

// muxNameWarnings warns about a separator that lets a server's tool take
// the name of mcpflow's own (add + server = add_server), and too long server names.
func muxNameWarnings(cfg *config.Config) []string {
	if cfg.Mode() != config.Mux {
		return nil
	}
	sep := cfg.Mux.Separator
	own := mux.ManagementTools()
	if cfg.Relay.CallTool != "" {
		own = append(own, cfg.Relay.CallTool)
	}
	type clash struct{ server, tool, name string }
	var clashes []clash
	var eg []string
	for _, name := range own {
		for j := range len(name) {
			if tool, ok := strings.CutPrefix(name[j:], sep); ok && tool != "" && mux.ValidateName(name[:j], sep) == nil {
				clashes = append(clashes, clash{name[:j], tool, name})
				eg = append(eg, fmt.Sprintf("a server %q with a tool %q would be listed as %s", name[:j], tool, name))
			}
		}
	}
	var out []string
	if len(eg) > 0 {
		out = append(out, cfg.At("mux.separator", "%q makes a server's tools able to take the names of mcpflow's own tools: %s; the mux refuses such a server, but choose a separator these names do not contain, such as %q (the default)", sep, strings.Join(eg, "; "), "__"))
	}
	for _, s := range cfg.Servers {
		key := "servers." + s.Name
		for _, c := range clashes {
			if c.server == s.Name {
				out = append(out, cfg.At(key, "with mux.separator %q, this server's tool %q would be listed as %s, the name of mcpflow's own tool: rename the server or change mux.separator", sep, c.tool, c.name))
			}
		}
		switch room := mux.MaxToolName - len(s.Name) - len(sep); {
		case len(s.Name) > mux.MaxServerName:
			out = append(out, cfg.At(key, "the server name %q is %d characters long: the mux refuses names over %d, so that its tools' names (%s%sTOOL) stay within the %d characters clients accept; shorten it", s.Name, len(s.Name), mux.MaxServerName, s.Name, sep, mux.MaxToolName))
		case room < 16:
			out = append(out, cfg.At(key, "the server name %q with mux.separator %q leaves %d characters for its tools' names, within the %d clients accept: longer tools are left out; shorten the name or the separator", s.Name, sep, max(room, 0), mux.MaxToolName))
		}
	}
	return out
}

// inAny reports whether the absolute path p is one of dirs or lies under one.
func inAny(dirs []string, p string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool {
		return p == d || strings.HasPrefix(p, strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator))
	})
}

// servingWarnings compares run.url with the transport the run command asks
// for, else with what the sources say, and warns when its fixed port is taken.
func servingWarnings(v checkView) []string {
	cfg := v.cfg
	if cfg.CLI != nil || cfg.Run.Command.IsZero() {
		return nil
	}
	root := cfg.Run.Cwd
	kind := projectKind(root)
	if kind == "" && root != cfg.Dir {
		root, kind = cfg.Dir, projectKind(cfg.Dir)
	}
	s := scanServing(root, kind)
	u := cfg.Run.URL
	// The run command's choice, when it makes one, outweighs the source's.
	chosen, by := commandTransport(cfg.Run.Command, cfg.Run.Env)
	var out []string
	want, _, _ := s.URL()
	switch {
	case u == "" && chosen == "http":
		out = append(out, v.at("run.url", "not set, so mcpflow talks to the server on its stdin and stdout, but the run command asks for Streamable HTTP (%s): add url = %s to [run] (where the server answers; {port} is a free port for each start, passed as $PORT), or have the server speak stdio", by, config.TOMLString(want)))
	case u != "" && chosen == "stdio":
		out = append(out, v.at("run.url", "set, but the run command asks for stdio (%s): mcpflow would wait in vain for the server to answer at %s; remove run.url, or have the server serve Streamable HTTP there", by, u))
	case chosen != "":
	case s.OnlySSE():
		out = append(out, v.at("run.url", "the server serves the legacy HTTP+SSE transport (%s), which mcpflow does not speak, on stdio or with run.url: make it serve stdio, or Streamable HTTP and set run.url", s.SSE))
	case u == "" && s.OnlyHTTP():
		out = append(out, v.at("run.url", "not set, so mcpflow talks to the server on its stdin and stdout, but the source serves Streamable HTTP (%s) and has no stdio transport: add url = %s to [run] (where the server answers; {port} is a free port for each start, passed as $PORT)", s.HTTP, config.TOMLString(want)))
	case u != "" && s.Stdio != "" && s.HTTP == "":
		out = append(out, v.at("run.url", "set, but the server looks like a stdio server (%s; no Streamable HTTP transport found): mcpflow would wait in vain for it to answer at %s; remove run.url, or make the server serve Streamable HTTP there", s.Stdio, u))
	case strings.Contains(u, config.PortPlaceholder) && s.HTTP != "" && s.Env == "" && s.Port != 0:
		fixed := strings.Replace(u, config.PortPlaceholder, strconv.Itoa(s.Port), 1)
		out = append(out, v.at("run.url", "{port} gives the server a free port as $PORT, but its source reads no PORT and listens on port %d (at %s): unless it listens on $PORT, write url = %s, or make the server listen on $PORT", s.Port, s.PortAt, config.TOMLString(fixed)))
	}
	if host, port := fixedPort(u); port != 0 {
		if taken := portTaken(host, port); taken != "" {
			out = append(out, v.at("run.url", "port %d %s: the server could not listen there, and mcpflow would talk to whatever answers; stop that process, or use {port} in run.url if the server listens on $PORT", port, taken))
		}
	}
	return out
}

// commandTransport is the transport, "http" or "stdio", that a --transport
// flag or a TRANSPORT variable asks for, and the words that ask; "" for none.
func commandTransport(c config.Command, env map[string]string) (string, string) {
	kind := func(v string) string {
		switch strings.ToLower(v) {
		case "http", "streamable-http", "streamable_http", "streamablehttp":
			return "http"
		case "stdio":
			return "stdio"
		}
		return ""
	}
	for _, name := range []string{"TRANSPORT", "MCP_TRANSPORT"} {
		if t := kind(env[name]); t != "" {
			return t, "run.env " + name + " = " + config.TOMLString(env[name])
		}
	}
	for _, words := range commandWords(c) {
		for i, w := range words {
			name, val, eq := strings.Cut(w, "=")
			n := 1 // words that ask
			switch {
			case (name == "TRANSPORT" || name == "MCP_TRANSPORT" || name == "--transport") && eq:
			case name == "--transport" && i+1 < len(words):
				val, n = words[i+1], 2
			case w == "--stdio":
				val = "stdio"
			case name == "--http" || name == "-http": // --http, -http ADDR (Go's flag)
				val, n = "http", min(2, len(words)-i)
				if eq || w == "--http" {
					n = 1
				}
			default:
				continue
			}
			if t := kind(val); t != "" {
				return t, strings.Join(words[i:i+n], " ")
			}
		}
	}
	return "", ""
}

// fixedPort is the host and port run.url names; 0 for none, {port} or a bad URL.
func fixedPort(raw string) (string, int) {
	u, err := url.Parse(raw) // "" parses, with no port
	if err != nil || strings.Contains(raw, config.PortPlaceholder) {
		return "", 0
	}
	p, _ := strconv.Atoi(u.Port())
	return u.Hostname(), p
}

// listenWarnings warns about [http] listen taken or open to others, and fixed ports used twice.
func listenWarnings(cfg *config.Config, views []checkView) []string {
	var out []string
	listenPort := 0
	if addr := cfg.HTTP.Listen; addr != "" {
		host, port, err := net.SplitHostPort(addr)
		listenPort, _ = strconv.Atoi(port)
		if err == nil && listenPort != 0 {
			if taken := portTaken(host, listenPort); taken != "" {
				out = append(out, cfg.At("http.listen", "%s: port %d %s, so mcpflow watch could not serve there; stop that process (an mcpflow already serving this config?), or choose another port", addr, listenPort, taken))
			}
		}
		if err == nil && !config.Loopback(host) {
			out = append(out, cfg.At("http.listen", "%s is open to other machines: whoever reaches it can call the server's tools and recompile it; use 127.0.0.1 unless you mean that", addr))
		}
	}
	owner := map[int]string{} // fixed port → the first key that names it
	for _, v := range views {
		switch _, p := fixedPort(v.cfg.Run.URL); {
		case p == 0: // {port}, or stdio
		case p == listenPort:
			out = append(out, v.at("run.url", "port %d is also [http] listen's: mcpflow serves its clients there, so the server cannot listen on it; give one of them another port (or {port} in run.url)", p))
		case owner[p] != "":
			out = append(out, v.at("run.url", "port %d is also %s's: the two servers cannot both listen on it; give one another port (or {port})", p, owner[p]))
		default:
			owner[p] = v.table + "run.url"
		}
	}
	return out
}

// portTaken says who holds port on host ("is in use by pid 123 (node)"); "" when it is free.
func portTaken(host string, port int) string {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err == nil {
		ln.Close()
		return ""
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return "is in use by " + cmp.Or(portOwner(port), "another process")
	}
	return fmt.Sprintf("cannot be listened on (%v)", err)
}

// portOwner is "pid N (NAME)" of the process listening on port, from Linux's /proc.
func portOwner(port int) string {
	sockets := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(table)
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			i := strings.LastIndexByte(f[1], ':')
			if p, err := strconv.ParseUint(f[1][i+1:], 16, 32); err == nil && int(p) == port {
				sockets["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(sockets) == 0 {
		return ""
	}
	procs, _ := os.ReadDir("/proc")
	for _, d := range procs {
		pid := d.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		fds, _ := os.ReadDir("/proc/" + pid + "/fd")
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + pid + "/fd/" + fd.Name()); err == nil && sockets[l] {
				comm, _ := os.ReadFile("/proc/" + pid + "/comm")
				return fmt.Sprintf("pid %s (%s)", pid, strings.TrimSpace(string(comm)))
			}
		}
	}
	return ""
}
