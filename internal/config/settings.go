package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// setting is one key of mcpflow.toml: everything mcpflow knows about it
// (doc.go).
type setting struct {
	key   string // table.key, as a single-server file writes it
	field string // where the value goes: Section.Field of Config, and of ServerConfig for inServer keys
	kind  kind
	def   string // the default, written as in mcpflow.toml: `"30s"`
	modes modes  // the configs the key applies to
	doc   string // what the key does: one line of Markdown (code spans), lowercase, no final period

	empty    string                           // what "" (an empty list, a zero duration) means, for check's note; a string or path key with it skips check and its path is not resolved when empty; a duration key without it rejects ""
	values   []string                         // the valid values of an enumerated string
	min      int64                            // the least valid integer, size or duration (1 for a duration: more than 0); numbers are never negative
	check    func(s string) string            // a problem with a string's value, or ""
	nonEmpty string                           // the error for an empty list
	item     func(i int, s string) string     // a problem with item i of a list, or ""
	also     func(sec any, dir string) string // a comment check writes below the key, given the section (*WatchConfig...)
	modeMsg  string                           // the error for the key written in a config it does not apply to

	shown   string // the reference's default when def does not say it: "required"
	example string // the example's value when it is not def; {name} is the server's name
	see     string // a Markdown link the reference adds to doc
}

// modes are the configs a key applies to.
type modes uint8

const (
	inSingle modes = 1 << iota // a file with [run]
	inCLI                      // a file with [cli]
	inMux                      // the front of a mux, a file with [mux] or [servers.NAME]
	inServer                   // [servers.NAME.TABLE]: each server of a mux sets it over the default

	everywhere = inSingle | inCLI | inMux
)

var modeBits = map[Mode]modes{"": inSingle, Single: inSingle, CLI: inCLI, Mux: inMux}

func (m modes) has(mode Mode) bool { return m&modeBits[mode] != 0 }

// The limits that are not settings.
const (
	kib            = 1 << 10
	maxToolNameLen = 128
)

