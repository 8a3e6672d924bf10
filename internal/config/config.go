package config

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
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
// path absolute. Build one with Load, Parse or Default.
//
// In Single mode Run is set and CLI and Servers are empty. In CLI mode CLI
// is set and Run.Command is zero. In Mux mode Servers holds the servers
// (in the order of the file) and Build, Run, CLI and Watch are zero;
// Relay holds the settings of the mux's front and the defaults of each
// server's relay, its Drain equal to Mux.Drain.
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
func (c *Config) Mode() Mode {
	if c.mode == "" {
		return Single
	}
	return c.mode
}

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
	// URL, when set, is where the server serves Streamable HTTP once it
	// runs (http://127.0.0.1:PORT/PATH); "{port}" in it is a free port
	// mcpflow picks for each start and passes as $PORT. "" = stdio.
	URL string
}

// HTTPConfig is [http]: the Streamable HTTP front.
type HTTPConfig struct {
	// Listen is the address mcpflow serves Streamable HTTP on, at /mcp
	// (host:port); "" = the client is on stdin and stdout.
	Listen string
	// MaxSessions bounds the HTTP front's open sessions; IdleTimeout
	// ends a session with no request and no open stream.
	MaxSessions int
	IdleTimeout time.Duration
	// AddServer offers a mux's add_server to clients over HTTP.
	AddServer bool
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
	// Ignore are globs never watched, whatever Include says, unless the
	// config names files in them (Excludes): ClientFiles by default. No
	// key sets it.
	Ignore []string
}

// LogConfig is [log].
type LogConfig struct {
	Level  string // debug, info, warn or error
	Format string // text or json
	File   string // absolute; "" = stderr only
	// MaxSize: the log file is rotated to FILE.1 past this size
	MaxSize int64

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

// ServerConfig is one [servers.NAME] table of a mux, resolved: the
// sections of a single-server file, relative paths resolved against the
// config's Dir, relay settings over the top-level [relay].
type ServerConfig struct {
	Name  string
	Build BuildConfig
	Run   RunConfig  // Run.Command is zero when CLI is set
	CLI   *CLIConfig // nil for an MCP server
	Relay RelayConfig
	Watch WatchConfig
}

// Load reads, parses and validates the config file at path. Relative paths
// inside it are resolved against the file's folder; messages name the file
// as path spells it.
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
	if err != nil {
		return nil, err
	}
	c.File = abs
	return c, nil
}
