// Package result holds the typed outcomes that mcpflow's parts hand each
// other and that every rendering (the log line, the agent's tool result,
// the CLI's output, the control socket's JSON) is made from: a build, a
// restart, a tool-list diff. It is a leaf: it imports nothing of mcpflow,
// so builder and relay share it without importing each other.
package result

import (
	"slices"
	"strings"
	"time"
)

// Build is one build-and-restart cycle, as the builder ran it.
type Build struct {
	Seq      uint64        // cycle number, from 1; 0 if no cycle ran
	Trigger  string        // "startup" | "watch" | "recompile"
	Changed  []string      // paths that caused a watch cycle, deduplicated
	Skipped  bool          // no build ran: no build command, or Cached
	Cached   bool          // (with Skipped) the last good build's output is current; Output says why
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

	// The phases of Duration.
	Stop      time.Duration // stopping the old child
	Start     time.Duration // starting the new process
	Replay    time.Duration // replaying the session (handshake or listen streams)
	ToolsList time.Duration // listing the new child's tools for the diff

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

	// Details holds, for each added or changed tool, what an agent needs
	// to call it.
	Details map[string]ToolDetail
}

// ToolDetail describes an added or changed tool.
type ToolDetail struct {
	Description   string
	InputSchema   string // compact JSON
	SchemaChanged bool   // (changed tools) the input schema differs, not only the description
}

// String renders the diff on one line: "+added ~changed (input schema
// changed) -removed", "unchanged", or "" when no earlier list was known.
func (d ToolDiff) String() string {
	if !d.Known {
		return ""
	}
	if d.Empty() {
		return "unchanged"
	}
	var parts []string
	for _, n := range d.Current {
		switch {
		case slices.Contains(d.Added, n):
			parts = append(parts, "+"+n)
		case slices.Contains(d.Changed, n) && d.Details[n].SchemaChanged:
			parts = append(parts, "~"+n+" (input schema changed)")
		case slices.Contains(d.Changed, n):
			parts = append(parts, "~"+n+" (description changed)")
		}
	}
	for _, n := range d.Removed {
		parts = append(parts, "-"+n)
	}
	return strings.Join(parts, " ")
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

// Structured is the JSON object the recompile tool returns as its
// structuredContent. Its keys are a contract: clients and scripts read them.
type Structured struct {
	Trigger string            `json:"trigger"`
	Build   StructuredBuild   `json:"build"`
	Restart StructuredRestart `json:"restart"`
	Tools   StructuredTools   `json:"tools"`
}

// StructuredBuild is the build part of Structured.
type StructuredBuild struct {
	OK         bool   `json:"ok"`
	Skipped    bool   `json:"skipped"`
	Cached     bool   `json:"cached"` // skipped because the last good build's output is current
	DurationMS int64  `json:"duration_ms"`
	Errors     string `json:"errors"` // compiler errors trimmed for an agent
	Error      string `json:"error"`  // why the build failed
}

// StructuredRestart is the restart part of Structured; Attempted is false
// when the build failed and the old server kept running.
type StructuredRestart struct {
	Attempted  bool     `json:"attempted"`
	OK         bool     `json:"ok"`
	DurationMS int64    `json:"duration_ms"`
	Error      string   `json:"error"`
	Handshake  []string `json:"handshake"`
}

// StructuredTools is the tool-list part of Structured; every list is
// present, empty rather than null.
type StructuredTools struct {
	Known   bool     `json:"known"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
	Current []string `json:"current"`
}

// Structured renders b for machines.
func (b *Build) Structured() Structured {
	s := Structured{
		Trigger: b.Trigger,
		Build: StructuredBuild{
			OK: b.OK, Skipped: b.Skipped, Cached: b.Cached, DurationMS: b.Duration.Milliseconds(),
			Errors: b.Errors, Error: errString(b.Err),
		},
	}
	r := b.Restart
	if r != nil {
		s.Restart = StructuredRestart{
			Attempted: true, OK: r.OK(), DurationMS: r.Duration.Milliseconds(),
			Error: errString(r.Err), Handshake: r.Handshake,
		}
		s.Tools = StructuredTools{Known: r.Tools.Known, Added: r.Tools.Added, Removed: r.Tools.Removed, Changed: r.Tools.Changed, Current: r.Tools.Current}
	}
	for _, l := range []*[]string{&s.Restart.Handshake, &s.Tools.Added, &s.Tools.Removed, &s.Tools.Changed, &s.Tools.Current} {
		if *l == nil {
			*l = []string{}
		}
	}
	return s
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
