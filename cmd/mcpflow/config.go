package main

// This file holds mcpflow.toml: its schema (the file* structs below are the
// only place the keys are spelled), its defaults, the resolved Config the
// rest of the command reads, and error messages that name the file, the
// line and column, and the fix:
//
//	mcpflow.toml:4:1: unknown key "bulid" (did you mean "build"?)
//	mcpflow.toml:7:16: run.stop_timeout: expected a duration like "2s", got integer 2; ...
//
// Parsing runs in three steps. An index of the document (unstable.Parser)
// records where every key and value was written; it reports syntax errors
// and keys used as tables where the schema has a plain value. go-toml's
// strict decoder then fills the schema structs (the duration, size and
// command types decode their own values); its errors are located with the
// index and rewritten into "key: expected X, got Y". Finally the values are
// resolved (defaults, absolute paths) and validated, and problems found
// there point at the value the user wrote.

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Command is a command line from the config.
type Command struct {
	// Argv is the program and its arguments. With Shell it holds one
	// element: the script.
	Argv []string
	// Shell reports that the command was written as a string, to be run
	// with sh -c Argv[0]. A command written as an array is executed
	// directly.
	Shell bool
}

// IsZero reports whether no command is set.
func (c Command) IsZero() bool { return len(c.Argv) == 0 }

// String returns the command as it would be written in mcpflow.toml.
func (c Command) String() string {
	if c.Shell && len(c.Argv) == 1 {
		return tomlString(c.Argv[0])
	}
	return tomlStrings(c.Argv)
}

// Config is mcpflow's resolved configuration: defaults filled in, every
// path absolute. Build one with loadConfig, parseConfig or defaultConfig.
type Config struct {
	File string // absolute path of the config file ("" when built from flags)
	Dir  string // folder all relative paths are resolved against

	Build struct {
		Command Command // zero: no build step
		Timeout time.Duration
	}
	Run struct {
		Command        Command
		Cwd            string            // absolute
		Env            map[string]string // added to the inherited environment
		EnvOverridable []string          // keys the agent may set through recompile
		StopTimeout    time.Duration     // after closing stdin, before SIGTERM
	}
	Relay struct {
		Tool          string
		MaxMessage    int64
		Notices       bool
		OnCrash       string // "restart" or "wait"
		RestartMarker string // "" = off
		ServerSuffix  string
		CallTool      string // "" = off
		QueueSize     int
		QueueBytes    int64
		QueueTimeout  time.Duration
	}
	Watch struct {
		Enabled          bool
		Paths            []string // absolute
		Include, Exclude []string // doublestar globs on slash paths relative to Dir
		GitIgnore        bool
		Debounce, Poll   time.Duration // Poll 0: use fsnotify
	}
	Log struct {
		Level string // debug, info, warn or error
		File  string // absolute; "" = stderr only
	}

	name string    // how messages name the config file
	src  *docIndex // where each key was written; nil when built from flags
}

// The valid values of the enumerated keys, in the order messages list them.
var (
	onCrashValues  = []string{"restart", "wait"}
	logLevelValues = []string{"debug", "info", "warn", "error"}
)

// Limits and defaults that are not plain literals below.
const (
	kib            = 1 << 10
	mib            = 1 << 20
	minMaxMessage  = 1 * kib
	maxToolNameLen = 128
)

// defaultConfig returns the configuration with every default and no run
// command, its relative paths resolved against dir.
func defaultConfig(dir string) *Config {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	dir = filepath.Clean(dir)
	c := &Config{Dir: dir}
	c.Build.Timeout = 10 * time.Minute
	c.Run.Cwd = dir
	c.Run.Env = map[string]string{}
	c.Run.EnvOverridable = []string{}
	c.Run.StopTimeout = 2 * time.Second
	c.Relay.Tool = "recompile"
	c.Relay.MaxMessage = 64 * mib
	c.Relay.Notices = true
	c.Relay.OnCrash = "restart"
	c.Relay.QueueSize = 256
	c.Relay.QueueBytes = 32 * mib
	c.Relay.QueueTimeout = 30 * time.Second
	c.Watch.Enabled = true
	c.Watch.Paths = []string{dir}
	c.Watch.Include = []string{"**/*"}
	c.Watch.Exclude = []string{}
	c.Watch.GitIgnore = true
	c.Watch.Debounce = 100 * time.Millisecond
	c.Log.Level = "info"
	return c
}

// loadConfig reads, parses and validates the config file at path. Relative
// paths inside it are resolved against the file's folder; messages name the
// file as path spells it.
func loadConfig(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := parseConfig(path, data, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	c.File = abs
	return c, nil
}

// parseConfig parses and validates a config document. name is how messages
// name the document; dir is the folder relative paths are resolved against.
// The error, when not nil, lists every problem found, one per line, each as
// "name:line:col: message".
func parseConfig(name string, data []byte, dir string) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	x, err := indexDocument(name, data)
	if err != nil {
		return nil, err
	}
	if errs := x.checkShapes(); len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	var fc fileConfig
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().EnableUnmarshalerInterface()
	if err := dec.Decode(&fc); err != nil {
		return nil, x.decodeError(err)
	}
	c := defaultConfig(dir)
	c.name, c.src = name, x
	errs := c.apply(&fc)
	if err := c.validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return c, nil
}

// ---------------------------------------------------------------------------
// The schema

// fileConfig is mcpflow.toml as written. A nil pointer is a key the file
// does not set. Field order is the order Describe and the example use.
type fileConfig struct {
	Build fileBuild `toml:"build"`
	Run   fileRun   `toml:"run"`
	Relay fileRelay `toml:"relay"`
	Watch fileWatch `toml:"watch"`
	Log   fileLog   `toml:"log"`
}

