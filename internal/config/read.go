package config

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math/big"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// kind is the type of a setting's value: how a file writes it, the Go type
// of its field (config_test.go's goType), how it is resolved and shown.
type kind int

const (
	kString   kind = iota // a string
	kPath                 // a string: a path, resolved against the config's folder
	kBool                 // true or false
	kInt                  // an integer
	kDuration             // a string with a unit: "2s"
	kSize                 // bytes: an integer, or a string with a unit: "64MiB"
	kList                 // an array of strings
	kPaths                // an array of paths, each resolved as kPath's
	kGlobs                // an array of doublestar globs on slash paths; a leading "./" is dropped
	kCommand              // a string, run by sh -c, or an array of strings, executed directly
	kEnv                  // a table of strings: environment variables
)

// expected says what a valid value of k looks like, for messages.
func (k kind) expected() string {
	const list = `an array of strings, like ["a", "b"]`
	return [...]string{
		kString: "a string", kPath: "a string", kBool: "true or false", kInt: "a whole number",
		kDuration: `a duration like "2s"`, kSize: `a size like "64MiB"`,
		kList: list, kPaths: list, kGlobs: list,
		kCommand: `a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"]`,
		kEnv:     `a table of strings, like { KEY = "value" }`,
	}[k]
}

// reader checks a decoded document against the settings and collects its
// values; its problems point at what the document wrote.
type reader struct {
	x       *docIndex
	top     map[*setting]any
	servers map[string]map[*setting]any // nil without [servers]
	errs    []error
}

// tables reads the tables of the document (prefix nil) or of a
// [servers.NAME] table, which names lists, into into.
func (r *reader) tables(prefix []string, tables map[string]any, names []string, into map[*setting]any) {
	for name, v := range tables {
		path := append(slices.Clip(prefix), name)
		switch {
		case !slices.Contains(names, name):
			r.unknown(path, names)
		case name == "servers":
			r.servers = map[string]map[*setting]any{}
			for srv, v := range r.table(path, v) {
				r.servers[srv] = map[*setting]any{} // a server that sets nothing has the defaults
				path := []string{"servers", srv}
				r.tables(path, r.table(path, v), serverTables, r.servers[srv])
			}
		default:
			r.keys(path, r.table(path, v), into)
		}
	}
}

// keys reads the keys of a table into into; those of a
// [servers.NAME.TABLE] are the keys a server sets.
func (r *reader) keys(table []string, keys map[string]any, into map[*setting]any) {
	name, server := table[len(table)-1], len(table) > 1 && table[1] != ""
	for k, v := range keys {
		path := append(slices.Clip(table), k)
		if s := lookup(name, k, server); s == nil {
			r.unknown(path, keysOf(name, server))
		} else if dv, ok := r.decode(s, path, v); ok {
			into[s] = dv
		}
	}
}

// table returns v when it is a table; else it reports that the key at
// path must be one, and returns nil.
func (r *reader) table(path []string, v any) map[string]any {
	if t, ok := v.(map[string]any); ok {
		return t
	}
	key := keyString(path)
	if n := r.x.paths[key]; n != nil && n.kind == unstable.ArrayTable {
		r.bad(n, false, "%s: [[%s]] makes an array of tables; write [%s]", key, key, key)
	} else if key == "servers" {
		r.wrong(path, "a table of servers, like [servers.NAME.run]", kEnv, v)
	} else {
		r.wrong(path, fmt.Sprintf("a table, like [%s]", key), kEnv, v)
	}
	return nil
}

// unknown reports the key at path, which its table, with the keys
// candidates, does not have.
func (r *reader) unknown(path []string, candidates []string) {
	word, table := path[len(path)-1], path[:len(path)-1]
	hint := suggestKey(word, table, candidates)
	msg := "unknown key " + TOMLString(word) + when(len(table) > 0, " in [%s]", keyString(table)) + when(hint != "", " (did you mean %s?)", hint)
	if i := slices.IndexFunc(candidates, func(c string) bool { return strings.EqualFold(c, word) }); i >= 0 {
		msg = fmt.Sprintf("unknown key %s (keys are case-sensitive: write %q)", TOMLString(word), candidates[i])
	}
	r.bad(r.x.firstUnder(path), false, "%s", msg)
}

