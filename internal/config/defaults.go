package config

import (
	"path/filepath"
	"time"

	"github.com/mcpflow/mcpflow/builder"
	"github.com/mcpflow/mcpflow/clitools"
	"github.com/mcpflow/mcpflow/internal/ops/traffic"
	"github.com/mcpflow/mcpflow/mux"
	"github.com/mcpflow/mcpflow/relay"
	"github.com/mcpflow/mcpflow/watcher"
)

// The defaults of the keys. Where a package consumes the value, the
// default is that package's own (relay, builder, watcher, traffic); the
// rest are mcpflow's choices, written here once.
const (
	defaultBuildTimeout = builder.DefaultTimeout

	defaultStopTimeout  = relay.DefaultStopTimeout
	defaultTool         = relay.DefaultTool
	defaultMaxMessage   = relay.DefaultMaxMessage
	defaultNotices      = true
	defaultOnCrash      = relay.DefaultOnCrash
	defaultQueueSize    = relay.DefaultQueueSize
	defaultQueueBytes   = relay.DefaultQueueBytes
	defaultQueueTimeout = relay.DefaultQueueTimeout
	defaultStartupGrace = relay.DefaultStartupGrace
	defaultHandshake    = relay.DefaultHandshake
	defaultDrain        = 5 * time.Second

	defaultWatchEnabled = true
	defaultInclude      = "**/*"
	defaultGitIgnore    = true
	defaultDebounce     = watcher.DefaultDebounce

	defaultLogLevel          = "info"
	defaultLogFormat         = "text"
	defaultLogMaxSize        = traffic.DefaultMaxFile // rotated like the traffic file
	defaultTrafficMaxMessage = traffic.DefaultMaxMessage
	defaultTrafficMaxSize    = traffic.DefaultMaxFile

	defaultCLITimeout     = clitools.DefaultTimeout
	defaultCLIMaxOutput   = clitools.DefaultMaxOutput
	defaultCLIMaxParallel = clitools.DefaultMaxParallel

	defaultSeparator = mux.DefaultSeparator
	defaultAddServer = true
)

// The valid values of the enumerated keys, in the order messages list them.
var (
	onCrashValues   = []string{"restart", "wait"}
	logLevelValues  = []string{"debug", "info", "warn", "error"}
	logFormatValues = []string{"text", "json"}
)

// Limits that are not defaults.
const (
	kib            = 1 << 10
	mib            = 1 << 20
	minMaxMessage  = 1 * kib
	maxToolNameLen = 128
)

// Default returns the single-server configuration with every default and
// no run command, its relative paths resolved against dir.
func Default(dir string) *Config {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	dir = filepath.Clean(dir)
	c := &Config{Dir: dir}
	c.Build = defaultBuild()
	c.Run = defaultRun(dir)
	c.Relay = defaultRelay()
	c.Watch = defaultWatch(dir)
	c.Log = LogConfig{
		Level:             defaultLogLevel,
		Format:            defaultLogFormat,
		MaxSize:           defaultLogMaxSize,
		TrafficMaxMessage: defaultTrafficMaxMessage,
		TrafficMaxSize:    defaultTrafficMaxSize,
	}
	c.Mux = MuxConfig{
		Separator:       defaultSeparator,
		AddServer:       defaultAddServer,
		AllowedCommands: []string{},
		AllowedEnv:      []string{},
		Drain:           defaultDrain,
	}
	return c
}

func defaultBuild() BuildConfig {
	return BuildConfig{Timeout: defaultBuildTimeout}
}

func defaultRun(dir string) RunConfig {
	return RunConfig{
		Cwd:            dir,
		Env:            map[string]string{},
		EnvOverridable: []string{},
		StopTimeout:    defaultStopTimeout,
	}
}

// defaultCLI returns [cli]'s defaults; Command defaults to the schema's
// program once the schema is known.
func defaultCLI(dir string) *CLIConfig {
	return &CLIConfig{
		Schema:      []string{},
		Command:     []string{},
		Append:      []string{},
		Timeout:     defaultCLITimeout,
		MaxOutput:   defaultCLIMaxOutput,
		MaxParallel: defaultCLIMaxParallel,
		Cwd:         dir,
		Env:         map[string]string{},
	}
}

func defaultRelay() RelayConfig {
	return RelayConfig{
		Tool:         defaultTool,
		MaxMessage:   defaultMaxMessage,
		Notices:      defaultNotices,
		OnCrash:      defaultOnCrash,
		QueueSize:    defaultQueueSize,
		QueueBytes:   defaultQueueBytes,
		QueueTimeout: defaultQueueTimeout,
		StartupGrace: defaultStartupGrace,
		Handshake:    defaultHandshake,
		Drain:        defaultDrain,
	}
}

func defaultWatch(dir string) WatchConfig {
	return WatchConfig{
		Enabled:   defaultWatchEnabled,
		Paths:     []string{dir},
		Include:   []string{defaultInclude},
		Exclude:   []string{},
		GitIgnore: defaultGitIgnore,
		Debounce:  defaultDebounce,
		Ignore:    ClientFiles(),
	}
}
