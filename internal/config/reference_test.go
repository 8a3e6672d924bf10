package config

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

var update = flag.Bool("update", false, "rewrite mcpflow.toml.example and the README's configuration reference from the settings table")

// TestReference: mcpflow.toml.example and the README's tables of keys are
// what the settings table generates; with -update it rewrites them.
func TestReference(t *testing.T) {
	for _, f := range []struct {
		path string
		gen  func(old string) (string, error)
	}{
		{"../../mcpflow.toml.example", func(string) (string, error) { return exampleFile(), nil }},
		{"../../README.md", readmeReference},
	} {
		old, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.gen(string(old))
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		switch {
		case want == string(old):
		case *update:
			if err := os.WriteFile(f.path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s is not what the settings table (internal/config/settings.go) generates; regenerate it:\n\tgo test ./internal/config -run TestReference -update", strings.TrimPrefix(f.path, "../../"))
		}
	}
}

const exampleHeader = `# mcpflow.toml: how mcpflow builds, runs and reloads your MCP server.
# (Generated from internal/config/settings.go.)
#
# Every key is shown with its default value, except the commands, which show
# an example. Delete what you do not change. The file serves one MCP server
# ([run]), a command-line program as MCP tools ([cli], below), or several
# servers at once ([servers.NAME] tables, below).
# Relative paths are relative to this file's folder.
# Durations are strings with a unit (ns, us, ms, s, m, h): "500ms", "2s", "1m30s".
# Sizes are a number of bytes or a string with a unit: "512KiB", "64MiB", "1GB"
# (KB, MB, GB, TB are powers of 1000; KiB, MiB, GiB, TiB powers of 1024).
# A command is a string, run by sh -c, or an array, executed directly.
# ` + "`mcpflow check`" + ` prints the settings this file resolves to.
`

const exampleCLI = `
# ---------------------------------------------------------------------------
# A command-line program served as MCP tools, one process per call: the
# table below takes the place of [run] (uncomment it); [build] and [watch]
# work as above.
#
`

const exampleMux = `
# ---------------------------------------------------------------------------
# Several servers behind one MCP session (a mux): one [servers.NAME] table
# each, taking the tables build, run (or cli), watch and the per-server
# part of relay, in place of the top-level ones. Tools appear as NAME__tool.
# The top-level [relay] and [log] still apply.
#
`

// exampleFile is mcpflow.toml.example: a single-server file with every key
// that applies to it, then, commented out, a [cli] table and a mux.
func exampleFile() string {
	var single, mux []string
	for _, t := range tableNames {
		single = append(single, exampleTable("", t, "server", false, func(s *setting) bool { return s.modes&inSingle != 0 }))
		mux = append(mux, exampleTable("# ", t, "", false, func(s *setting) bool { return s.modes&(inSingle|inCLI) == 0 }))
	}
	perServer := func(s *setting) bool { return s.modes&inServer != 0 }
	for _, t := range serverTables {
		if t != "cli" {
			mux = append(mux, exampleTable("# ", t, "api", true, perServer))
		}
	}
	mux = append(mux, exampleTable("# ", "cli", "tool", true, perServer))
	nonEmpty := func(ss []string) []string { return slices.DeleteFunc(ss, func(s string) bool { return s == "" }) }
	return exampleHeader + "\n" + strings.Join(nonEmpty(single), "\n") +
		exampleCLI + exampleTable("# ", "cli", "tool", false, func(*setting) bool { return true }) +
		exampleMux + strings.Join(nonEmpty(mux), "#\n")
}

// exampleTable writes the keys of table that show selects, each line
// prefixed with prefix, or "" when it selects none. With inServer the
// table is [servers.SERVER.table], else server stands for {name} in the
// examples.
func exampleTable(prefix, table, server string, inServer bool, show func(*setting) bool) string {
	var b strings.Builder
	for i := range settings {
		s := &settings[i]
		if s.table() != table || !show(s) {
			continue
		}
		if b.Len() == 0 {
			name := table
			if inServer {
				name = "servers." + server + "." + table
			}
			fmt.Fprintf(&b, "%s[%s]\n", prefix, name)
		}
		doc := plainText(s.doc)
		if inServer {
			doc = "As " + s.key + " above."
		}
		for _, l := range wrap(doc, 78-len(prefix)-2) {
			fmt.Fprintf(&b, "%s# %s\n", prefix, l)
		}
		v := s.def
		if s.example != "" {
			v = strings.ReplaceAll(s.example, "{name}", server)
		}
		fmt.Fprintf(&b, "%s%s = %s\n", prefix, s.name(), v)
	}
	return b.String()
}

var bold = regexp.MustCompile(`\*\*(\w[^*]*\w)\*\*`)

// plainText turns a setting's doc, a line of Markdown, into a sentence of
// plain text.
func plainText(doc string) string {
	doc = bold.ReplaceAllString(strings.ReplaceAll(doc, "`", ""), "$1")
	r := []rune(doc)
	r[0] = unicode.ToUpper(r[0])
	return string(r) + "."
}

// wrap breaks text into lines of at most width characters, where it can.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	return append(lines, line)
}

var keysMarker = regexp.MustCompile(`(?s)(<!-- keys: ([a-z ]+) \([^\n]*-->\n).*?(<!-- end of keys -->)`)

// readmeReference rewrites the tables of keys in the README: each between
// a "<!-- keys: TABLES (...) -->" line and "<!-- end of keys -->".
func readmeReference(readme string) (string, error) {
	seen := map[string]bool{}
	out := keysMarker.ReplaceAllStringFunc(readme, func(m string) string {
		sub := keysMarker.FindStringSubmatch(m)
		var b strings.Builder
		b.WriteString(sub[1])
		b.WriteString("\n| key | default | in a mux | meaning |\n|---|---|---|---|\n")
		for _, t := range strings.Fields(sub[2]) {
			seen[t] = true
			for i := range settings {
				if s := &settings[i]; s.table() == t {
					b.WriteString(readmeRow(s))
				}
			}
		}
		b.WriteString("\n")
		b.WriteString(sub[3])
		return b.String()
	})
	for _, t := range tableNames {
		if !seen[t] {
			return "", fmt.Errorf("no <!-- keys: ... --> marker lists the table %s", t)
		}
	}
	return out, nil
}

func readmeRow(s *setting) string {
	def := s.shown
	if def == "" {
		def = "`" + s.def + "`"
	}
	mux := "—"
	switch {
	case s.modes&inServer != 0:
		mux = "per server"
	case s.modes&inMux != 0:
		mux = "the mux"
	}
	doc := s.doc
	if s.see != "" {
		doc += " (" + s.see + ")"
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s |\n", s.key, def, mux, doc)
}