// bad reports a problem at node n: its key, or with atValue its value (a
// header's '[' either way); n nil names only the file.
func (r *reader) bad(n *docNode, atValue bool, format string, args ...any) {
	e := &configError{file: r.x.name, msg: fmt.Sprintf(format, args...)}
	if n != nil {
		off := n.keyStart
		if n.header || atValue || off < 0 {
			off = n.start
		}
		e.pos = r.x.lineCol(off)
	}
	r.errs = append(r.errs, e)
}

// wrong reports that the value v at path is not what expected says; k is
// the kind expected, for a hint on how to fix it.
func (r *reader) wrong(path []string, expected string, k kind, v any) {
	key := keyString(path)
	n := r.x.paths[key]
	_, table := v.(map[string]any)
	switch {
	case table && n == nil: // run.command.x = 1
		n = r.x.firstUnder(path)
		r.bad(n, false, "%s: expected %s, got a table (%s)", key, expected, keyString(n.path))
	case n == nil:
		r.bad(nil, false, "%s: expected %s, got %s", key, expected, describeValue(v))
	case n.header: // [run.command], [[run.command]]
		r.bad(n, false, "%s: expected %s, got %s", key, expected, n.got())
	default:
		r.bad(n, true, "%s: expected %s, got %s%s", key, expected, n.got(), hint(k, n))
	}
}

// hint says how to fix n, a value written where one of kind k belongs.
func hint(k kind, n *docNode) string {
	raw := string(n.raw)
	switch s := strings.Trim(raw, `"'`); {
	case (k == kString || k == kPath) && n.kind != unstable.Array && n.kind != unstable.InlineTable:
		return "; quote it: " + TOMLString(raw)
	case k == kInt && n.kind == unstable.String && isNumber(s),
		k == kBool && n.kind == unstable.String && (s == "true" || s == "false"):
		return "; remove the quotes: " + s
	case (k == kList || k == kPaths || k == kGlobs) && n.kind == unstable.String:
		return "; write an array: [" + raw + "]"
	}
	return ""
}

// decode turns the value v that the document writes at path into the
// setting's Go value (paths not resolved yet), or reports why it cannot.
func (r *reader) decode(s *setting, path []string, v any) (any, bool) {
	key := keyString(path)
	if _, table := v.(map[string]any); table && s.kind != kEnv {
		r.wrong(path, s.kind.expected(), s.kind, v)
		return nil, false
	}
	got := func() string {
		if n := r.x.paths[key]; n != nil {
			return n.got()
		}
		return describeValue(v)
	}
	var out any // from the decoders, which give nil and a problem instead
	var problem string
	switch s.kind {
	case kString, kPath:
		if str, ok := v.(string); ok {
			return str, true
		}
	case kBool:
		if b, ok := v.(bool); ok {
			return b, true
		}
	case kInt:
		if n, ok := v.(int64); ok {
			return int(n), true
		}
	case kDuration:
		out, problem = decodeDuration(v, got, s.empty != "")
	case kSize:
		out, problem = decodeSize(v, got)
	case kCommand:
		out, problem = decodeCommand(v, got)
	case kList, kPaths, kGlobs:
		if items, ok := v.([]any); ok {
			return r.strings(path, items)
		}
	case kEnv:
		if vars, ok := v.(map[string]any); ok {
			env, errs := map[string]string{}, len(r.errs)
			for k, val := range vars {
				if str, ok := val.(string); ok {
					env[k] = str
				} else {
					r.wrong(append(slices.Clip(path), k), kString.expected(), kString, val)
				}
			}
			return env, len(r.errs) == errs
		}
	}
	if out != nil {
		return out, true
	}
	if problem != "" {
		r.bad(r.x.paths[key], true, "%s: %s", key, problem)
	} else {
		r.wrong(path, s.kind.expected(), s.kind, v)
	}
	return nil, false
}

// strings decodes an array of strings, reporting each item that is not one.
func (r *reader) strings(path []string, items []any) ([]string, bool) {
	out, errs := make([]string, len(items)), len(r.errs)
	for i, item := range items {
		var ok bool
		if out[i], ok = item.(string); ok {
			continue
		}
		label := fmt.Sprintf("%s[%d]: expected %s, got ", keyString(path), i, kString.expected())
		if n := r.x.item(path, i); n != nil {
			r.bad(n, true, "%s%s%s", label, n.got(), hint(kString, n))
		} else { // nested arrays: the item's extent is unknown
			r.bad(r.x.paths[keyString(path)], true, "%s%s", label, describeValue(item))
		}
	}
	return out, len(r.errs) == errs
}

