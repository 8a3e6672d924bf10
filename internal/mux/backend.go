package mux

import (
	"context"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// ServerSpec is one server behind the mux, as configured ([servers.NAME])
// or given to add_server.
type ServerSpec struct {
	Name    string
	Command []string          // argv: the program and its arguments
	Shell   bool              // run Command[0] with sh -c
	Dir     string            // working directory; "" = mcpflow's
	Env     map[string]string // added to mcpflow's environment
	Build   string            // build command (shell); "" = none
	Watch   []string          // paths watched for rebuilds; nil = no watch
	OnCrash string            // "wait" or "restart"; "" = "wait" for agent-added, relay's default for configured
	CLI     *CLISpec          // set: a command-line program served as MCP tools (Command unused)

	StopTimeout    time.Duration // grace per stop step; 0 = relay's default
	EnvOverridable []string      // the env keys reload_server may set ([servers.NAME.run] env_overridable)
	// URL is where the server serves Streamable HTTP ([servers.NAME.run]
	// url); "" = stdio. The relay's Child.Link carries its messages, which
	// RelayOptions.Configure sets.
	URL string

	Source string // "config" or "agent"; set by the mux
}

// CLISpec is a command-line program served as MCP tools (package
// clitools): Schema prints its tool list, each call runs it once. The
// default backends do not serve it; cmd's factory does.
type CLISpec struct {
	Schema  []string // argv that prints {"tools": [...]}
	Command []string // argv prefix of every call; empty = Schema[:1]
}

// EventKind says what happened to a backend's child.
type EventKind int

// The events a backend reports.
const (
	EventStarting    EventKind = iota // a build or restart began
	EventUp                           // a child serves
	EventCrashed                      // the child exited on its own
	EventBuildFailed                  // a build failed; the old child, if any, still serves
	EventBuilt                        // a build succeeded (its restart is reported as EventUp)
)

// Event is a backend's report of a state change. Report is the crash
// report (exit status, stderr tail) or the build errors.
type Event struct {
	Kind   EventKind
	Gen    int
	Pid    int
	Report string
	Build  *result.Build // for EventUp after a build, and EventBuildFailed
}

// Backend is one server behind the mux: what serves its part of each
// client session, and its life. The default is a relay.Relay (see
// NewRelayBackends); cmd serves CLI tools with one of its own.
//
// Contract: Open serves one mux session's messages to the server (for a
// relay, a session with a child of its own). Start brings up the first
// child and Reload replaces it (building first when a build is
// configured; on a failed build the old child keeps serving). Close stops
// the children and their process groups and returns once everything the
// backend started has ended; it is safe to call more than once. Events go
// to the emit function given to the factory, in order, never while a
// Backend method holds a lock the mux might need.
type Backend interface {
	wire.Opener
	Start(ctx context.Context) result.Build
	Reload(ctx context.Context) result.Build
	Close()
}

// BackendFactory makes the backend for one server. emit reports the
// backend's events to the mux; it does not block.
type BackendFactory func(spec ServerSpec, emit func(Event)) (Backend, error)
