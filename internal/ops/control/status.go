package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// Target is what a running instance lets a person see and do.
type Target interface {
	Status() Status // the Server fills in what it knows itself when zero
	// Rebuild runs the recompile tool's cycle for the server called name
	// ("" = the only one); an error means no cycle ran (a failed build is a
	// result). ctx ends when the peer leaves or at Close, which waits for it.
	Rebuild(ctx context.Context, name string) (result.Build, error)
}

// Modes of an instance.
const (
	ModeSingle = "single" // one server, relayed
	ModeMux    = "mux"    // several servers behind one front
	ModeCLI    = "cli"    // CLI tools only
)

// Status is one instance as mcpflow status shows it. Its durations are in
// whole milliseconds in JSON (Millis), as in every --json output.
type Status struct {
	Pid     int            `json:"pid"`
	Config  string         `json:"config,omitempty"`  // config file; "" when started from the command line
	Project string         `json:"project,omitempty"` // project folder
	Mode    string         `json:"mode"`              // ModeSingle, ModeMux or ModeCLI
	Version string         `json:"version,omitempty"` // mcpflow's version
	Started time.Time      `json:"started"`
	Client  ClientInfo     `json:"client"`
	HTTP    *HTTPStatus    `json:"http,omitempty"` // the HTTP front; nil when the client is on stdin/stdout
	Servers []ServerStatus `json:"servers"`
	Uptime  Millis         `json:"uptime_ms"`
}

// HTTPStatus is an instance's Streamable HTTP front and its client sessions.
type HTTPStatus struct {
	URL      string          `json:"url"`      // e.g. http://127.0.0.1:8931/mcp
	Sessions []SessionStatus `json:"sessions"` // oldest first; session-less clients last
}

// SessionStatus is one client session of the HTTP front; session-less
// clients (2026-07-28) have a row per client name, ID "".
type SessionStatus struct {
	ID       string     `json:"id,omitempty"` // Mcp-Session-Id
	Client   ClientInfo `json:"client"`
	Started  time.Time  `json:"started,omitzero"`   // zero when not known ([cli])
	LastSeen time.Time  `json:"last_seen,omitzero"` // zero when not known ([cli])
	Requests uint64     `json:"requests"`
	InFlight int        `json:"calls_in_flight"`
	// IdleSince: since when the client has no request or stream open
	// (zero while it has one, or when not known).
	IdleSince time.Time `json:"idle_since,omitzero"`
}

// ClientInfo is the MCP client on the other end of stdin/stdout.
type ClientInfo struct {
	Name     string `json:"name,omitempty"`     // clientInfo.name; "" before the client said
	Version  string `json:"version,omitempty"`  // clientInfo.version
	Protocol string `json:"protocol,omitempty"` // protocol revision, e.g. "2025-06-18"
	Era      string `json:"era,omitempty"`      // "legacy" | "modern"; "" until decided
}

// ServerStatus is one server (child) of an instance.
type ServerStatus struct {
	Name     string       `json:"name"`
	State    string       `json:"state"`         // e.g. "running", "building", "restarting", "down", "crashed"
	Pid      int          `json:"pid,omitempty"` // the child's pid; 0 when none runs
	Gen      int          `json:"gen"`           // child generation, from 1
	Started  time.Time    `json:"started,omitzero"`
	Restarts int          `json:"restarts"`
	Crashes  int          `json:"crashes"`              // times the server exited on its own
	Build    *BuildStatus `json:"last_build,omitempty"` // nil before the first cycle
	Tools    int          `json:"tools"`                // the server's own tools; -1 while not known
	Served   uint64       `json:"calls_served"`
	InFlight int          `json:"calls_in_flight"`
	Uptime   Millis       `json:"uptime_ms"` // filled from Started when zero
}

// BuildStatus is the last build of a server, in brief.
type BuildStatus struct {
	OK           bool      `json:"ok"`
	Skipped      bool      `json:"skipped,omitempty"` // no build ran: only a restart
	Cached       bool      `json:"cached,omitempty"`  // (with skipped) the last good build's output was current
	Canceled     bool      `json:"canceled,omitempty"`
	Trigger      string    `json:"trigger,omitempty"`       // "startup" | "watch" | "recompile"
	At           time.Time `json:"at,omitzero"`             // when it ended
	FirstError   string    `json:"first_error,omitempty"`   // first line of what went wrong
	RestartError string    `json:"restart_error,omitempty"` // first line of why the new child did not come up
	Duration     Millis    `json:"duration_ms"`
}