// settings are the keys of mcpflow.toml in the order of the file: each
// table's keys together, in the order of its section.
var settings = []setting{
	{key: "build.command", field: "Build.Command", kind: kCommand, def: `""`, modes: inSingle | inCLI | inServer,
		empty: "no build step", shown: "none", example: `"go build -o bin/{name} ./cmd/{name}"`,
		doc: "builds the server before each (re)start; the old server keeps serving while it runs. `\"\"` = no build step"},
	{key: "build.timeout", field: "Build.Timeout", kind: kDuration, def: `"10m"`, modes: inSingle | inCLI | inServer, min: 1,
		doc: "a longer build is killed (whole process group) and reported as failed"},

	{key: "run.command", field: "Run.Command", kind: kCommand, def: `""`, modes: inSingle | inServer,
		empty: "not set: required", shown: "required (unless `[cli]` or `[servers.NAME]`)", example: `["./bin/{name}"]`,
		doc: "starts your MCP server, which speaks MCP on its stdin and stdout (or at `run.url`)"},
	{key: "run.cwd", field: "Run.Cwd", kind: kPath, def: `"."`, modes: inSingle | inServer,
		doc: "the server's working directory"},
	{key: "run.env", field: "Run.Env", kind: kEnv, def: `{}`, modes: inSingle | inServer,
		doc: "variables added to the inherited environment, e.g. `{ LOG_LEVEL = \"debug\" }`"},
	{key: "run.env_overridable", field: "Run.EnvOverridable", kind: kList, def: `[]`, modes: inSingle | inServer, item: envNameItem,
		doc: "keys the agent may set through recompile's `env` argument, e.g. `[\"LOG_LEVEL\"]`"},
	{key: "run.stop_timeout", field: "Run.StopTimeout", kind: kDuration, def: `"2s"`, modes: inSingle | inServer,
		doc: "after closing the server's stdin, wait this long, then SIGTERM the group, wait again, then SIGKILL"},
	{key: "run.url", field: "Run.URL", kind: kString, def: `""`, modes: inSingle | inServer, check: URLProblem,
		empty: "stdio: the server speaks on its stdin and stdout", see: "[HTTP](#streamable-http)",
		doc: "the server speaks Streamable HTTP at this URL instead of stdio: `http://127.0.0.1:PORT/PATH`, loopback only; `{port}` as the port is a free port for each start, passed as `$PORT`; `\"\"` = stdio"},

	{key: "cli.schema", field: "CLI.Schema", kind: kList, def: `[]`, modes: inCLI | inServer, item: argvItem,
		shown: "required", example: `["./bin/{name}", "schema", "--json"]`,
		doc: "the command that prints the tool definitions, `{\"tools\": [...]}`"},
	{key: "cli.command", field: "CLI.Command", kind: kList, def: `[]`, modes: inCLI | inServer,
		shown: "the schema command's program", example: `["./bin/{name}"]`,
		doc: "the start of every call's argv, before the tool's `cli_command`"},
	{key: "cli.append", field: "CLI.Append", kind: kList, def: `[]`, modes: inCLI | inServer, item: argvItem,
		doc: "arguments added to the end of every call"},
	{key: "cli.timeout", field: "CLI.Timeout", kind: kDuration, def: `"60s"`, modes: inCLI | inServer, min: 1,
		doc: "a longer call is killed (whole process group) and answers `isError`"},
	{key: "cli.max_output", field: "CLI.MaxOutput", kind: kSize, def: `"4MiB"`, modes: inCLI | inServer, min: 1,
		doc: "most bytes of stdout a call may print; past it the call is killed"},
	{key: "cli.max_parallel", field: "CLI.MaxParallel", kind: kInt, def: `4`, modes: inCLI | inServer, min: 1,
		doc: "calls running at once; the others wait for a slot"},
	{key: "cli.cwd", field: "CLI.Cwd", kind: kPath, def: `"."`, modes: inCLI | inServer,
		doc: "the calls' working directory"},
	{key: "cli.env", field: "CLI.Env", kind: kEnv, def: `{}`, modes: inCLI | inServer,
		doc: "variables added to the inherited environment"},

	{key: "relay.tool", field: "Relay.Tool", kind: kString, def: `"recompile"`, modes: inSingle | inCLI, check: toolNameProblem,
		modeMsg: `names the rebuild tool of mcpflow watch; behind the mux every server is rebuilt with reload_server {"name": ...}: remove relay.tool`,
		doc:     "name of the rebuild tool mcpflow adds (letters, digits, `_ . -`); the same over stdio, `--http` and the era bridge. A mux has no such tool (each server is rebuilt with `reload_server`), so `mcpflow check` refuses it there"},
	{key: "relay.max_message", field: "Relay.MaxMessage", kind: kSize, def: `"64MiB"`, modes: everywhere | inServer, min: kib,
		doc: "largest JSON-RPC message in either direction (at least `1KiB`). A message is relayed whole (checked before the client sees a byte), so a large one costs about its own size in memory while in flight; that memory is kept for the next large message and handed back to the OS after 5 s without one"},
	{key: "relay.notices", field: "Relay.Notices", kind: kBool, def: `true`, modes: everywhere,
		doc: "add a short note to the next `tools/call` result after a failed automatic rebuild or a crash between calls (in a mux, to the next call of that server's tools)"},
	{key: "relay.on_crash", field: "Relay.OnCrash", kind: kString, def: `"restart"`, modes: everywhere | inServer, values: []string{"restart", "wait"},
		doc: "`\"restart\"`: restart with backoff, stop after 3 crashes in a row within 5 s of starting (crash loop) until a file changes or recompile is called; `\"wait\"`: stay down until then"},
	{key: "relay.restart_marker", field: "Relay.RestartMarker", kind: kString, def: `""`, modes: everywhere | inServer,
		empty: "off", check: oneLine("must be a single line: it is compared with each line of the server's stderr"),
		doc: "a stderr line equal to this makes mcpflow rebuild and restart the server; `\"\"` = off"},
	{key: "relay.server_suffix", field: "Relay.ServerSuffix", kind: kString, def: `""`, modes: everywhere, check: oneLine("must be a single line"),
		doc: "appended to `serverInfo.name` and `version` in the initialize (or `server/discover`) result, e.g. `\"-dev\"`; in a mux, to the mux's own (`mcpflow-dev`)"},
	{key: "relay.call_tool", field: "Relay.CallTool", kind: kString, def: `""`, modes: everywhere, check: toolNameProblem,
		empty: "off", see: "[clients that never refresh their tool list](#clients-that-never-refresh-their-tool-list)",
		doc: "name of an extra tool `{name, arguments}` that forwards a `tools/call`, for clients that ignore `list_changed`; must differ from `tool`; `\"\"` = off"},
	{key: "relay.max_children", field: "Relay.MaxChildren", kind: kInt, def: `16`, modes: everywhere | inServer, min: 1,
		doc: "processes of a stdio server that may run at once: a stdio server serves one client, so each client session (an agent, the Inspector, `mcpflow call`) gets a process of its own; a session beyond the limit is answered with an error saying so until another ends. An HTTP server is one process for every session"},
	{key: "relay.queue_size", field: "Relay.QueueSize", kind: kInt, def: `256`, modes: everywhere | inServer, min: 1,
		doc: "client messages held during a restart"},
	{key: "relay.queue_bytes", field: "Relay.QueueBytes", kind: kSize, def: `"32MiB"`, modes: everywhere | inServer, min: kib,
		doc: "bytes of client messages held during a restart"},
	{key: "relay.queue_timeout", field: "Relay.QueueTimeout", kind: kDuration, def: `"30s"`, modes: everywhere | inServer, min: 1,
		doc: "a held message older than this gets an error"},
	{key: "relay.startup_grace", field: "Relay.StartupGrace", kind: kDuration, def: `""`, modes: everywhere | inServer,
		empty: "as long as the client waits: Claude Code 25s, Codex 8s, others 4s", see: "[while the first build runs](#what-the-agent-sees)",
		doc: "how long client messages wait for the first server when no record of its last start answers them; after that mcpflow answers the client itself until the server is up. `\"\"`: a little less than the client waits (Claude Code 25 s, Codex 8 s, others 4 s)"},
	{key: "relay.handshake_timeout", field: "Relay.Handshake", kind: kDuration, def: `"30s"`, modes: everywhere | inServer, min: 1,
		doc: "how long the server may take to answer a handshake (`initialize`, `server/discover`, mcpflow's replay); a server that does not answer in time is stopped, and the agent reads why, with the end of its stderr (a server that serves HTTP by default, or one given the wrong arguments, never answers)"},
	{key: "relay.drain", field: "Relay.Drain", kind: kDuration, def: `"5s"`, modes: inSingle | inCLI,
		modeMsg: "in a mux the drain time is mux.drain: move it there",
		doc:     "when a rebuild replaces the server, calls already running may finish within this time while new calls wait; what still runs then gets the restart error"},

	{key: "watch.enabled", field: "Watch.Enabled", kind: kBool, def: `true`, modes: inSingle | inCLI | inServer,
		doc: "rebuild on file changes"},
	{key: "watch.paths", field: "Watch.Paths", kind: kPaths, def: `["."]`, modes: inSingle | inCLI | inServer,
		nonEmpty: `is empty: list at least one folder to watch, e.g. ["."], or set enabled = false`,
		item: func(i int, p string) string {
			return when(p == "", `item %d is empty; use "." for the config file's folder`, i+1)
		},
		doc: "folders to watch"},
	{key: "watch.include", field: "Watch.Include", kind: kGlobs, def: `["**/*"]`, modes: inSingle | inCLI | inServer, item: globItem,
		nonEmpty: `is empty; remove it to include every file (the default, ["**/*"]), or list globs such as ["**/*.go", "go.mod"]`,
		doc:      "doublestar globs (slash paths relative to the file's folder) of files that trigger a rebuild, e.g. `[\"**/*.go\", \"go.mod\"]`"},
	{key: "watch.exclude", field: "Watch.Exclude", kind: kGlobs, def: `[]`, modes: inSingle | inCLI | inServer, item: globItem,
		also: func(sec any, dir string) string {
			w := sec.(*WatchConfig)
			if ig := w.Excludes(dir)[len(w.Exclude):]; len(ig) > 0 {
				return "never watched either (clients' and editors' files): " + strings.Join(ig, ", ")
			}
			return ""
		},
		doc: "globs of files that never trigger, e.g. `[\"**/*_test.go\"]`; exclude wins over include, and excluded folders are not watched at all. Your MCP clients' and editors' files never trigger, listed or not"},
	{key: "watch.gitignore", field: "Watch.GitIgnore", kind: kBool, def: `true`, modes: inSingle | inCLI | inServer,
		doc: "honour `.gitignore` files (root and nested) and `.git/info/exclude`"},
	{key: "watch.debounce", field: "Watch.Debounce", kind: kDuration, def: `"50ms"`, modes: inSingle | inCLI | inServer,
		doc: "quiet time after the last change before a build starts (capped at 3 s of continuous changes)"},
	{key: "watch.poll", field: "Watch.Poll", kind: kDuration, def: `""`, modes: inSingle | inCLI | inServer, empty: "off: fsnotify",
		doc: "poll at this interval instead of file system events (network mounts, containers, WSL), e.g. `\"500ms\"`; `\"\"` = off"},

	{key: "log.level", field: "Log.Level", kind: kString, def: `"info"`, modes: everywhere, values: []string{"debug", "info", "warn", "error"},
		doc: "least severe messages logged: `\"debug\"`, `\"info\"`, `\"warn\"` or `\"error\"` (`--log-level` overrides it)"},
	{key: "log.format", field: "Log.Format", kind: kString, def: `"text"`, modes: everywhere, values: []string{"text", "json"},
		doc: "`\"text\"` for people; `\"json\"`, one object a line, for log shippers"},
	{key: "log.file", field: "Log.File", kind: kPath, def: `""`, modes: everywhere, empty: "stderr only",
		doc: "also write the log here (clients hide stderr; `--log-file` sets it too); created `0600`. It gets every record even when stderr is not read (then stderr drops lines, and says how many once it is read again); `\"\"` = stderr only"},
	{key: "log.max_size", field: "Log.MaxSize", kind: kSize, def: `"16MiB"`, modes: everywhere, min: kib,
		doc: "the log file is rotated to `FILE.1` at this size (one previous file is kept). Several instances may share one file: each record is appended whole, one instance rotates it, and the others follow at their next record"},
	{key: "log.traffic", field: "Log.Traffic", kind: kPath, def: `""`, modes: everywhere, empty: "off", see: "[traffic capture](#traffic-capture)",
		doc: "record every message, both directions, to this JSON Lines file (also `watch --traffic FILE`); `\"\"` = off"},
	{key: "log.traffic_max_message", field: "Log.TrafficMaxMessage", kind: kSize, def: `"64KiB"`, modes: everywhere, min: kib,
		doc: "a larger message is recorded truncated, with its size"},
	{key: "log.traffic_max_size", field: "Log.TrafficMaxSize", kind: kSize, def: `"16MiB"`, modes: everywhere, min: kib,
		doc: "the traffic file is rotated to `FILE.1` at this size"},

	{key: "http.listen", field: "HTTP.Listen", kind: kString, def: `""`, modes: everywhere, check: ListenProblem,
		empty: "off: the client is on stdin and stdout", see: "[HTTP](#streamable-http)",
		doc: "serve Streamable HTTP at `http://ADDRESS/mcp` instead of stdio (as `--http ADDRESS`), e.g. `\"127.0.0.1:8931\"`; requests from a browser page of another origin are refused; `\"\"` = the client is on stdin and stdout"},
	{key: "http.max_sessions", field: "HTTP.MaxSessions", kind: kInt, def: `1000`, modes: everywhere, min: 1,
		doc: "open HTTP sessions at most; a client that would open one more gets 503"},
	{key: "http.session_idle", field: "HTTP.IdleTimeout", kind: kDuration, def: `"30m"`, modes: everywhere, min: 1,
		doc: "an HTTP session with no request and no open stream for this long ends (its client starts a new one)"},
	{key: "http.add_server", field: "HTTP.AddServer", kind: kBool, def: `false`, modes: inMux,
		doc: "offers the mux's `add_server` to clients over HTTP too; off, only a stdio client (the one that started mcpflow) may start programs"},

	{key: "mux.separator", field: "Mux.Separator", kind: kString, def: `"__"`, modes: inMux, check: separatorProblem,
		doc: "joins a server's name and its tools' names (characters allowed in tool names); `mcpflow check` warns about one that lets a server's tool take a management tool's name (with `\"_\"`, a server `add` with a tool `server` would be `add_server`)"},
	{key: "mux.add_server", field: "Mux.AddServer", kind: kBool, def: `true`, modes: inMux,
		doc: "lets the agent start servers itself with the `add_server` tool. **An agent with `add_server` can run any program you can, unless `allowed_commands` restricts it or it runs in a sandbox**; set `false` to turn it off"},
	{key: "mux.allowed_commands", field: "Mux.AllowedCommands", kind: kList, def: `[]`, modes: inMux, empty: "any command",
		item: func(i int, cmd string) string { return when(cmd == "", "item %d is empty", i+1) },
		doc:  "when not empty, the only programs (the command's first word) `add_server` may start; `add_server` then takes no `build` (a shell command, which the list cannot check) and only the `env` keys of `allowed_env`"},
	{key: "mux.allowed_env", field: "Mux.AllowedEnv", kind: kList, def: `[]`, modes: inMux, empty: "none, when allowed_commands is set",
		item: func(i int, k string) string {
			return when(k == "" || strings.ContainsAny(k, "= "), "item %d is not an environment variable's name", i+1)
		},
		doc: "with `allowed_commands` set, the environment variables `add_server`'s `env` may set (`LD_PRELOAD` and the like are refused unless listed)"},
	{key: "mux.drain", field: "Mux.Drain", kind: kDuration, def: `"5s"`, modes: inMux,
		doc: "when a server is replaced, calls already running on it may finish within this time (it sets `relay.drain` for every server)"},
}

