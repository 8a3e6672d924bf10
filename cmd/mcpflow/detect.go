package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// project is what detection learns about a directory: enough to write a
// config that builds, runs and watches it.
type project struct {
	Kind    string   // "go", "rust", "node", "python", "" (unknown)
	Name    string   // server name for the client snippet
	Build   string   // build command, run by sh -c; "" = none
	Run     []string // the server command
	Include []string
	Exclude []string
	Notes   []string // things the user should check, written as comments
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
	case exists(dir, "pyproject.toml"):
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

func goModule(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	return ""
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

func detectNode(dir string) project {
	var m struct {
		Name    string            `json:"name"`
		Main    string            `json:"main"`
		Bin     json.RawMessage   `json:"bin"`
		Scripts map[string]string `json:"scripts"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	_ = json.Unmarshal(b, &m)
	p := project{Kind: "node", Name: m.Name}
	if i := strings.LastIndex(p.Name, "/"); i >= 0 {
		p.Name = p.Name[i+1:]
	}
	if p.Name == "" {
		p.Name = filepath.Base(dir)
	}
	if _, ok := m.Scripts["build"]; ok {
		p.Build = "npm run build"
	}
	entry := m.Main
	var bin string
	if json.Unmarshal(m.Bin, &bin) != nil {
		var bins map[string]string
		if json.Unmarshal(m.Bin, &bins) == nil {
			keys := make([]string, 0, len(bins))
			for k := range bins {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(keys) > 0 {
				bin = bins[keys[0]]
			}
		}
	}
	if bin != "" {
		entry = bin
	}
	if entry == "" {
		entry = "index.js"
		p.Notes = append(p.Notes, `No "main" or "bin" in package.json: check run.command.`)
	}
	p.Run = []string{"node", strings.TrimPrefix(entry, "./")}
	p.Include = []string{"**/*.ts", "**/*.mts", "**/*.js", "**/*.mjs", "**/*.cjs", "**/*.json"}
	p.Exclude = []string{"package-lock.json"}
	if p.Build != "" {
		// The build writes the entry point's folder: never watch it.
		if out := topDir(entry); out != "" {
			p.Exclude = append(p.Exclude, out+"/**")
		}
	}
	return p
}

func topDir(p string) string {
	p = strings.TrimPrefix(filepath.ToSlash(p), "./")
	if i := strings.Index(p, "/"); i > 0 {
		return p[:i]
	}
	return ""
}

func detectPython(dir string) project {
	var m struct {
		Project struct {
			Name    string            `toml:"name"`
			Scripts map[string]string `toml:"scripts"`
		} `toml:"project"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	_ = toml.Unmarshal(b, &m)
	p := project{
		Kind:    "python",
		Name:    m.Project.Name,
		Include: []string{"**/*.py", "pyproject.toml"},
		Exclude: []string{".venv/**", "**/__pycache__/**"},
	}
	if p.Name == "" {
		p.Name = filepath.Base(dir)
	}
	module := strings.ReplaceAll(p.Name, "-", "_")
	// A console script "name = 'pkg.mod:main'" names the module to run.
	keys := make([]string, 0, len(m.Project.Scripts))
	for k := range m.Project.Scripts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		target, _, _ := strings.Cut(m.Project.Scripts[keys[0]], ":")
		if target != "" {
			module = strings.TrimSpace(target)
		}
	}
	p.Run = []string{"python3", "-m", module}
	return p
}

// zeroConfig is the config of "mcpflow watch -- CMD": the command is the
// server, build is optional, the watch set comes from detection.
func zeroConfig(dir string, argv []string, build string) *Config {
	c := defaultConfig(dir)
	c.Run.Command = Command{Argv: argv}
	if build != "" {
		c.Build.Command = Command{Argv: []string{build}, Shell: true}
	}
	p := detect(c.Dir)
	if p.Kind != "" {
		c.Watch.Include = p.Include
		c.Watch.Exclude = p.Exclude
	}
	return c
}