// Millis is a duration that is whole milliseconds in JSON (the _ms fields).
type Millis time.Duration

func (d Millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, time.Duration(d).Milliseconds(), 10), nil
}

func (d *Millis) UnmarshalJSON(b []byte) error {
	var ms int64
	err := json.Unmarshal(b, &ms)
	*d = Millis(time.Duration(ms) * time.Millisecond)
	return err
}

// BuildStatusOf sums up a cycle, which ended at at, for ServerStatus.Build.
func BuildStatusOf(b result.Build, at time.Time) *BuildStatus {
	s := &BuildStatus{
		OK: b.OK, Skipped: b.Skipped, Cached: b.Cached, Canceled: b.Canceled, Trigger: b.Trigger,
		At: at, Duration: Millis(b.Duration),
	}
	if !b.OK {
		s.FirstError = firstErrorLine(b.Errors)
		if s.FirstError == "" && b.Err != nil {
			s.FirstError = firstLine(b.Err.Error())
		}
	}
	if b.Restart != nil && b.Restart.Err != nil {
		s.RestartError = firstLine(b.Restart.Err.Error())
	}
	return s
}

// firstErrorLine returns the first line of compiler errors that names a
// place (file:line), else the first line that is not a heading ("# pkg",
// as go build prints), else the first line.
func firstErrorLine(s string) string {
	var plain, heading string
	for l := range strings.SplitSeq(s, "\n") {
		switch l = strings.TrimSpace(l); {
		case placeRE.MatchString(l):
			return l
		case strings.HasPrefix(l, "# "):
			heading = cmp.Or(heading, l)
		default:
			plain = cmp.Or(plain, l)
		}
	}
	return cmp.Or(plain, heading)
}

// placeRE matches a line that starts with file:line.
var placeRE = regexp.MustCompile(`^[^\s:]+:\d+`)

// firstLine returns the first line of s that is not blank, trimmed.
func firstLine(s string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(first)
}

// BuildJSON is a rebuild's outcome on the wire: the recompile tool's
// structuredContent (the same keys for scripts), plus what a person reads.
type BuildJSON struct {
	result.Structured
	Seq      uint64   `json:"seq"`
	Changed  []string `json:"changed,omitempty"`
	Canceled bool     `json:"canceled,omitempty"`
	Output   string   `json:"output,omitempty"` // the build's output when it failed with no errors picked out
	Gen      int      `json:"gen,omitempty"`    // the new child's generation, after a restart
	Pid      int      `json:"pid,omitempty"`    // the new child's pid, after a restart
}

// BuildToJSON converts a build for the wire.
func BuildToJSON(b result.Build) BuildJSON {
	j := BuildJSON{Structured: b.Structured(), Seq: b.Seq, Changed: b.Changed, Canceled: b.Canceled}
	if !b.OK && b.Errors == "" {
		j.Output = b.Output
	}
	if r := b.Restart; r != nil {
		j.Gen, j.Pid = r.Gen, r.Pid
	}
	return j
}

// Result converts back; errors become errors.New of their text.
func (j BuildJSON) Result() result.Build {
	s := j.Structured
	b := result.Build{
		Seq: j.Seq, Trigger: s.Trigger, Changed: j.Changed, Skipped: s.Build.Skipped, Cached: s.Build.Cached, OK: s.Build.OK,
		Canceled: j.Canceled, Output: j.Output, Errors: s.Build.Errors,
		Duration: time.Duration(s.Build.DurationMS) * time.Millisecond, Err: textErr(s.Build.Error),
	}
	if s.Restart.Attempted {
		b.Restart = &result.Restart{
			Gen: j.Gen, Pid: j.Pid, Duration: time.Duration(s.Restart.DurationMS) * time.Millisecond,
			Err: textErr(s.Restart.Error), Handshake: s.Restart.Handshake,
			Tools: result.ToolDiff{Known: s.Tools.Known, Added: s.Tools.Added, Removed: s.Tools.Removed, Changed: s.Tools.Changed, Current: s.Tools.Current},
		}
	}
	return b
}

func textErr(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}
