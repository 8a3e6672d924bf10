package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// The npm packages follow esbuild and Biome: one package per platform,
// scoped (@mcpflow/linux-x64, in Node's process.platform and process.arch
// words), declaring os and cpu so that npm installs only the one that
// fits, and the main package mcpflow listing them all as
// optionalDependencies, with a small Node launcher as its bin. A scope
// keeps the six names in one namespace that only the project can publish
// to.

const repoURL = "https://github.com/mcpflow/mcpflow"

// packageJSON is the subset of package.json these packages use, in the
// order it is written.
type packageJSON struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Description          string            `json:"description"`
	License              string            `json:"license"`
	Homepage             string            `json:"homepage"`
	Repository           map[string]string `json:"repository"`
	Keywords             []string          `json:"keywords,omitempty"`
	OS                   []string          `json:"os,omitempty"`
	CPU                  []string          `json:"cpu,omitempty"`
	PreferUnplugged      bool              `json:"preferUnplugged,omitempty"`
	Bin                  map[string]string `json:"bin,omitempty"`
	Engines              map[string]string `json:"engines,omitempty"`
	OptionalDependencies map[string]string `json:"optionalDependencies,omitempty"`
}

func (r *release) packageJSON(name, description string) packageJSON {
	return packageJSON{
		Name:        name,
		Version:     r.npmVer,
		Description: description,
		License:     "MIT",
		Homepage:    repoURL + "#readme",
		Repository:  map[string]string{"type": "git", "url": "git+" + repoURL + ".git"},
	}
}

// npmTarball writes a package the way npm pack lays it out: a gzipped tar
// whose paths start with package/. Its file name is npm pack's.
func (r *release) npmTarball(p packageJSON, files []entry) error {
	js, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	es := []entry{{name: "package/package.json", data: append(js, '\n')}}
	for _, f := range files {
		f.name = "package/" + f.name
		es = append(es, f)
	}
	file := strings.ReplaceAll(strings.TrimPrefix(p.Name, "@"), "/", "-") + "-" + p.Version + ".tgz"
	return writeFile(filepath.Join(r.out, "npm", file), tgzBytes(es, r.mtime, false))
}

// npmPlatform writes the package holding t's binary, as bin/mcpflow (.exe).
func (r *release) npmPlatform(t target, bin []byte) error {
	p := r.packageJSON(t.npmName(), "The "+t.nodeOS+" "+t.nodeCPU+" binary of mcpflow (hot reload for MCP servers); the mcpflow package installs and runs it.")
	p.OS, p.CPU = []string{t.nodeOS}, []string{t.nodeCPU}
	p.PreferUnplugged = true // Yarn PnP: a binary must be a real file
	return r.npmTarball(p, []entry{
		{name: "LICENSE", data: r.license},
		{name: "README.md", data: []byte("# " + t.npmName() + "\n\nThe " + t.nodeOS + " " + t.nodeCPU +
			" binary of [mcpflow](" + repoURL + "). Install `mcpflow`, not this package: it picks the binary for your platform.\n")},
		{name: "bin/" + t.exe(), data: bin, exec: true},
	})
}

// npmMain writes the package mcpflow: the launcher and every platform
// package as an optional dependency (all six, whatever was built, so the
// package is the same with -host).
func (r *release) npmMain() error {
	launcher, err := os.ReadFile(filepath.Join(r.root, "packaging", "npm", "mcpflow.js"))
	if err != nil {
		return err
	}
	p := r.packageJSON("mcpflow", "Hot reload for MCP servers: rebuilds and restarts your server when its code changes, without losing the client's session.")
	p.Keywords = []string{"mcp", "model-context-protocol", "hot-reload", "dev-server", "watch"}
	p.Bin = map[string]string{"mcpflow": "bin/mcpflow.js"}
	p.Engines = map[string]string{"node": ">=16"}
	p.OptionalDependencies = map[string]string{}
	for _, t := range targets {
		p.OptionalDependencies[t.npmName()] = r.npmVer
	}
	return r.npmTarball(p, []entry{
		{name: "LICENSE", data: r.license},
		{name: "README.md", data: r.pkgDoc},
		{name: "bin/mcpflow.js", data: lf(launcher), exec: true},
	})
}