func oneLine(msg string) func(string) string {
	return func(s string) string { return when(strings.ContainsAny(s, "\r\n"), "%s", msg) }
}

// when is the message when bad, else "".
func when(bad bool, format string, args ...any) string {
	if !bad {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

func envNameItem(_ int, k string) string {
	if msg := envNameProblem(k); msg != "" {
		return TOMLString(k) + ": " + msg
	}
	return ""
}

// argvItem checks an item of a command line given as an array.
func argvItem(i int, a string) string {
	switch {
	case i == 0 && a == "":
		return "the program name (the first item) is empty"
	case strings.ContainsRune(a, 0):
		return fmt.Sprintf("item %d contains a NUL character", i+1)
	}
	return ""
}

func globItem(i int, g string) string {
	switch {
	case g == "":
		return fmt.Sprintf("item %d is an empty pattern", i+1)
	case strings.HasPrefix(g, "/"):
		return fmt.Sprintf("pattern %s is absolute; patterns match paths relative to the config file's folder, e.g. %s", TOMLString(g), TOMLString(strings.TrimLeft(g, "/")))
	case !doublestar.ValidatePattern(g):
		return fmt.Sprintf(`pattern %s is not a valid glob (check its [ ] and { } pairs); e.g. "**/*.go", "internal/**", "*.{json,yaml}"`, TOMLString(g))
	}
	return ""
}

// separatorProblem checks mux.separator.
func separatorProblem(sep string) string {
	if sep == "" {
		return `must not be empty: it joins a server's name and its tools', e.g. "__"`
	}
	for _, r := range sep {
		if !toolNameRune(r) {
			return fmt.Sprintf("%s can only hold characters allowed in tool names: letters, digits, '_', '.' and '-' (found %q)", TOMLString(sep), r)
		}
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
		if !toolNameRune(r) {
			return fmt.Sprintf("%s is not a valid tool name: use letters, digits, '_', '.' and '-' only (found %q)", TOMLString(name), r)
		}
	}
	return ""
}

func toolNameRune(r rune) bool { return bareKeyRune(r) || r == '.' }

func envNameProblem(k string) string {
	switch {
	case k == "":
		return "the name is empty"
	case strings.ContainsAny(k, "=\x00"):
		return "a variable name cannot contain '=' or NUL"
	}
	return ""
}

func (s *setting) table() string { t, _, _ := strings.Cut(s.key, "."); return t }
func (s *setting) name() string  { _, n, _ := strings.Cut(s.key, "."); return n }

// tableNames are the tables of the settings, in order.
var tableNames = func() []string {
	var names []string
	for i := range settings {
		names = append(names, settings[i].table())
	}
	return slices.Compact(names)
}()

// lookup returns the setting table.name, or nil. With server it returns
// only the keys a mux's server sets.
func lookup(table, name string, server bool) *setting {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.key == table+"."+name })
	if i < 0 || server && settings[i].modes&inServer == 0 {
		return nil
	}
	return &settings[i]
}

