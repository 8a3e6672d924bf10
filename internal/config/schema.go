package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// fileConfig is mcpflow.toml as written. A nil pointer is a key the file
// does not set. Field order is the order Describe and the example use.
type fileConfig struct {
	Build   fileBuild              `toml:"build"`
	Run     fileRun                `toml:"run"`
	CLI     fileCLI                `toml:"cli"`
	Relay   fileRelay              `toml:"relay"`
	Watch   fileWatch              `toml:"watch"`
	Log     fileLog                `toml:"log"`
	HTTP    fileHTTP               `toml:"http"`
	Mux     fileMux                `toml:"mux"`
	Servers map[string]*fileServer `toml:"servers"`
}

// fileServer is one [servers.NAME] table of a mux: the sections of a
// single-server file.
type fileServer struct {
	Build fileBuild       `toml:"build"`
	Run   fileRun         `toml:"run"`
	CLI   fileCLI         `toml:"cli"`
	Relay fileServerRelay `toml:"relay"`
	Watch fileWatch       `toml:"watch"`
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
	URL            *string           `toml:"url"`
}

type fileHTTP struct {
	Listen *string `toml:"listen"`
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
	StartupGrace  *duration `toml:"startup_grace"`
	Handshake     *duration `toml:"handshake_timeout"`
	Drain         *duration `toml:"drain"`
}

// fileServerRelay is the part of [relay] a mux's server may set for
// itself; the rest belongs to the mux's front.
type fileServerRelay struct {
	MaxMessage    *size     `toml:"max_message"`
	OnCrash       *string   `toml:"on_crash"`
	RestartMarker *string   `toml:"restart_marker"`
	QueueSize     *int      `toml:"queue_size"`
	QueueBytes    *size     `toml:"queue_bytes"`
	QueueTimeout  *duration `toml:"queue_timeout"`
	StartupGrace  *duration `toml:"startup_grace"`
	Handshake     *duration `toml:"handshake_timeout"`
}

type fileCLI struct {
	Schema      *[]string         `toml:"schema"`
	Command     *[]string         `toml:"command"`
	Append      *[]string         `toml:"append"`
	Timeout     *duration         `toml:"timeout"`
	MaxOutput   *size             `toml:"max_output"`
	MaxParallel *int              `toml:"max_parallel"`
	Cwd         *string           `toml:"cwd"`
	Env         map[string]string `toml:"env"`
}

type fileMux struct {
	Separator       *string   `toml:"separator"`
	AddServer       *bool     `toml:"add_server"`
	AllowedCommands *[]string `toml:"allowed_commands"`
	AllowedEnv      *[]string `toml:"allowed_env"`
	Drain           *duration `toml:"drain"`
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
	Level             *string `toml:"level"`
	Format            *string `toml:"format"`
	File              *string `toml:"file"`
	MaxSize           *size   `toml:"max_size"`
	Traffic           *string `toml:"traffic"`
	TrafficMaxMessage *size   `toml:"traffic_max_message"`
	TrafficMaxSize    *size   `toml:"traffic_max_size"`
}

// schemaTable is one table of the schema and its keys, in schema order.
type schemaTable struct {
	name string // dotted; a table of servers is written servers.NAME
	keys []string
}

// schemaTables lists the tables and keys of mcpflow.toml, the tables of a
// server as servers.NAME.build and so on.
func schemaTables() []schemaTable {
	var tables []schemaTable
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			ft := deref(f.Type)
			switch {
			case ft.Kind() == reflect.Map && deref(ft.Elem()).Kind() == reflect.Struct:
				walk(prefix+tomlTag(f)+".NAME.", deref(ft.Elem()))
			case ft.Kind() == reflect.Struct && !isLeaf(ft):
				tables = append(tables, schemaTable{name: prefix + tomlTag(f), keys: structKeys(ft)})
			}
		}
	}
	walk("", reflect.TypeFor[fileConfig]())
	return tables
}

// topTables is schemaTables without the tables of servers.
func topTables() []schemaTable {
	var top []schemaTable
	for _, tb := range schemaTables() {
		if !strings.Contains(tb.name, ".") {
			top = append(top, tb)
		}
	}
	return top
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
		if deref(t.Elem()).Kind() == reflect.Struct {
			return fmt.Sprintf("a table of servers, like [%s.NAME.run]", keyString(path))
		}
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
