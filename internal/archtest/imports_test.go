// Package archtest holds the layers of ARCHITECTURE.md as a test: a
// package may import packages of its own layer's lower parts and of the
// layers below it, never one above.
package archtest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

const module = "github.com/mcpflow/mcpflow/"

// layers, bottom first. A package belongs to the first entry whose prefix
// its path has (a prefix ending in "/" takes the folder's packages); it
// may import packages of lower layers, and of its own layer only where
// sameLayer allows.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"protocol", []string{"internal/protocol/"}},
	{"report", []string{"internal/report/"}},
	{"proc", []string{"internal/proc"}},
	{"config", []string{"internal/config"}},
	{"transport", []string{"internal/transport/"}},
	{"ops", []string{"internal/ops/"}},
	{"jobs", []string{"internal/watcher", "internal/builder", "internal/relay", "internal/clitools", "internal/mux"}},
	{"project", []string{"internal/project"}},
	{"instance", []string{"internal/instance"}},
	{"cmd", []string{"cmd/"}},
}

// sameLayer lists the imports allowed inside a layer.
var sameLayer = map[string][]string{
	"internal/protocol/wire":   {"internal/protocol/jsonscan"},
	"internal/protocol/bridge": {"internal/protocol/jsonscan", "internal/protocol/wire"},
	"internal/report/texts":    {"internal/report/result"},
	"internal/proc":            {},
	"internal/ops/control":     {"internal/ops/logring", "internal/ops/traffic"},
	"internal/ops/logging":     {"internal/ops/traffic", "internal/ops/statedir"},
	"internal/ops/traffic":     {"internal/ops/statedir"},
	"internal/mux":             {"internal/relay"},
	"internal/builder":         {"internal/watcher"},
	"internal/builder/cache":   {"internal/builder"},
	"internal/clitools":        {"internal/mux", "internal/relay"},
}

// Outside the layers: test-only code (internal/testkit and below,
// internal/archtest), dev programs (tools/), examples, bench and
// packaging. Nothing in the layers may import them.
var outside = []string{"internal/testkit", "internal/archtest", "tools/", "examples/", "bench", "packaging"}

func layerOf(pkg string) int {
	for i, l := range layers {
		for _, p := range l.prefixes {
			if folder, ok := strings.CutSuffix(p, "/"); ok {
				if strings.HasPrefix(pkg, p) || pkg == folder {
					return i
				}
			} else if pkg == p || strings.HasPrefix(pkg, p+"/") {
				return i
			}
		}
	}
	return -1
}

func isOutside(pkg string) bool {
	for _, p := range outside {
		if pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

func TestLayers(t *testing.T) {
	if testkit.UnderWine() {
		t.Skip("Wine: no Go toolchain for go list (the Linux run checks the imports)")
	}
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var own []string
		for _, imp := range p.Imports {
			if name, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, name)
			}
		}
		imports[strings.TrimPrefix(p.ImportPath, module)] = own
	}
	if len(imports) < 20 {
		t.Fatalf("go list found only %d packages", len(imports))
	}
	for pkg, deps := range imports {
		if isOutside(pkg) {
			continue
		}
		l := layerOf(pkg)
		if l < 0 {
			t.Errorf("%s is in no layer: add it to archtest's layers and ARCHITECTURE.md", pkg)
			continue
		}
		for _, dep := range deps {
			if isOutside(dep) {
				t.Errorf("%s imports %s, which is test-only or a dev program", pkg, dep)
				continue
			}
			switch dl := layerOf(dep); {
			case dl > l:
				t.Errorf("%s (layer %s) imports %s (layer %s, above it)", pkg, layers[l].name, dep, layers[dl].name)
			case dl == l && !allowed(pkg, dep):
				t.Errorf("%s imports %s in its own layer (%s): not one of the arrows ARCHITECTURE.md allows", pkg, dep, layers[l].name)
			}
		}
	}
}

func allowed(pkg, dep string) bool {
	for _, d := range sameLayer[pkg] {
		if d == dep {
			return true
		}
	}
	return false
}

// TestLayerOf pins how paths fall into layers, so that the rules above
// cannot pass by matching nothing.
func TestLayerOf(t *testing.T) {
	for pkg, want := range map[string]string{
		"internal/protocol/wire":        "protocol",
		"internal/report/texts":         "report",
		"internal/proc":                 "proc",
		"internal/proc/tail":            "proc",
		"internal/config":               "config",
		"internal/transport/httpmcp":    "transport",
		"internal/ops/control":          "ops",
		"internal/relay":                "jobs",
		"internal/mux":                  "jobs",
		"cmd/mcpflow":                   "cmd",
		"internal/testkit/conformance":  "",
		"internal/processing-not-proc/": "",
	} {
		got := ""
		if l := layerOf(pkg); l >= 0 {
			got = layers[l].name
		}
		if isOutside(pkg) {
			got = ""
		}
		if got != want {
			t.Errorf("layerOf(%s) = %q, want %q", pkg, got, want)
		}
	}
}