type fileBuild struct {
	Command *command  `toml:"command"`
	Timeout *duration `toml:"timeout"`
}

type fileRun struct {
	Command        *command          `toml:"command"`
	Cwd            *string           `toml:"cwd"`
	Env            map[string]string `toml:"env"`
	EnvOverridable *[]string         `toml:"env_overridable"`
	StopTimeout    *duration         `toml:"stop_timeout"`
}

type fileRelay struct {
	Tool          *string   `toml:"tool"`
	MaxMessage    *size     `toml:"max_message"`
	Notices       *bool     `toml:"notices"`
	OnCrash       *string   `toml:"on_crash"`
	RestartMarker *string   `toml:"restart_marker"`
	ServerSuffix  *string   `toml:"server_suffix"`
	CallTool      *string   `toml:"call_tool"`
	QueueSize     *int      `toml:"queue_size"`
	QueueBytes    *size     `toml:"queue_bytes"`
	QueueTimeout  *duration `toml:"queue_timeout"`
}

type fileWatch struct {
	Enabled   *bool     `toml:"enabled"`
	Paths     *[]string `toml:"paths"`
	Include   *[]string `toml:"include"`
	Exclude   *[]string `toml:"exclude"`
	GitIgnore *bool     `toml:"gitignore"`
	Debounce  *duration `toml:"debounce"`
	Poll      *duration `toml:"poll"`
}

type fileLog struct {
	Level *string `toml:"level"`
	File  *string `toml:"file"`
}

// schemaTable is one table of the schema and its keys, in schema order.
type schemaTable struct {
	name string
	keys []string
}

// schemaTables lists the tables and keys of mcpflow.toml.
func schemaTables() []schemaTable {
	root := reflect.TypeFor[fileConfig]()
	var tables []schemaTable
	for i := range root.NumField() {
		f := root.Field(i)
		tables = append(tables, schemaTable{name: tomlTag(f), keys: structKeys(f.Type)})
	}
	return tables
}

func tomlTag(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

func structKeys(t reflect.Type) []string {
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, tomlTag(t.Field(i)))
	}
	return keys
}

// valueType is implemented by the types that decode their own values; it
// says what a valid value looks like.
type valueType interface {
	unstable.Unmarshaler
	expected() string
}

// isLeaf reports whether t holds a single value rather than a table.
func isLeaf(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(reflect.TypeFor[valueType]()) {
		return true
	}
	return t.Kind() != reflect.Struct && t.Kind() != reflect.Map
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// lookupSchema resolves a key path against the schema. It returns the type
// named by the longest prefix of path that the schema knows (or that stops
// at a value), and the length of that prefix.
func lookupSchema(path []string) (reflect.Type, int) {
	t := reflect.TypeFor[fileConfig]()
	for i, part := range path {
		if isLeaf(t) {
			return t, i
		}
		switch t.Kind() {
		case reflect.Map:
			t = deref(t.Elem())
		default:
			f, ok := fieldByKey(t, part)
			if !ok {
				return t, i
			}
			t = deref(f.Type)
		}
	}
	return t, len(path)
}

func fieldByKeyFold(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); strings.EqualFold(tomlTag(f), key) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); tomlTag(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// expectedFor describes a valid value of type t found at path.
func expectedFor(t reflect.Type, path []string) string {
	if v, ok := reflect.New(t).Interface().(valueType); ok {
		return v.expected()
	}
	switch t.Kind() {
	case reflect.Struct:
		return fmt.Sprintf("a table, like [%s]", keyString(path))
	case reflect.Map:
		return `a table of strings, like { KEY = "value" }`
	case reflect.Slice:
		return `an array of strings, like ["a", "b"]`
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "a whole number"
	default:
		return "a string"
	}
}

// ---------------------------------------------------------------------------
// Values that decode themselves

// command is a command line: a string, run with sh -c, or an array of
// strings, executed directly.
type command struct{ Command }

func (*command) expected() string {
	return `a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"]`
}

func (c *command) UnmarshalTOML(raw []byte) error {
	v, err := decodeRaw(raw)
	if err != nil {
		return valueError(raw, "expected %s, got %s", c.expected(), describeRaw(raw))
	}
	switch v := v.(type) {
	case string:
		c.Command = Command{Argv: []string{v}, Shell: true}
		if strings.TrimSpace(v) == "" {
			c.Command = Command{}
		}
	case []any:
		argv := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return valueError(raw, "expected %s, got %s as item %d", c.expected(), describeValue(e), i+1)
			}
			argv = append(argv, s)
		}
		c.Command = Command{Argv: argv}
	default:
		return valueError(raw, "expected %s, got %s", c.expected(), describeRaw(raw))
	}
	return nil
}

// duration is a Go duration written as a string: "100ms", "2s", "1m30s".
// The empty string is accepted and reported by empty; keys where it means
// "off" accept it, the others reject it.
type duration struct {
	d     time.Duration
	empty bool
}

func (*duration) expected() string { return `a duration like "2s"` }

const durationForms = `write a number with a unit (ns, us, ms, s, m, h), e.g. "500ms", "2s", "1m30s"`

func (d *duration) UnmarshalTOML(raw []byte) error {
	v, err := decodeRaw(raw)
	if err != nil {
		return valueError(raw, "expected %s, got %s", d.expected(), describeRaw(raw))
	}
	switch v := v.(type) {
	case string:
		s := strings.Join(strings.Fields(v), "")
		if s == "" {
			*d = duration{empty: true}
			return nil
		}
		if isNumber(s) && s != "0" {
			return valueError(raw, "expected %s, got %s with no unit; write %q or %q", d.expected(), describeRaw(raw), s+"s", s+"ms")
		}
		pd, err := time.ParseDuration(s)
		if err != nil {
			return valueError(raw, "expected %s, got %s; %s", d.expected(), describeRaw(raw), durationForms)
		}
		*d = duration{d: pd}
		return nil
	case int64, float64:
		n := goValueText(v)
		return valueError(raw, "expected %s, got %s; durations are strings with a unit: write %q or %q", d.expected(), describeRaw(raw), n+"s", n+"ms")
	default:
		return valueError(raw, "expected %s, got %s; %s", d.expected(), describeRaw(raw), durationForms)
	}
}

