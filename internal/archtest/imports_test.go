// Package archtest holds the import rules of ARCHITECTURE.md as a test.
package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mcpflow/mcpflow/"

// forbidden lists, per package, the mcpflow packages it must not import,
// directly or through another package.
var forbidden = map[string][]string{
	"watcher":  {"builder", "relay", "mux", "clitools", "internal/config", "cmd/mcpflow"},
	"builder":  {"watcher", "relay", "mux", "clitools", "internal/config", "cmd/mcpflow"},
	"relay":    {"watcher", "builder", "mux", "clitools", "internal/config", "cmd/mcpflow"},
	"mux":      {"watcher", "builder", "internal/config", "cmd/mcpflow"},
	"clitools": {"watcher", "builder", "relay", "mux", "internal/config", "cmd/mcpflow"},
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps=false", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		deps[strings.TrimPrefix(p.ImportPath, module)] = p.Deps
	}
	if len(deps) < 5 {
		t.Fatalf("go list found only %d packages", len(deps))
	}
	for pkg, bad := range forbidden {
		d, ok := deps[pkg]
		if !ok {
			continue // not written yet
		}
		for _, dep := range d {
			name := strings.TrimPrefix(dep, module)
			for _, b := range bad {
				if name == b {
					t.Errorf("%s imports %s (directly or not): ARCHITECTURE.md forbids it", pkg, b)
				}
			}
		}
	}
	// The test kit is for _test.go files only (go list's Deps leave the
	// tests' imports out).
	for pkg, d := range deps {
		for _, dep := range d {
			if dep == module+"internal/testkit" {
				t.Errorf("%s imports internal/testkit: only tests may", pkg)
			}
		}
	}
	for pkg, d := range deps {
		// internal/config takes its defaults from the packages that
		// consume the options; every other internal package is a leaf.
		if !strings.HasPrefix(pkg, "internal/") || pkg == "internal/config" || pkg == "internal/clientcheck" {
			continue
		}
		for _, dep := range d {
			name, ok := strings.CutPrefix(dep, module)
			if ok && !strings.HasPrefix(name, "internal/") {
				t.Errorf("%s imports the top-level package %s: internal packages are leaves", pkg, name)
			}
		}
	}
}
