package mux

import (
	"cmp"
	"fmt"
	"strings"
)

// DefaultSeparator joins a server's name and a tool's or prompt's name.
const DefaultSeparator = "__"

// MaxToolName is the longest tool name the mux lists: MCP allows 128
// characters, but clients accept 64 (Claude Code, OpenAI's function
// names); a longer joined name is left out with a warning.
const MaxToolName = 64

// MaxServerName is the longest server name, so that NAME + separator +
// tool stays within MaxToolName for tools of common lengths.
const MaxServerName = 32

// ManagementTools are the mux's own tools, besides the call tool: no
// server's tool may take their names.
func ManagementTools() []string {
	return []string{"add_server", "remove_server", "reload_server", "list_servers"}
}

// ValidateName checks a server name against the mux's rules: non-empty,
// letters, digits, '-' and '_' only (some clients reject other characters
// in tool names), no separator inside, and not ending in '_' (else "a_" +
// "__" + "tool" would split as "a" and "_tool"). Each rule has its own error.
func ValidateName(name, sep string) error {
	sep = cmp.Or(sep, DefaultSeparator)
	if name == "" {
		return fmt.Errorf("server name is empty")
	}
	if len(name) > MaxServerName {
		return fmt.Errorf("server name %q is %d characters long: use at most %d, so that its tools' names (NAME%sTOOL) stay within the %d characters clients accept", name, len(name), MaxServerName, sep, MaxToolName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("server name %q contains %q: use only letters, digits, '-' and '_'", name, r)
		}
	}
	if strings.Contains(name, sep) {
		return fmt.Errorf("server name %q contains the separator %q, which would make NAME%sTOOL ambiguous", name, sep, sep)
	}
	if strings.HasSuffix(name, "_") || strings.HasSuffix(name, sep[:1]) {
		return fmt.Errorf("server name %q ends in %q: NAME%sTOOL would split in the wrong place", name, name[len(name)-1:], sep)
	}
	return nil
}

// joinName returns the name a client sees for a child's tool or prompt.
func joinName(server, sep, name string) string { return server + sep + name }

// splitName splits a client-visible name on the first separator into the
// server's name and the child's own name (which may contain the
// separator itself).
func splitName(full, sep string) (server, name string, ok bool) {
	return strings.Cut(full, sep)
}