// size is a number of bytes: a TOML integer, or a string holding a number
// and an optional unit ("1048576", "512KiB", "64MiB", "1GB", "1.5MiB").
type size struct{ n int64 }

func (*size) expected() string { return `a size like "64MiB"` }

const sizeForms = `write a number of bytes, or a number with a unit: KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "512KiB", "64MiB", "1GB"`

// sizeUnits maps the lowercase size units to their multipliers.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

func (s *size) UnmarshalTOML(raw []byte) error {
	v, err := decodeRaw(raw)
	if err != nil {
		return valueError(raw, "expected %s, got %s", s.expected(), describeRaw(raw))
	}
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return valueError(raw, "expected %s, got %s; a size cannot be negative", s.expected(), describeRaw(raw))
		}
		s.n = v
		return nil
	case string:
		n, unit, ok := parseSize(v)
		if ok {
			s.n = n
			return nil
		}
		hint := sizeForms
		if u := strings.ToLower(unit); u == "k" || u == "m" || u == "g" || u == "t" {
			U := strings.ToUpper(u)
			hint = fmt.Sprintf("%q is ambiguous: write %siB (powers of 1024) or %sB (powers of 1000)", unit, U, U)
		}
		return valueError(raw, "expected %s, got %s; %s", s.expected(), describeRaw(raw), hint)
	default:
		return valueError(raw, "expected %s, got %s; %s", s.expected(), describeRaw(raw), sizeForms)
	}
}

// parseSize parses "64MiB", "1.5 GB", "1048576". It returns the unit it
// saw, for messages, and false when s is not a size or does not fit in an
// int64.
func parseSize(s string) (n int64, unit string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '_' })
	if i < 0 {
		i = len(s)
	}
	num, unit := strings.ReplaceAll(s[:i], "_", ""), strings.TrimSpace(s[i:])
	mult, known := sizeUnits[strings.ToLower(unit)]
	if !known || num == "" || strings.Count(num, ".") > 1 || num[0] == '.' || num[len(num)-1] == '.' {
		return 0, unit, false
	}
	r, good := new(big.Rat).SetString(num)
	if !good {
		return 0, unit, false
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, unit, false
	}
	return q.Int64(), unit, true
}

// decodeRaw decodes one raw TOML value.
func decodeRaw(raw []byte) (any, error) {
	var holder struct {
		V any `toml:"v"`
	}
	doc := append([]byte("v = "), raw...)
	if err := toml.Unmarshal(doc, &holder); err != nil {
		return nil, err
	}
	return holder.V, nil
}

// valueError reports a bad value. raw must be the value's bytes as go-toml
// handed them to UnmarshalTOML: a slice of the document, so that go-toml
// can turn the error into a DecodeError with a position. (go-toml hands a
// value type a buffer of its own only when the document writes it as a
// table, and checkShapes rejects those documents before decoding.)
func valueError(raw []byte, format string, args ...any) error {
	return &unstable.ParserError{Highlight: raw, Message: fmt.Sprintf(format, args...)}
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

// kindOf names the TOML type of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	default:
		return "date"
	}
}

// goValueText renders a decoded scalar for a message.
func goValueText(v any) string {
	switch v := v.(type) {
	case string:
		return clip(tomlString(v))
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return clip(fmt.Sprint(v))
	}
}

// describeValue describes a decoded value for a message: "integer 2",
// "an array".
func describeValue(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return kindOf(v) + " " + goValueText(v)
}

// describeRaw renders a raw value for a message: "integer 2",
// `string "yes"`, "array [1, 2]".
func describeRaw(raw []byte) string {
	v, err := decodeRaw(raw)
	if err != nil {
		return "a table"
	}
	return kindOf(v) + " " + clip(string(raw))
}

// clip shortens s to one line of at most 40 characters.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 40 {
		r := []rune(s)
		s = string(r[:39]) + "…"
	}
	return s
}

// ---------------------------------------------------------------------------
// Resolving and validating

