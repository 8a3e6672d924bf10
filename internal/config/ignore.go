package config

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ClientFiles are the files MCP clients and editors keep in a project:
// their lists of MCP servers, settings, chat histories. Editing them must
// never rebuild and restart the server (a TypeScript project's
// "**/*.json" would otherwise catch .mcp.json), so every WatchConfig
// ignores them by default (WatchConfig.Ignore), and init writes them into
// watch.exclude too.
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

// At words a message about the value of key (a dotted path such as
// "run.command") as Parse words its errors: "mcpflow.toml:4:11: run.command:
// msg", located at the key, else its table, else naming only the file.
func (c *Config) At(key, format string, args ...any) string {
	return c.errorAt(key, format, args...).Error()
}