// decodeCommand decodes a string (blank: no command) or an array of strings.
func decodeCommand(v any, got func() string) (any, string) {
	switch v := v.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return Command{}, ""
		}
		return Command{Argv: []string{v}, Shell: true}, ""
	case []any:
		argv := make([]string, len(v))
		for i, e := range v {
			var ok bool
			if argv[i], ok = e.(string); !ok {
				return nil, fmt.Sprintf("expected %s, got %s as item %d", kCommand.expected(), describeValue(e), i+1)
			}
		}
		return Command{Argv: argv}, ""
	}
	return nil, fmt.Sprintf("expected %s, got %s", kCommand.expected(), got())
}

const durationForms = `write a number with a unit (ns, us, ms, s, m, h), e.g. "500ms", "2s", "1m30s"`

// decodeDuration decodes a duration written as a string; "" is 0 where emptyOK.
func decodeDuration(v any, got func() string, emptyOK bool) (any, string) {
	expected := kDuration.expected()
	switch v := v.(type) {
	case string:
		s := strings.Join(strings.Fields(v), "")
		switch {
		case s == "" && emptyOK:
			return time.Duration(0), ""
		case s == "":
			return nil, fmt.Sprintf("expected %s, got an empty string; %s", expected, durationForms)
		case isNumber(s) && s != "0":
			return nil, fmt.Sprintf("expected %s, got %s with no unit; write %q or %q", expected, got(), s+"s", s+"ms")
		}
		if d, err := time.ParseDuration(s); err == nil {
			return d, ""
		}
	case int64, float64:
		n := number(v)
		return nil, fmt.Sprintf("expected %s, got %s; durations are strings with a unit: write %q or %q", expected, got(), n+"s", n+"ms")
	}
	return nil, fmt.Sprintf("expected %s, got %s; %s", expected, got(), durationForms)
}

const sizeForms = `write a number of bytes, or a number with a unit: KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "512KiB", "64MiB", "1GB"`

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// decodeSize decodes bytes: an integer, or a string with an optional unit.
func decodeSize(v any, got func() string) (any, string) {
	hint := sizeForms
	switch v := v.(type) {
	case int64:
		if v >= 0 {
			return v, ""
		}
		hint = "a size cannot be negative"
	case string:
		n, unit, ok := parseSize(v)
		if ok {
			return n, ""
		}
		if u := strings.ToLower(unit); u == "k" || u == "m" || u == "g" || u == "t" {
			hint = fmt.Sprintf("%q is ambiguous: write %[2]siB (powers of 1024) or %[2]sB (powers of 1000)", unit, strings.ToUpper(u))
		}
	}
	return nil, fmt.Sprintf("expected %s, got %s; %s", kSize.expected(), got(), hint)
}

// parseSize parses "64MiB", "1.5 GB", "1048576"; unit is what it saw.
func parseSize(s string) (n int64, unit string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '_' })
	if i < 0 {
		i = len(s)
	}
	num, unit := strings.ReplaceAll(s[:i], "_", ""), strings.TrimSpace(s[i:])
	mult, known := sizeUnits[strings.ToLower(unit)]
	r, good := new(big.Rat).SetString(num)
	if !known || !isNumber(num) || !good {
		return 0, unit, false
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, unit, false
	}
	return q.Int64(), unit, true
}

// isNumber reports whether s is a plain decimal number: "2", "-1.5".
func isNumber(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Count(s, ".") > 1 {
		return false
	}
	return strings.Trim(s, "0123456789.") == ""
}

// describeValue describes a decoded value for a message: "integer 2",
// "an array".
func describeValue(v any) string {
	switch v := v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case string:
		return "string " + clip(TOMLString(v))
	case int64:
		return "integer " + number(v)
	case float64:
		return "float " + number(v)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	}
	return "date " + clip(fmt.Sprint(v))
}