// apply copies the values fc sets over c's defaults, resolving paths.
func (c *Config) apply(fc *fileConfig) []error {
	var errs []error
	dur := func(key string, d *duration, dst *time.Duration, emptyOK bool) {
		switch {
		case d == nil:
		case d.empty && !emptyOK:
			errs = append(errs, c.errorAt(key, `expected a duration like "2s", got an empty string; %s`, durationForms))
		default:
			*dst = d.d
		}
	}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	list := func(dst *[]string, src *[]string) {
		if src != nil {
			*dst = append([]string{}, *src...)
		}
	}

	if fc.Build.Command != nil {
		c.Build.Command = fc.Build.Command.Command
	}
	dur("build.timeout", fc.Build.Timeout, &c.Build.Timeout, false)

	if fc.Run.Command != nil {
		c.Run.Command = fc.Run.Command.Command
	}
	if fc.Run.Cwd != nil {
		c.Run.Cwd = c.abs(*fc.Run.Cwd)
	}
	for k, v := range fc.Run.Env {
		c.Run.Env[k] = v
	}
	list(&c.Run.EnvOverridable, fc.Run.EnvOverridable)
	dur("run.stop_timeout", fc.Run.StopTimeout, &c.Run.StopTimeout, false)

	r := &fc.Relay
	set(&c.Relay.Tool, r.Tool)
	if r.MaxMessage != nil {
		c.Relay.MaxMessage = r.MaxMessage.n
	}
	if r.Notices != nil {
		c.Relay.Notices = *r.Notices
	}
	set(&c.Relay.OnCrash, r.OnCrash)
	set(&c.Relay.RestartMarker, r.RestartMarker)
	set(&c.Relay.ServerSuffix, r.ServerSuffix)
	set(&c.Relay.CallTool, r.CallTool)
	if r.QueueSize != nil {
		c.Relay.QueueSize = *r.QueueSize
	}
	if r.QueueBytes != nil {
		c.Relay.QueueBytes = r.QueueBytes.n
	}
	dur("relay.queue_timeout", r.QueueTimeout, &c.Relay.QueueTimeout, false)

	w := &fc.Watch
	if w.Enabled != nil {
		c.Watch.Enabled = *w.Enabled
	}
	if w.Paths != nil {
		c.Watch.Paths = make([]string, len(*w.Paths))
		for i, p := range *w.Paths {
			c.Watch.Paths[i] = c.abs(p)
			if p == "" {
				c.Watch.Paths[i] = ""
			}
		}
	}
	list(&c.Watch.Include, w.Include)
	list(&c.Watch.Exclude, w.Exclude)
	for _, globs := range []*[]string{&c.Watch.Include, &c.Watch.Exclude} {
		for i, g := range *globs {
			for strings.HasPrefix(g, "./") {
				g = strings.TrimLeft(g[2:], "/")
			}
			(*globs)[i] = g
		}
	}
	if w.GitIgnore != nil {
		c.Watch.GitIgnore = *w.GitIgnore
	}
	dur("watch.debounce", w.Debounce, &c.Watch.Debounce, false)
	dur("watch.poll", w.Poll, &c.Watch.Poll, true)

	set(&c.Log.Level, fc.Log.Level)
	if fc.Log.File != nil && *fc.Log.File != "" {
		c.Log.File = c.abs(*fc.Log.File)
	}
	return errs
}

// abs resolves p against c.Dir.
func (c *Config) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.Dir, p)
}

// validate checks the resolved settings. The error lists every problem, one
// per line; when c was parsed from a file each names the place to fix.
func (c *Config) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.errorAt(key, format, args...))
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, "must be more than 0, got %q", fmtDuration(d))
		}
	}
	notNegative := func(key string, d time.Duration) {
		if d < 0 {
			bad(key, "must not be negative, got %q", fmtDuration(d))
		}
	}

	checkCommand := func(key string, cmd Command) {
		if len(cmd.Argv) > 0 && cmd.Argv[0] == "" {
			bad(key, `the program name (the first item) is empty; write the program to run, e.g. ["./bin/server"]`)
		}
		for _, a := range cmd.Argv {
			if strings.ContainsRune(a, 0) {
				bad(key, "contains a NUL character")
				break
			}
		}
	}
	checkCommand("build.command", c.Build.Command)
	positive("build.timeout", c.Build.Timeout)

	if c.Run.Command.IsZero() {
		bad("run.command", `run.command is required: the command that starts your MCP server, e.g. command = ["./bin/server"]`)
	}
	checkCommand("run.command", c.Run.Command)
	if c.Run.Cwd == "" {
		bad("run.cwd", `must not be empty; use "." for the config file's folder`)
	}
	for _, k := range sortedKeys(c.Run.Env) {
		path := []string{"run", "env", k}
		if msg := envNameProblem(k); msg != "" {
			errs = append(errs, c.errorAtPath(path, "%s", msg))
		}
		if strings.ContainsRune(c.Run.Env[k], 0) {
			errs = append(errs, c.errorAtPath(path, "the value contains a NUL character"))
		}
	}
	for i, k := range c.Run.EnvOverridable {
		if msg := envNameProblem(k); msg != "" {
			errs = append(errs, c.errorAtItem("run.env_overridable", i, "%s: %s", tomlString(k), msg))
		}
	}
	notNegative("run.stop_timeout", c.Run.StopTimeout)

	if msg := toolNameProblem(c.Relay.Tool); msg != "" {
		bad("relay.tool", "%s", msg)
	}
	if c.Relay.MaxMessage < minMaxMessage {
		bad("relay.max_message", "must be at least 1KiB, got %s", fmtSize(c.Relay.MaxMessage))
	}
	if !slices.Contains(onCrashValues, c.Relay.OnCrash) {
		bad("relay.on_crash", "%s", enumProblem(c.Relay.OnCrash, onCrashValues))
	}
	if strings.ContainsAny(c.Relay.RestartMarker, "\r\n") {
		bad("relay.restart_marker", "must be a single line: it is compared with each line of the server's stderr")
	}
	if strings.ContainsAny(c.Relay.ServerSuffix, "\r\n") {
		bad("relay.server_suffix", "must be a single line")
	}
	if c.Relay.CallTool != "" {
		if msg := toolNameProblem(c.Relay.CallTool); msg != "" {
			bad("relay.call_tool", "%s", msg)
		} else if c.Relay.CallTool == c.Relay.Tool {
			bad("relay.call_tool", "must differ from relay.tool (both are %q): the two tools need their own names", c.Relay.Tool)
		}
	}
	if c.Relay.QueueSize < 1 {
		bad("relay.queue_size", "must be at least 1, got %d", c.Relay.QueueSize)
	}
	if c.Relay.QueueBytes < minMaxMessage {
		bad("relay.queue_bytes", "must be at least 1KiB, got %s", fmtSize(c.Relay.QueueBytes))
	}
	positive("relay.queue_timeout", c.Relay.QueueTimeout)

	if len(c.Watch.Paths) == 0 {
		bad("watch.paths", `is empty: list at least one folder to watch, e.g. ["."], or set enabled = false`)
	}
	for i, p := range c.Watch.Paths {
		if p == "" {
			errs = append(errs, c.errorAtItem("watch.paths", i, `item %d is empty; use "." for the config file's folder`, i+1))
		}
	}
	if len(c.Watch.Include) == 0 {
		bad("watch.include", `is empty; remove it to include every file (the default, ["**/*"]), or list globs such as ["**/*.go", "go.mod"]`)
	}
	for _, key := range []string{"watch.include", "watch.exclude"} {
		globs := c.Watch.Include
		if key == "watch.exclude" {
			globs = c.Watch.Exclude
		}
		for i, g := range globs {
			switch {
			case g == "":
				errs = append(errs, c.errorAtItem(key, i, "item %d is an empty pattern", i+1))
			case strings.HasPrefix(g, "/"):
				errs = append(errs, c.errorAtItem(key, i, "pattern %s is absolute; patterns match paths relative to the config file's folder, e.g. %s", tomlString(g), tomlString(strings.TrimLeft(g, "/"))))
			case !doublestar.ValidatePattern(g):
				errs = append(errs, c.errorAtItem(key, i, `pattern %s is not a valid glob (check its [ ] and { } pairs); e.g. "**/*.go", "internal/**", "*.{json,yaml}"`, tomlString(g)))
			}
		}
	}
	notNegative("watch.debounce", c.Watch.Debounce)
	notNegative("watch.poll", c.Watch.Poll)

	if !slices.Contains(logLevelValues, c.Log.Level) {
		bad("log.level", "%s", enumProblem(c.Log.Level, logLevelValues))
	}
	return joinErrors(errs)
}

