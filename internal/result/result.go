// Package result holds the typed outcomes that mcpflow's parts hand each
// other and that every rendering (the log line, the agent's tool result,
// the CLI's output, the control socket's JSON) is made from: a build, a
// restart, a tool-list diff. It is a leaf: it imports nothing of mcpflow,
// so builder and relay share it without importing each other.
package result

import (
	"time"
)

// Build is one build-and-restart cycle, as the builder ran it.
type Build struct {
	Seq      uint64        // cycle number, from 1; 0 if no cycle ran
	Trigger  string        // "startup" | "watch" | "recompile"
	Changed  []string      // paths that caused a watch cycle, deduplicated
	Skipped  bool          // no build command configured
	OK       bool          // the build succeeded (or was skipped)
	Canceled bool          // superseded by newer changes, or cut short by shutdown
	Output   string        // combined stdout+stderr, bounded
	Errors   string        // on failure, Output trimmed to what matters to an agent
	Duration time.Duration // build wall time
	Err      error         // why the build failed: exit status, timeout, start error

	// Restart is the restart that followed a good build; nil when none
	// was attempted.
	Restart *Restart
}

// Restart is the swap of one child for the next.
type Restart struct {
	Gen      int           // the new child's generation, from 1
	Pid      int           // the new child's process id; 0 if it did not start
	Duration time.Duration // from stopping the old child to the new one answering
	Err      error         // why the new child did not come up; nil = it serves

	Tools     ToolDiff
	Handshake []string // how the new child's initialize/discover result differs, one line each
}

// OK reports whether the new child serves.
func (r *Restart) OK() bool { return r != nil && r.Err == nil }

// ToolDiff compares two tool lists by name and content.
type ToolDiff struct {
	Known   bool     // there was an earlier list to compare with
	Added   []string // names, sorted
	Removed []string
	Changed []string // same name, different description, schema or annotations
	Current []string // every tool now listed, sorted
}

// Empty reports whether nothing was added, removed or changed.
func (d ToolDiff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0
}

// Dur renders a duration the one way mcpflow shows durations to people and
// agents: three significant digits at most ("1.21s", "38ms", "650µs").
func Dur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