func number(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// clip shortens s to one line of at most 40 characters.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}

// suggestKey finds what an unknown key in table meant: one of keys, else
// (in a top-level table) one of another table's: "include" under [watch].
func suggestKey(word string, table []string, keys []string) string {
	if s := Suggest(word, keys); s != "" {
		return strconv.Quote(s)
	}
	if len(table) > 1 {
		return ""
	}
	key, score := "", -1
	var where []string
	for _, t := range tableNames {
		if len(table) == 1 && t == table[0] {
			continue
		}
		s, sc := bestMatch(word, keysOf(t, false))
		switch {
		case s == "":
		case score < 0 || sc < score:
			key, score, where = s, sc, []string{"[" + t + "]"}
		case sc == score && s == key:
			where = append(where, "["+t+"]")
		}
	}
	if key == "" {
		return ""
	}
	return fmt.Sprintf("%q under %s", key, strings.Join(where, " or "))
}

// Suggest returns the candidate word was most probably meant to be, or ""
// (also when word is one): a few typed characters apart ("server.py" for
// "sever.py"), or holding it as whole '_'-separated words or as a prefix
// ("timeout" for "stop_timeout", "warn" for "warning"), or the reverse.
func Suggest(word string, candidates []string) string {
	s, _ := bestMatch(word, candidates)
	if s == word {
		return ""
	}
	return s
}

// bestMatch is Suggest with the score of its answer: the edit distance, or
// a score past every accepted distance for a containment match. Unlike
// Suggest it returns word itself when it is a candidate.
func bestMatch(word string, candidates []string) (string, int) {
	if slices.Contains(candidates, word) {
		return word, 0
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	words := func(s, sub string) bool { return strings.Contains("_"+s+"_", "_"+sub+"_") } // sub is whole words of s
	w := norm(word)
	limit := min(max(1, utf8.RuneCountInString(w)/3), 3)
	best, bestScore := "", limit+2
	for _, c := range candidates {
		n := norm(c)
		score := editDistance(w, n)
		if score > limit {
			score = limit + 2
			if len(w) >= 3 && len(n) >= 3 && (words(n, w) || words(w, n) ||
				strings.HasPrefix(n, w) || strings.HasPrefix(w, n)) {
				score = limit + 1
			}
		}
		if score < bestScore {
			best, bestScore = c, score
		}
	}
	return best, bestScore
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of adjacent characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Parse parses and validates a config document. name is how messages name
// the document; dir is the folder relative paths are resolved against. The
// error lists every problem found, one per line: "name:line:col: message".
func Parse(name string, data []byte, dir string) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	x, err := indexDocument(name, data)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, x.decodeError(err)
	}
	r := reader{x: x, top: map[*setting]any{}}
	r.tables(nil, doc, append(slices.Clone(tableNames), "servers"), r.top)
	if len(r.errs) > 0 {
		return nil, joinErrors(r.errs)
	}
	c := Default(dir)
	c.name, c.src = name, x
	if err := joinErrors(append(c.apply(&r), c.Validate())); err != nil {
		return nil, err
	}
	return c, nil
}

// defaults are the settings' defaults, decoded as a file's values are.
var defaults = func() map[*setting]any {
	out := map[*setting]any{}
	for i := range settings {
		s := &settings[i]
		var doc map[string]any
		if err := toml.Unmarshal([]byte("v = "+s.def), &doc); err != nil {
			panic(s.key + ": " + err.Error())
		}
		r := reader{x: &docIndex{}}
		v, ok := r.decode(s, []string{s.table(), s.name()}, doc["v"])
		if !ok {
			panic(joinErrors(r.errs))
		}
		out[s] = v
	}
	return out
}()

// Default returns the single-server configuration with every default and
// no run command, its relative paths resolved against dir.
func Default(dir string) *Config {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	c := &Config{Dir: filepath.Clean(dir)}
	c.reset(reflect.ValueOf(c).Elem())
	c.Watch.Ignore = ClientFiles()
	return c
}

// DefaultMux is Default as a mux with no servers, for the agent to add.
func DefaultMux(dir string) *Config {
	c := Default(dir)
	c.mode = Mux
	return c
}

// reset sets the sections of root (a Config or a ServerConfig) to defaults.
func (c *Config) reset(root reflect.Value) {
	for s, v := range defaults {
		c.set(root, s, v)
	}
}

func (c *Config) newCLI() *CLIConfig {
	s := ServerConfig{CLI: &CLIConfig{}}
	c.reset(reflect.ValueOf(&s).Elem())
	return s.CLI
}

// deriveCommand gives cli.command its default, the schema's program, unless
// the table at path writes it.
func (c *Config) deriveCommand(cli *CLIConfig, path ...string) {
	if cli != nil && len(cli.Schema) > 0 && !c.written(append(path, "command")...) {
		cli.Command = cli.Schema[:1:1]
	}
}

// sectionOf returns the section of root that holds s: Run, Relay...; it is
// not valid for a nil section (no [cli]).
func sectionOf(root reflect.Value, s *setting) reflect.Value {
	section, _, _ := strings.Cut(s.field, ".")
	return reflect.Indirect(root.FieldByName(section))
}

func fieldOf(root reflect.Value, s *setting) reflect.Value {
	if sec := sectionOf(root, s); sec.IsValid() {
		_, field, _ := strings.Cut(s.field, ".")
		return sec.FieldByName(field)
	}
	return reflect.Value{}
}

// set resolves v, the decoded value of s, and stores it in root.
func (c *Config) set(root reflect.Value, s *setting, v any) {
	f := fieldOf(root, s)
	if !f.IsValid() {
		return
	}
	switch s.kind {
	case kPath:
		if p := v.(string); p != "" || s.empty == "" {
			v = AbsFrom(c.Dir, p)
		}
	case kList, kPaths, kGlobs:
		items := slices.Clone(v.([]string))
		for i, p := range items {
			switch {
			case s.kind == kPaths && p != "":
				items[i] = AbsFrom(c.Dir, p)
			case s.kind == kGlobs:
				for strings.HasPrefix(p, "./") {
					p = strings.TrimLeft(p[2:], "/")
				}
				items[i] = p
			}
		}
		v = items
	case kEnv:
		v = maps.Clone(v.(map[string]string))
	}
	f.Set(reflect.ValueOf(v))
}

// apply sets the values the file writes over c's defaults, after deciding
// the mode; its errors are the tables and keys that do not go with it.
func (c *Config) apply(r *reader) []error {
	var errs []error
	switch {
	case r.servers != nil || c.written("mux"):
		c.mode = Mux
	case c.written("cli"):
		c.mode, c.CLI = CLI, c.newCLI()
	}
	for _, t := range tableNames {
		switch {
		case !c.written(t) || tableApplies(t, c.mode):
		case c.mode == Mux:
			errs = append(errs, c.errorAt([]string{t}, "[%s] cannot go with [servers.NAME] tables (a mux): move it under [servers.NAME.%s], or remove the [servers] and [mux] tables to serve one server", t, t))
		default:
			errs = append(errs, c.errorAt([]string{t}, "[%s] cannot go with [%s]: [%s] takes the place of [%s]; keep one of them", t, c.mode, c.mode, t))
		}
	}
	for s, v := range r.top {
		switch {
		case !tableApplies(s.table(), c.mode): // reported above
		case !s.modes.has(c.mode):
			errs = append(errs, c.errorAt([]string{s.table(), s.name()}, "%s", cmp.Or(s.modeMsg, fmt.Sprintf("does not apply to a %s config: remove it", c.Mode()))))
		default:
			c.set(reflect.ValueOf(c).Elem(), s, v)
		}
	}
	c.deriveCommand(c.CLI, "cli")

	for _, name := range c.serverNames(r.servers) {
		d := Default(c.Dir)
		s := ServerConfig{Name: name, Build: d.Build, Run: d.Run, Relay: c.Relay, Watch: d.Watch}
		if c.written("servers", name, "cli") {
			s.CLI = c.newCLI()
			if !c.written("servers", name, "run") {
				s.Run = RunConfig{}
			}
		}
		for st, v := range r.servers[name] {
			c.set(reflect.ValueOf(&s).Elem(), st, v)
		}
		c.deriveCommand(s.CLI, "servers", name, "cli")
		s.Relay.Drain = c.Mux.Drain
		c.Servers = append(c.Servers, s)
	}

	// The sections a mode does not use are left zero.
	switch c.mode {
	case CLI:
		c.Run = RunConfig{}
	case Mux:
		c.Build, c.Run, c.Watch = BuildConfig{}, RunConfig{}, WatchConfig{}
		c.Relay.Drain = c.Mux.Drain
	}
	return errs
}

// written reports whether the document writes anything under the key path.
func (c *Config) written(path ...string) bool {
	return c.src != nil && c.src.firstUnder(path) != nil
}

// serverNames returns the names of servers in the document's order.
func (c *Config) serverNames(servers map[string]map[*setting]any) []string {
	var names []string
	for _, n := range c.src.nodes {
		if len(n.path) >= 2 && n.path[0] == "servers" && servers[n.path[1]] != nil && !slices.Contains(names, n.path[1]) {
			names = append(names, n.path[1])
		}
	}
	return names
}

// AbsFrom is p, absolute: as it is when it is, else joined to dir.
func AbsFrom(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}