func envNameProblem(k string) string {
	switch {
	case k == "":
		return "the name is empty"
	case strings.ContainsAny(k, "=\x00"):
		return "a variable name cannot contain '=' or NUL"
	}
	return ""
}

// toolNameProblem checks an MCP tool name: ^[A-Za-z0-9_.-]{1,128}$.
func toolNameProblem(name string) string {
	if name == "" {
		return "must not be empty: it is the name of a tool"
	}
	if len(name) > maxToolNameLen {
		return fmt.Sprintf("is %d characters long; tool names have at most %d", len(name), maxToolNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Sprintf("%s is not a valid tool name: use letters, digits, '_', '.' and '-' only (found %q)", tomlString(name), r)
		}
	}
	return ""
}

func enumProblem(got string, valid []string) string {
	msg := fmt.Sprintf("%s is not one of %s", tomlString(got), strings.Join(quoteAll(valid), ", "))
	if s := suggest(got, valid); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ---------------------------------------------------------------------------
// Errors

// configError is one problem in a config, located when the position is
// known: "name:line:col: msg".
type configError struct {
	file      string
	line, col int
	msg       string
}

func (e *configError) Error() string {
	var b strings.Builder
	if e.file != "" {
		b.WriteString(e.file)
		if e.line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.line, e.col)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	return b.String()
}

// joinErrors returns nil, the only error, or all of them one per line in
// the order of the document.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	pos := func(err error) [2]int {
		var ce *configError
		if errors.As(err, &ce) {
			return [2]int{ce.line, ce.col}
		}
		return [2]int{}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := pos(errs[i]), pos(errs[j])
		return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
	})
	return errors.Join(errs...)
}

// errorAt reports a problem with the value of key (a dotted path such as
// "relay.tool"), pointing at where the file sets it, or at its table, or
// just naming the file. The message is prefixed with the key unless it
// already starts with it.
func (c *Config) errorAt(key, format string, args ...any) error {
	return c.errorAtPath(strings.Split(key, "."), format, args...)
}

// errorAtItem is errorAt for item i of the array at key.
func (c *Config) errorAtItem(key string, i int, format string, args ...any) error {
	e := c.errorAt(key, format, args...).(*configError)
	if c.src != nil {
		e.line, e.col = c.src.itemPosition(strings.Split(key, "."), i)
	}
	return e
}

// errorAtPath is errorAt for a key path whose parts may hold dots.
func (c *Config) errorAtPath(path []string, format string, args ...any) error {
	key := keyString(path)
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, key+" ") {
		msg = key + ": " + msg
	}
	e := &configError{file: c.name, msg: msg}
	if c.src != nil {
		e.line, e.col = c.src.position(path)
	}
	return e
}

// ---------------------------------------------------------------------------
// Where things are in the document

// docIndex records where the keys and values of a document were written.
type docIndex struct {
	name   string
	data   []byte
	lines  []int // offset of the start of each line
	nodes  []*docNode
	values map[int]*docNode // by the offset of the value
	keys   map[int]*docNode // by the offset of the first part of the key
	paths  map[string]*docNode
}

// docNode is a table header, a key-value or an element of an array.
type docNode struct {
	path     []string
	header   bool // [table] or [[array table]]
	array    bool // [[array table]]
	elem     int  // index in the array for elements, else -1
	kind     unstable.Kind
	start    int    // offset of the value, or of a header's '['
	keyStart int    // offset of the first part of the key; -1 for elements
	raw      []byte // the value as written
}

// label names the node in messages: "run.env.PORT", "watch.paths[1]".
func (n *docNode) label() string {
	s := keyString(n.path)
	if n.elem >= 0 {
		s += fmt.Sprintf("[%d]", n.elem)
	}
	return s
}

// got describes the value for a message: "integer 2", `string "x"`.
func (n *docNode) got() string {
	switch n.kind {
	case unstable.String:
		return "string " + clip(string(n.raw))
	case unstable.Integer:
		return "integer " + clip(string(n.raw))
	case unstable.Float:
		return "float " + clip(string(n.raw))
	case unstable.Bool:
		return "boolean " + string(n.raw)
	case unstable.Array:
		return "array " + clip(string(n.raw))
	case unstable.InlineTable:
		return "table " + clip(string(n.raw))
	case unstable.Table, unstable.ArrayTable:
		return "a table"
	default:
		return "date " + clip(string(n.raw))
	}
}

