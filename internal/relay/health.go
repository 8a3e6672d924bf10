package relay

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

type state int

const (
	stateStarting   state = iota // no good build yet: sessions hold, or answer from the record
	stateUp                      // children may serve
	stateRestarting              // a restart runs: sessions hold
	stateDown                    // no child can serve (a failed build or start, a crash loop): sessions answer alone
	stateClosed
)

// health is what the relay knows of whether a child may serve. Relay.mu
// guards it.
type health struct {
	state  state
	report string // why no child serves, for errors and tool results
	// building: the first build still runs past the client's grace; tool
	// calls wait for it (held) while everything else is answered at once.
	building bool
	// lastBuildFailed: the files on disk are not what the running server
	// was built from.
	lastBuildFailed bool
	ended           bool // the stdio client's input ended
	crashes         crashPolicy
}

func (h health) describe() string { return cmp.Or(h.report, texts.NotRunning) }

// buildingFirst reports whether calls wait for the first build.
func (h health) buildingFirst() bool { return h.building && h.state != stateUp }

// restartedByBuild: a build (or the agent) restarted the server; the
// crash count and the failed build are over.
func (h *health) restartedByBuild() {
	h.crashes.reset()
	h.lastBuildFailed = false
}

// crashed applies the crash policy to a crash of a child that served:
// the report the agent reads, and after how long it is restarted (0: it
// is not). A crash while the last build failed is not restarted: the
// files on disk came from that build.
func (h *health) crashed(e texts.Exit, rebuild string, log *slog.Logger) (string, time.Duration) {
	if h.lastBuildFailed {
		return texts.CrashAfterFailedBuild(e, rebuild), 0
	}
	switch action, backoff := h.crashes.crashed(e.Uptime); action {
	case crashLoopStop:
		log.Error("crash loop: automatic restarts stopped until a file changes or "+rebuild+" is called", "crashes", h.crashes.quick)
		return texts.CrashLoop(e, h.crashes.quick, rebuild), 0
	case crashRestart:
		log.Info("restarting after crash", "in", result.Dur(backoff))
		return texts.CrashRestarting(e), backoff
	}
	log.Info("not restarting (relay.on_crash = \"wait\"): fix the code, then save or call " + rebuild)
	return texts.CrashWait(e, rebuild), 0
}

// Crash policy: a crash within quickCrash of the start counts towards a
// crash loop; after crashLoop of them in a row, automatic restarts stop
// until a build or recompile calls Restart.
const (
	quickCrash = 5 * time.Second
	crashLoop  = 3
)

// crashPolicy decides what follows a crash (Config.OnCrash).
type crashPolicy struct {
	restart bool // OnCrash is "restart"
	quick   int  // crashes in a row soon after start
	stopped bool // automatic restarts stopped by a crash loop
}

type crashAction int

const (
	crashWait     crashAction = iota // on_crash = "wait": stay down
	crashRestart                     // restart after the backoff
	crashLoopStop                    // a crash loop: stay down until Restart
)

// crashed records a crash after uptime and says what to do; with
// crashRestart, after how long.
func (p *crashPolicy) crashed(uptime time.Duration) (crashAction, time.Duration) {
	if uptime < quickCrash {
		p.quick++
	} else {
		p.quick = 1
	}
	switch {
	case !p.restart:
		return crashWait, 0
	case p.quick >= crashLoop:
		p.stopped = true
		return crashLoopStop, 0
	}
	return crashRestart, 100 * time.Millisecond << (p.quick - 1)
}

func (p *crashPolicy) reset() { p.quick, p.stopped = 0, false }
