package mux

import (
	"fmt"
	"strings"
)

// DefaultSeparator joins a server's name and a tool's or prompt's name.
const DefaultSeparator = "__"

// maxToolName is MCP's limit on a tool name's length.
const maxToolName = 128

// ValidateName checks a server name against the mux's rules: non-empty,
// letters, digits, '-' and '_' only (some clients reject other characters
// in tool names), no separator inside, and not ending in '_' (else "a_" +
// "__" + "tool" would split as "a" and "_tool"). Each rule has its own error.
func ValidateName(name, sep string) error {
	if sep == "" {
		sep = DefaultSeparator
	}
	if name == "" {
		return fmt.Errorf("server name is empty")
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