// indexDocument parses data and records where every key and value is. A
// syntax error is reported with its position.
func indexDocument(name string, data []byte) (*docIndex, error) {
	x := &docIndex{
		name:   name,
		data:   data,
		values: map[int]*docNode{},
		keys:   map[int]*docNode{},
		paths:  map[string]*docNode{},
		lines:  []int{0},
	}
	for i, b := range data {
		if b == '\n' {
			x.lines = append(x.lines, i+1)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			path, keyStart := keyPath(e)
			table = path
			start := keyStart
			for start > 0 && (data[start-1] == ' ' || data[start-1] == '\t' || data[start-1] == '[') {
				start--
			}
			n := &docNode{path: path, header: true, array: e.Kind == unstable.ArrayTable, elem: -1, kind: e.Kind, start: start, keyStart: keyStart}
			x.add(n)
		case unstable.KeyValue:
			x.addKeyValue(&p, table, e)
		}
	}
	if err := p.Error(); err != nil {
		var perr *unstable.ParserError
		if errors.As(err, &perr) {
			line, col := x.lineCol(x.offsetOf(perr.Highlight))
			return nil, &configError{file: name, line: line, col: col, msg: perr.Message}
		}
		return nil, &configError{file: name, msg: err.Error()}
	}
	return x, nil
}

func (x *docIndex) add(n *docNode) {
	x.nodes = append(x.nodes, n)
	if n.keyStart >= 0 {
		x.keys[n.keyStart] = n
		x.paths[keyString(n.path)] = n
	}
	if !n.header {
		x.values[n.start] = n
	}
}

// addKeyValue records a key-value under the table prefix, with the entries
// of inline tables and the elements of arrays.
func (x *docIndex) addKeyValue(p *unstable.Parser, prefix []string, e *unstable.Node) {
	parts, keyStart := keyPath(e)
	path := append(slices.Clip(prefix), parts...)
	v := e.Value()
	// The value runs from after the '=' to the end of the expression (the
	// parser does not record the extent of arrays and inline tables).
	it := e.Key()
	var last unstable.Range
	for it.Next() {
		last = it.Node().Raw
	}
	i := int(last.Offset + last.Length)
	for i < len(x.data) && (x.data[i] == ' ' || x.data[i] == '\t' || x.data[i] == '=') {
		i++
	}
	end := int(e.Raw.Offset + e.Raw.Length)
	if end < i || end > len(x.data) {
		end = i
	}
	n := &docNode{path: path, elem: -1, kind: v.Kind, start: i, keyStart: keyStart, raw: x.data[i:end]}
	x.add(n)
	x.addChildren(p, path, v)
}

func (x *docIndex) addChildren(p *unstable.Parser, path []string, v *unstable.Node) {
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			x.addKeyValue(p, path, it.Node())
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := it.Node()
			if el.Raw.Length == 0 {
				continue // nested arrays: extent unknown
			}
			raw := p.Raw(el.Raw)
			if el.Kind == unstable.InlineTable {
				raw = raw[:0]
			}
			x.add(&docNode{path: path, elem: i, kind: el.Kind, start: int(el.Raw.Offset), keyStart: -1, raw: raw})
		}
	}
}

// keyPath returns the parts of a node's key and the offset of its first part.
func keyPath(e *unstable.Node) ([]string, int) {
	var parts []string
	start := -1
	it := e.Key()
	for it.Next() {
		k := it.Node()
		if start < 0 {
			start = int(k.Raw.Offset)
		}
		parts = append(parts, string(k.Data))
	}
	return parts, start
}

// offsetOf returns the offset of b in the document, or 0 when b is not a
// slice of it.
func (x *docIndex) offsetOf(b []byte) int {
	off := cap(x.data) - cap(b)
	if off < 0 || off+len(b) > len(x.data) {
		return 0
	}
	return off
}

// lineCol turns an offset into a 1-based line and byte column, as go-toml
// counts them.
func (x *docIndex) lineCol(off int) (int, int) {
	off = min(max(off, 0), len(x.data))
	line := sort.SearchInts(x.lines, off+1) // lines[line-1] <= off
	return line, off - x.lines[line-1] + 1
}

// offset turns a 1-based line and column back into an offset.
func (x *docIndex) offset(line, col int) int {
	if line < 1 || line > len(x.lines) {
		return len(x.data)
	}
	return min(x.lines[line-1]+col-1, len(x.data))
}

// itemPosition returns where the document writes item i of the array at
// path, else where it sets path.
func (x *docIndex) itemPosition(path []string, i int) (line, col int) {
	key := keyString(path)
	for j := len(x.nodes) - 1; j >= 0; j-- {
		if n := x.nodes[j]; n.elem == i && keyString(n.path) == key {
			return x.lineCol(n.start)
		}
	}
	return x.position(path)
}

// position returns where the document sets path: its value, else the
// header of the nearest enclosing table it writes, else 0, 0.
func (x *docIndex) position(path []string) (line, col int) {
	for n := len(path); n > 0; n-- {
		if node, ok := x.paths[keyString(path[:n])]; ok {
			return x.lineCol(node.start)
		}
	}
	return 0, 0
}

