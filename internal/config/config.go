package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Command is a command line from the config.
type Command struct {
	Argv  []string // the program and its arguments; with Shell, only the script
	Shell bool     // written as a string: run by sh -c Argv[0], not executed directly
}

// IsZero reports whether no command is set.
func (c Command) IsZero() bool { return len(c.Argv) == 0 }

// String returns the command as it would be written in mcpflow.toml.
func (c Command) String() string {
	if c.Shell && len(c.Argv) == 1 {
		return TOMLString(c.Argv[0])
	}
	return TOMLStrings(c.Argv)
}

// Mode is what a config file serves.
type Mode string

// The modes: Single runs [run], CLI serves [cli], Mux serves the
// [servers.NAME] tables (possibly none, for an agent to fill).
const (
	Single Mode = "single"
	CLI    Mode = "cli"
	Mux    Mode = "mux"
)

// Config is mcpflow's resolved configuration: defaults filled in, every
// path absolute. Build one with Load, Parse or Default. The sections a mode
// does not use are zero; in Mux mode Relay is the front's and each server's
// default, its Drain equal to Mux.Drain.
type Config struct {
	File string // absolute path of the config file ("" when built from flags)
	Dir  string // folder all relative paths are resolved against

	Build   BuildConfig
	Run     RunConfig
	CLI     *CLIConfig // nil unless Mode() is CLI
	Relay   RelayConfig
	Watch   WatchConfig
	Log     LogConfig
	HTTP    HTTPConfig
	Mux     MuxConfig
	Servers []ServerConfig // Mux mode only, ordered as in the file

	mode Mode      // "" = Single
	name string    // how messages name the config file
	src  *docIndex // where each key was written; nil when built from flags
}

// Mode reports what the config serves.
func (c *Config) Mode() Mode { return cmp.Or(c.mode, Single) }

// BuildConfig is [build].
type BuildConfig struct {
	Command Command // zero: no build step
	Timeout time.Duration
}

// RunConfig is [run].
type RunConfig struct {
	Command        Command
	Cwd            string            // absolute
	Env            map[string]string // added to the inherited environment
	EnvOverridable []string          // keys the agent may set through recompile
	StopTimeout    time.Duration     // after closing stdin, before SIGTERM
	URL            string            // Streamable HTTP at this loopback URL, "{port}" a free one; "" = stdio
}

// HTTPConfig is [http]: the Streamable HTTP front.
type HTTPConfig struct {
	Listen      string        // host:port to serve Streamable HTTP on, at /mcp; "" = stdio
	MaxSessions int           // open sessions at most
	IdleTimeout time.Duration // ends a session with no request and no open stream
	AddServer   bool          // offers a mux's add_server over HTTP too
}

// CLIConfig is [cli]: a command-line program served as MCP tools, one
// process per call.
type CLIConfig struct {
	Schema      []string          // argv that prints the tool definitions
	Command     []string          // argv prefix of every call; default Schema[:1]
	Append      []string          // added to the end of every call's argv
	Timeout     time.Duration     // per call
	MaxOutput   int64             // stdout bytes kept per call
	MaxParallel int               // calls running at once; the rest wait
	Cwd         string            // absolute
	Env         map[string]string // added to the inherited environment
}

// RelayConfig is [relay].
type RelayConfig struct {
	Tool          string
	MaxMessage    int64
	Notices       bool
	OnCrash       string // "restart" or "wait"
	RestartMarker string // "" = off
	ServerSuffix  string
	CallTool      string // "" = off
	MaxChildren   int    // processes of a stdio server, one per client session
	QueueSize     int
	QueueBytes    int64
	QueueTimeout  time.Duration
	StartupGrace  time.Duration // how long a starting child may take to answer
	Handshake     time.Duration // how long a child may take to answer a handshake
	Drain         time.Duration // calls running on a replaced child may finish within this
}

// WatchConfig is [watch].
type WatchConfig struct {
	Enabled          bool
	Paths            []string // absolute
	Include, Exclude []string // doublestar globs on slash paths relative to Dir
	GitIgnore        bool
	Debounce, Poll   time.Duration // Poll 0: use fsnotify
	Ignore           []string      // never watched unless named (Excludes): ClientFiles; no key sets it
}

