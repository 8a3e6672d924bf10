package config

import (
	"path/filepath"
	"time"

	"github.com/mcpflow/mcpflow/builder"
	"github.com/mcpflow/mcpflow/internal/traffic"
	"github.com/mcpflow/mcpflow/relay"
	"github.com/mcpflow/mcpflow/watcher"
)

// The defaults of the keys. Where a package consumes the value, the
// default is that package's own (relay, builder, watcher, traffic); the
// rest are mcpflow's choices, written here once.
const (
	DefaultBuildTimeout = builder.DefaultTimeout

	DefaultStopTimeout  = relay.DefaultStopTimeout
	DefaultTool         = relay.DefaultTool
	DefaultMaxMessage   = relay.DefaultMaxMessage
	DefaultNotices      = true
	DefaultOnCrash      = relay.DefaultOnCrash
	DefaultQueueSize    = relay.DefaultQueueSize
	DefaultQueueBytes   = relay.DefaultQueueBytes
	DefaultQueueTimeout = relay.DefaultQueueTimeout
	DefaultStartupGrace = relay.DefaultStartupGrace
	DefaultDrain        = 5 * time.Second

	DefaultWatchEnabled = true
	DefaultInclude      = "**/*"
	DefaultGitIgnore    = true
	DefaultDebounce     = watcher.DefaultDebounce

	DefaultLogLevel          = "info"
	DefaultLogFormat         = "text"
	DefaultTrafficMaxMessage = traffic.DefaultMaxMessage
	DefaultTrafficMaxSize    = traffic.DefaultMaxFile

	DefaultCLITimeout     = 60 * time.Second
	DefaultCLIMaxOutput   = 4 * mib
	DefaultCLIMaxParallel = 4

	DefaultSeparator = "__"
	DefaultAddServer = true
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
		Level:             DefaultLogLevel,
		Format:            DefaultLogFormat,
		TrafficMaxMessage: DefaultTrafficMaxMessage,
		TrafficMaxSize:    DefaultTrafficMaxSize,
	}
	c.Mux = MuxConfig{
		Separator:       DefaultSeparator,
		AddServer:       DefaultAddServer,
		AllowedCommands: []string{},
		Drain:           DefaultDrain,
	}
	return c
}

func defaultBuild() BuildConfig {
	return BuildConfig{Timeout: DefaultBuildTimeout}
}

func defaultRun(dir string) RunConfig {
	return RunConfig{
		Cwd:            dir,
		Env:            map[string]string{},
		EnvOverridable: []string{},
		StopTimeout:    DefaultStopTimeout,
	}
}

// defaultCLI returns [cli]'s defaults; Command defaults to the schema's
// program once the schema is known.
func defaultCLI(dir string) *CLIConfig {
	return &CLIConfig{
		Schema:      []string{},
		Command:     []string{},
		Append:      []string{},
		Timeout:     DefaultCLITimeout,
		MaxOutput:   DefaultCLIMaxOutput,
		MaxParallel: DefaultCLIMaxParallel,
		Cwd:         dir,
		Env:         map[string]string{},
	}
}

func defaultRelay() RelayConfig {
	return RelayConfig{
		Tool:         DefaultTool,
		MaxMessage:   DefaultMaxMessage,
		Notices:      DefaultNotices,
		OnCrash:      DefaultOnCrash,
		QueueSize:    DefaultQueueSize,
		QueueBytes:   DefaultQueueBytes,
		QueueTimeout: DefaultQueueTimeout,
		StartupGrace: DefaultStartupGrace,
		Drain:        DefaultDrain,
	}
}

func defaultWatch(dir string) WatchConfig {
	return WatchConfig{
		Enabled:   DefaultWatchEnabled,
		Paths:     []string{dir},
		Include:   []string{DefaultInclude},
		Exclude:   []string{},
		GitIgnore: DefaultGitIgnore,
		Debounce:  DefaultDebounce,
	}
}
