package relay

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/result"
)

// switchboard routes messages between the client and the current child:
// a message in (from either peer) becomes messages out (to either peer,
// through the outboxes) and changes to the routing state. Its mutex guards
// that state and the parts that hold it (router, hold queue, session,
// toolset, crash policy); none of them has a lock of its own. It never
// blocks on a peer: writes only queue. It starts no process and runs no
// goroutine of its own; what needs one goes to the shell (the Relay).
type switchboard struct {
	cfg      *Config
	log      *slog.Logger
	childLog *slog.Logger
	shell    shell
	out      *outbox  // to the client
	batches  *batches // client batches; own lock

	stats relayStats // for Stats; own lock

	mu         sync.Mutex
	state      state
	child      *child // the current child; nil when none
	gen        int    // the last generation started
	downReport string // why no child serves, for errors and tool results
	ids        *router
	held       holdQueue
	sess       session
	tools      *toolset
	crashes    crashPolicy
	recompiles map[string]context.CancelFunc // recompile calls in progress, by client id
	junkWarned bool                          // a non-JSON-RPC stdout line was logged at warn level
	debug      bool                          // the logger takes debug lines: one per message

	// lastBuildFailed: the last build failed, so the files on disk are
	// not what the running server was built from.
	lastBuildFailed bool
	// served is, per list kind, what the client gets from */list now
	// (see lists.go).
	served map[string]listView
	// clientTools is the tool list the client last fetched whole (the
	// child's tools, without the relay's); clientToolsKnown once it did.
	clientTools      []toolInfo
	clientToolsKnown bool
	fetching         []json.RawMessage // the pages of a tools/list in progress
}

// shell is what the switchboard asks of its owner.
type shell interface {
	// respawn starts a fresh child in the background.
	respawn()
	// startRecompile runs the recompile tool for the request env in the
	// background; sw.mu is held.
	startRecompile(env envelope)
}

func newSwitchboard(cfg *Config, log, childLog *slog.Logger, sh shell) *switchboard {
	sw := &switchboard{
		cfg:        cfg,
		log:        log,
		childLog:   childLog,
		shell:      sh,
		out:        newOutbox(),
		held:       holdQueue{maxLen: cfg.QueueSize, maxBytes: cfg.QueueBytes},
		sess:       newSession(),
		ids:        newRouter(),
		tools:      newToolset(cfg),
		crashes:    crashPolicy{restart: cfg.OnCrash == "restart"},
		recompiles: map[string]context.CancelFunc{},
		served:     map[string]listView{},
		debug:      log.Enabled(context.Background(), slog.LevelDebug),
	}
	sw.batches = newBatches(func(msg []byte) { sw.out.send(msg) })
	return sw
}

// logMsg writes the debug line for one message read from a peer: where
// from, its method (or, for a response, its id), its size and, for a
// response to a client request, how long the server took.
func (r *switchboard) logMsg(from string, env *envelope, size int, p *pending) {
	args := []any{"bytes", size}
	switch {
	case env.method != "" && env.id != nil:
		args = append(args, "method", env.method, "id", string(env.id))
	case env.method != "":
		args = append(args, "method", env.method)
	default:
		args = append(args, "id", string(env.id))
		if p != nil && !p.sent.IsZero() {
			args = append(args, "for", p.method, "latency", result.Dur(time.Since(p.sent)))
		}
	}
	r.log.Debug("from "+from, args...)
}
