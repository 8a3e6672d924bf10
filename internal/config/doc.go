// Package config reads mcpflow.toml into the Config the rest of mcpflow
// reads, with error messages that name the file, the line and column, and
// the fix:
//
//	mcpflow.toml:4:1: unknown key "bulid" (did you mean "build"?)
//	mcpflow.toml:7:16: run.stop_timeout: expected a duration like "2s", got integer 2; ...
//
// # One table
//
// Every key is declared once, in the settings table (settings.go): its
// name, kind, default, the modes it applies to, a one-line doc, its valid
// values and bounds. Everything else comes from that entry:
//
//   - reading (read.go): unknown keys with did-you-mean, values of the
//     wrong kind, keys written in a mode they do not apply to; the defaults
//     (Default) are the entries' defs, decoded as a file's values are;
//   - validation (validate.go): bounds, enumerations and the entry's own
//     checks; only the checks that join several keys are written out;
//   - `mcpflow check`'s printout (Describe, describe.go);
//   - mcpflow.toml.example at the repository's root and the README's tables
//     of keys (between "<!-- keys: ... -->" markers), which
//     reference_test.go generates and checks for drift.
//
// A document is indexed first (docindex.go: where every key and value is
// written), then decoded by go-toml into maps that read.go checks against
// the table and applies over the defaults.
//
// # Adding a setting
//
//  1. Add a field to its section struct in config.go (RelayConfig...,
//     HTTPConfig for a new http.token), of the Go type of its kind.
//  2. Add its entry to settings in settings.go, among its table's keys.
//  3. Run go test ./internal/config -run TestReference -update to
//     regenerate mcpflow.toml.example and the README's reference.
//  4. Use the field where it takes effect: cmd/mcpflow maps a Config onto
//     the parts' options in one place (options.go).
//
// Nothing else names the key. A new table needs its section struct and
// field in Config (and in ServerConfig for keys a mux's server sets) and
// a "<!-- keys: TABLE ... -->" marker in the README.
//
// # Modes
//
// A file describes one of three modes (Mode): a single MCP server ([run]),
// a command-line program served as MCP tools ([cli]), or a mux of several
// servers ([servers.NAME] tables and [mux]). Each setting says which modes
// it applies to, and whether a mux's server sets it for itself.
package config