// checkShapes reports keys the document uses as tables where the schema
// has a single value ([run.command], run.command.x = 1), and arrays of
// tables where the schema has a table ([[run]]). go-toml cannot locate
// those errors itself.
func (x *docIndex) checkShapes() []error {
	var errs []error
	seen := map[string]bool{}
	for _, n := range x.nodes {
		if n.elem >= 0 {
			continue
		}
		t, depth := lookupSchema(n.path)
		line, col := x.lineCol(n.start)
		if !n.header {
			line, col = x.lineCol(n.keyStart)
		}
		switch {
		case depth < len(n.path) && t.Kind() == reflect.Struct && !isLeaf(t):
			// go-toml matches keys to fields ignoring case; the strict
			// decoder reports every other unknown key.
			word := n.path[depth]
			if f, ok := fieldByKeyFold(t, word); ok && !seen[keyString(n.path[:depth+1])] {
				seen[keyString(n.path[:depth+1])] = true
				errs = append(errs, &configError{file: x.name, line: line, col: col,
					msg: fmt.Sprintf("unknown key %s (keys are case-sensitive: write %q)", tomlString(word), tomlTag(f))})
			}
		case depth > 0 && isLeaf(t) && (depth < len(n.path) || n.header):
			key := keyString(n.path[:depth])
			if seen[key] {
				continue
			}
			seen[key] = true
			msg := fmt.Sprintf("%s: expected %s, got a table", key, expectedFor(t, n.path[:depth]))
			if depth < len(n.path) {
				msg += fmt.Sprintf(" (%s)", keyString(n.path))
			}
			errs = append(errs, &configError{file: x.name, line: line, col: col, msg: msg})
		case n.array && depth == len(n.path):
			// Only tables get here: a value's header took the case above.
			key := keyString(n.path)
			errs = append(errs, &configError{file: x.name, line: line, col: col,
				msg: fmt.Sprintf("%s: [[%s]] makes an array of tables; write [%s]", key, key, key)})
		}
	}
	return errs
}