// LogConfig is [log].
type LogConfig struct {
	Level             string // debug, info, warn or error
	Format            string // text or json
	File              string // absolute; "" = stderr only
	MaxSize           int64  // the log file is rotated to FILE.1 past this size
	Traffic           string // absolute; "" = no traffic capture
	TrafficMaxMessage int64  // longer messages are truncated in the capture
	TrafficMaxSize    int64  // the capture file is rotated past this size
}

// MuxConfig is [mux].
type MuxConfig struct {
	Separator       string   // between a server's name and its tool's: NAME__tool
	AddServer       bool     // the agent may start servers with add_server
	AllowedCommands []string // when not empty, add_server accepts only these programs
	AllowedEnv      []string // with AllowedCommands: the env keys add_server accepts
	Drain           time.Duration
}

// ServerConfig is one [servers.NAME] table of a mux, resolved: its relay
// settings over the top-level [relay].
type ServerConfig struct {
	Name  string
	Build BuildConfig
	Run   RunConfig  // Run.Command is zero when CLI is set
	CLI   *CLIConfig // nil for an MCP server
	Relay RelayConfig
	Watch WatchConfig
}

// Server is server s of a mux as a config of its own: its tables over
// c's, rooted where it runs (run.cwd, or cli.cwd), as a server an agent
// adds is: its build runs there and its watch globs are read from there.
func (c *Config) Server(s *ServerConfig) *Config {
	v := *c
	v.Build, v.Run, v.CLI, v.Relay, v.Watch, v.Servers = s.Build, s.Run, s.CLI, s.Relay, s.Watch, nil
	dir := s.Run.Cwd
	if s.CLI != nil {
		dir = s.CLI.Cwd
	}
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		v.Dir = dir // else check and the start say what is wrong with it
	}
	return &v
}

// Load reads, parses and validates the config file at path; messages name
// the file as path spells it.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(path, data, filepath.Dir(abs))
	if err == nil {
		c.File = abs
	}
	return c, err
}

// ClientFiles are the files MCP clients and editors keep in a project
// (servers, settings, chats). Editing them must never restart the server
// (a TypeScript project's "**/*.json" would catch .mcp.json), so every
// WatchConfig ignores them (Ignore), and init writes them into watch.exclude.
func ClientFiles() []string {
	return []string{
		".mcp.json",      // Claude Code's project servers
		".vscode/**",     // VS Code
		".cursor/**",     // Cursor
		".claude/**",     // Claude Code's settings, agents, hooks
		".gemini/**",     // Gemini CLI
		".codex/**",      // Codex CLI
		".windsurf/**",   // Windsurf
		".zed/**",        // Zed
		".idea/**",       // JetBrains IDEs (workspace.xml changes all the time)
		".continue/**",   // Continue
		".roo/**",        // Roo Code
		".kiro/**",       // Kiro
		".amazonq/**",    // Amazon Q
		".junie/**",      // Junie
		".opencode/**",   // opencode
		"opencode.json",  // opencode
		"opencode.jsonc", // opencode
		".aider*",        // aider's histories and tag cache
	}
}

// Excludes returns the globs the watcher leaves out: Exclude, then each of
// Ignore the config does not name (in Exclude, or by a watch path or an
// include glob's fixed start in it: ".claude/hooks/*.py"). dir is the
// folder the globs are relative to.
func (w *WatchConfig) Excludes(dir string) []string {
	out := append([]string{}, w.Exclude...)
	var named []string
	for _, g := range w.Include {
		if p := strings.TrimSuffix(fixedStart(g), "/"); p != "" {
			named = append(named, p)
		}
	}
	for _, p := range w.Paths {
		if rel, err := filepath.Rel(dir, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			named = append(named, filepath.ToSlash(rel))
		}
	}
	for _, g := range w.Ignore {
		matches := func(p string) bool { ok, _ := doublestar.Match(g, p); return ok }
		if !slices.Contains(w.Exclude, g) && !slices.ContainsFunc(named, matches) {
			out = append(out, g)
		}
	}
	return out
}

// fixedStart is the part of a glob before its first wildcard, cut back to
// a whole path element: ".claude/hooks/" for ".claude/hooks/*.py",
// ".mcp.json" for ".mcp.json", "" for "**/*.json".
func fixedStart(glob string) string {
	i := strings.IndexAny(glob, `*?[{\`)
	if i < 0 {
		return glob
	}
	return glob[:strings.LastIndex(glob[:i], "/")+1]
}