// keysOf lists the keys of table; with server, those a mux's server sets.
func keysOf(table string, server bool) []string {
	var keys []string
	for i := range settings {
		if s := &settings[i]; s.table() == table && (!server || s.modes&inServer != 0) {
			keys = append(keys, s.name())
		}
	}
	return keys
}

// serverTables are the tables of a [servers.NAME] table.
var serverTables = slices.DeleteFunc(slices.Clone(tableNames), func(t string) bool { return keysOf(t, true) == nil })

// applies reports whether s applies to c (srv nil) or to its server srv:
// a server has [run] or [cli], not both.
func (c *Config) applies(s *setting, srv *ServerConfig) bool {
	if srv == nil {
		return s.modes.has(c.Mode())
	}
	return s.modes&inServer != 0 && !(s.table() == "run" && srv.CLI != nil)
}

// tableApplies reports whether some key of table applies to mode.
func tableApplies(table string, mode Mode) bool {
	return slices.ContainsFunc(settings, func(s setting) bool { return s.table() == table && s.modes.has(mode) })
}

// ValueProblem is what is wrong with value for the enumerated key (given by
// a flag that overrides it, such as --log-level), or "".
func ValueProblem(key, value string) string {
	table, name, _ := strings.Cut(key, ".")
	if s := lookup(table, name, false); s != nil && len(s.values) > 0 && !slices.Contains(s.values, value) {
		return fmt.Sprintf("%s: %q is not one of %s", key, value, strings.Join(s.values, ", "))
	}
	return ""
}