// decodeError turns an error of go-toml's decoder into messages that name
// the key, what it expects and how to fix it.
func (x *docIndex) decodeError(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			errs = append(errs, x.unknownKey(&strict.Errors[i]))
		}
		return joinErrors(errs)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		off := x.offset(line, col)
		if n := x.values[off]; n != nil {
			if strings.HasPrefix(msg, "cannot decode TOML ") {
				msg = x.mismatch(n)
			}
			msg = n.label() + ": " + msg
		} else if n := x.keys[off]; n != nil {
			msg = n.label() + ": " + msg
		}
		return &configError{file: x.name, line: line, col: col, msg: msg}
	}
	var perr *unstable.ParserError
	if errors.As(err, &perr) { // raised outside the document: no position
		msg := perr.Message
		if len(perr.Key) > 0 {
			msg = keyString(perr.Key) + ": " + msg
		}
		return &configError{file: x.name, msg: msg}
	}
	return &configError{file: x.name, msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// mismatch explains a value of the wrong type.
func (x *docIndex) mismatch(n *docNode) string {
	t, _ := lookupSchema(n.path)
	if n.elem >= 0 && t.Kind() == reflect.Slice {
		t = deref(t.Elem())
	}
	msg := fmt.Sprintf("expected %s, got %s", expectedFor(t, n.path), n.got())
	raw := string(n.raw)
	switch {
	case t.Kind() == reflect.String && n.kind != unstable.InlineTable && n.kind != unstable.Array:
		msg += fmt.Sprintf("; quote it: %s", tomlString(raw))
	case t.Kind() == reflect.Int && n.kind == unstable.String:
		if s := strings.Trim(raw, `"'`); isNumber(s) {
			msg += fmt.Sprintf("; remove the quotes: %s", s)
		}
	case t.Kind() == reflect.Bool && n.kind == unstable.String:
		if s := strings.Trim(raw, `"'`); s == "true" || s == "false" {
			msg += fmt.Sprintf("; remove the quotes: %s", s)
		}
	case t.Kind() == reflect.Slice && n.kind == unstable.String:
		msg += fmt.Sprintf("; write an array: [%s]", raw)
	}
	return msg
}

// unknownKey explains a key the schema does not have, with a suggestion.
func (x *docIndex) unknownKey(de *toml.DecodeError) error {
	line, col := de.Position()
	path := []string(de.Key())
	n := x.keys[x.offset(line, col)]
	if n != nil {
		path = n.path
		if n.header {
			line, col = x.lineCol(n.start)
		}
	}
	t, depth := lookupSchema(path)
	if depth >= len(path) { // cannot happen; keep go-toml's words
		return &configError{file: x.name, line: line, col: col, msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return &configError{file: x.name, line: line, col: col, msg: unknownKeyMessage(path[depth], path[:depth], t)}
}

// unknownKeyMessage says that table (of type t) has no key word, and what
// was probably meant.
func unknownKeyMessage(word string, table []string, t reflect.Type) string {
	msg := fmt.Sprintf("unknown key %s", tomlString(word))
	if len(table) > 0 {
		msg += fmt.Sprintf(" in [%s]", keyString(table))
	}
	if hint := suggestKey(word, table, t); hint != "" {
		msg += " (did you mean " + hint + "?)"
	}
	return msg
}

// suggestKey finds what an unknown key in table (of type t) was probably
// meant to be: a key of the same table (or a table name at the top level),
// else the same key in another table: "include" under [watch].
func suggestKey(word string, table []string, t reflect.Type) string {
	if t.Kind() == reflect.Struct {
		if s := suggest(word, structKeys(t)); s != "" {
			return strconv.Quote(s)
		}
	}
	if len(table) > 1 {
		return ""
	}
	key, score := "", -1
	var where []string
	for _, tb := range schemaTables() {
		if len(table) == 1 && tb.name == table[0] {
			continue
		}
		s, sc := bestMatch(word, tb.keys)
		switch {
		case s == "":
		case score < 0 || sc < score:
			key, score, where = s, sc, []string{"[" + tb.name + "]"}
		case sc == score && s == key:
			where = append(where, "["+tb.name+"]")
		}
	}
	if key == "" {
		return ""
	}
	return fmt.Sprintf("%q under %s", key, strings.Join(where, " or "))
}

// suggest returns the candidate word most probably meant: one that differs
// from it by a few typed characters (case, '-' for '_', swapped letters),
// or one that contains it as whole '_'-separated words ("timeout" for
// "stop_timeout") or as a prefix ("warn" for "warning"), or the reverse. It returns "" when none is close, and
// when word is itself a candidate.
func suggest(word string, candidates []string) string {
	s, _ := bestMatch(word, candidates)
	if s == word {
		return ""
	}
	return s
}

// bestMatch is suggest with the score of its answer: the edit distance, or
// a score past every accepted distance for a containment match. Unlike
// suggest it returns word itself when it is a candidate.
func bestMatch(word string, candidates []string) (string, int) {
	if slices.Contains(candidates, word) {
		return word, 0
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	w := norm(word)
	limit := min(max(1, utf8.RuneCountInString(w)/3), 3)
	best, bestScore := "", limit+2
	for _, c := range candidates {
		n := norm(c)
		score := editDistance(w, n)
		if score > limit {
			score = limit + 2
			if len(w) >= 3 && len(n) >= 3 && (containsWords(n, w) || containsWords(w, n) ||
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

// containsWords reports whether s contains sub at '_' boundaries.
func containsWords(s, sub string) bool {
	return strings.Contains("_"+s+"_", "_"+sub+"_")
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

// ---------------------------------------------------------------------------
// Describe

// Describe returns the resolved settings as TOML, one key a line, for
// `mcpflow check`. The text parses back into the same settings.
func (c *Config) Describe() string {
	var b strings.Builder
	if c.File != "" {
		fmt.Fprintf(&b, "# config: %s\n", c.File)
	} else {
		b.WriteString("# config: no file (defaults and flags)\n")
	}
	fmt.Fprintf(&b, "# relative paths resolve against %s\n", c.Dir)
	kv := func(key, value, note string) {
		fmt.Fprintf(&b, "%s = %s", key, value)
		if note != "" {
			fmt.Fprintf(&b, "  # %s", note)
		}
		b.WriteString("\n")
	}
	off := func(s, note string) string {
		if s == "" {
			return note
		}
		return ""
	}
	cmdNote := func(cmd Command, none string) string {
		switch {
		case cmd.IsZero():
			return none
		case cmd.Shell:
			return "run by sh -c"
		default:
			return "executed directly"
		}
	}

	b.WriteString("\n[build]\n")
	kv("command", tomlCommand(c.Build.Command), cmdNote(c.Build.Command, "no build step"))
	kv("timeout", tomlString(fmtDuration(c.Build.Timeout)), "")

	b.WriteString("\n[run]\n")
	kv("command", tomlCommand(c.Run.Command), cmdNote(c.Run.Command, "not set: required"))
	kv("cwd", tomlString(c.Run.Cwd), "")
	env := make([]string, 0, len(c.Run.Env))
	for _, k := range sortedKeys(c.Run.Env) {
		env = append(env, tomlKey(k)+" = "+tomlString(c.Run.Env[k]))
	}
	if len(env) == 0 {
		kv("env", "{}", "")
	} else {
		kv("env", "{ "+strings.Join(env, ", ")+" }", "")
	}
	kv("env_overridable", tomlStrings(c.Run.EnvOverridable), "")
	kv("stop_timeout", tomlString(fmtDuration(c.Run.StopTimeout)), "")

	r := &c.Relay
	b.WriteString("\n[relay]\n")
	kv("tool", tomlString(r.Tool), "")
	kv("max_message", tomlString(fmtSize(r.MaxMessage)), "")
	kv("notices", strconv.FormatBool(r.Notices), "")
	kv("on_crash", tomlString(r.OnCrash), "")
	kv("restart_marker", tomlString(r.RestartMarker), off(r.RestartMarker, "off"))
	kv("server_suffix", tomlString(r.ServerSuffix), "")
	kv("call_tool", tomlString(r.CallTool), off(r.CallTool, "off"))
	kv("queue_size", strconv.Itoa(r.QueueSize), "")
	kv("queue_bytes", tomlString(fmtSize(r.QueueBytes)), "")
	kv("queue_timeout", tomlString(fmtDuration(r.QueueTimeout)), "")

	w := &c.Watch
	b.WriteString("\n[watch]\n")
	kv("enabled", strconv.FormatBool(w.Enabled), "")
	kv("paths", tomlStrings(w.Paths), "")
	kv("include", tomlStrings(w.Include), "")
	kv("exclude", tomlStrings(w.Exclude), "")
	kv("gitignore", strconv.FormatBool(w.GitIgnore), "")
	kv("debounce", tomlString(fmtDuration(w.Debounce)), "")
	poll, pollNote := "", "off: fsnotify"
	if w.Poll > 0 {
		poll, pollNote = fmtDuration(w.Poll), ""
	}
	kv("poll", tomlString(poll), pollNote)

	b.WriteString("\n[log]\n")
	kv("level", tomlString(c.Log.Level), "")
	kv("file", tomlString(c.Log.File), off(c.Log.File, "stderr only"))
	return b.String()
}

func tomlCommand(c Command) string {
	if c.IsZero() {
		return `""`
	}
	return c.String()
}

// fmtDuration writes d the way people do: "10m", "1h30m", "100ms".
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// fmtSize writes n in the largest binary unit that divides it.
func fmtSize(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlKey writes a key bare when TOML allows it, else quoted.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return tomlString(k)
		}
	}
	return k
}

// keyString writes a dotted key path: run.env."A.B".
func keyString(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = tomlKey(p)
	}
	return strings.Join(parts, ".")
}
