package main

import "github.com/mcpflow/mcpflow/internal/config"

// The config file lives in internal/config; these names are how the
// command's files (init, detect, check, watch) refer to it.
type (
	Config  = config.Config
	Command = config.Command
)

func loadConfig(path string) (*Config, error) { return config.Load(path) }

func parseConfig(name string, data []byte, dir string) (*Config, error) {
	return config.Parse(name, data, dir)
}

func defaultConfig(dir string) *Config { return config.Default(dir) }

func tomlString(s string) string { return config.TOMLString(s) }

func tomlStrings(ss []string) string { return config.TOMLStrings(ss) }