// PortPlaceholder in run.url stands for a free port mcpflow picks for each
// start of the server and passes to it as $PORT.
const PortPlaceholder = "{port}"

// URLProblem says what is wrong with a run.url, or "" when it is one
// mcpflow can use: http or https, a loopback host (the server is a child
// of mcpflow's on this machine), and a port or {port}.
func URLProblem(raw string) string {
	const eg = `e.g. url = "http://127.0.0.1:{port}/mcp" (a free port each start, passed as $PORT) or "http://127.0.0.1:8080/mcp"`
	if !strings.Contains(raw, "://") {
		return fmt.Sprintf("%s has no scheme: write it as http://%s; %s", TOMLString(raw), raw, eg)
	}
	u, err := url.Parse(strings.Replace(raw, PortPlaceholder, "1", 1))
	if err != nil || u.Host == "" {
		return fmt.Sprintf("%s is not a URL; %s", TOMLString(raw), eg)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("scheme %q: the server's URL is http:// (or https://); %s", u.Scheme, eg)
	}
	if strings.Count(raw, PortPlaceholder) > 1 || strings.Contains(raw, PortPlaceholder) && !strings.Contains(raw, ":"+PortPlaceholder) {
		return fmt.Sprintf("%s may appear once, as the port; %s", PortPlaceholder, eg)
	}
	if !Loopback(u.Hostname()) {
		return fmt.Sprintf("host %q is not this machine: mcpflow starts the server, so its URL is on 127.0.0.1, [::1] or localhost; %s", u.Hostname(), eg)
	}
	if u.Port() == "" {
		return fmt.Sprintf("%s has no port: write the port the server listens on, or %s; %s", TOMLString(raw), PortPlaceholder, eg)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return fmt.Sprintf("port %q is not a port number (1 to 65535) or %s; %s", u.Port(), PortPlaceholder, eg)
	}
	return ""
}

// ListenProblem says what is wrong with an [http] listen address (or the
// --http flag's), or "" when net.Listen can be given it: host:port, the
// port a number (0 = any free port).
func ListenProblem(addr string) string {
	const eg = `e.g. listen = "127.0.0.1:8931" (or --http 127.0.0.1:8931)`
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%s is not host:port; %s", TOMLString(addr), eg)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Sprintf("port %q is not a port number (0 to 65535); %s", port, eg)
	}
	if host == "" {
		return fmt.Sprintf("%s has no host, which would listen on every network; write 127.0.0.1 to serve this machine only (or 0.0.0.0 if you mean every network); %s", TOMLString(addr), eg)
	}
	return ""
}

// Loopback reports whether host (a name or an address, without a port)
// is this machine: localhost, or an address in 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	return strings.EqualFold(host, "localhost") || net.ParseIP(strings.Trim(host, "[]")).IsLoopback() // a nil IP is no loopback
}
