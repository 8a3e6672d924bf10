package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// Restart starts, or replaces, every session's child (see the package
// documentation) and says what it did for the session whose recompile
// asked (ctx), else the latest active; on error the Restart carries it.
func (r *Relay) Restart(ctx context.Context) (*result.Restart, error) {
	return (&restartRun{r: r, ctx: ctx}).run()
}

// sessionKey is the context key of the session a recompile runs for.
type sessionKey struct{}

// restartRun is one restart of every child (auto: after a crash).
type restartRun struct {
	r        *Relay
	ctx      context.Context
	auto     bool
	t0       time.Time
	gen      int        // the first process it starts
	sessions []*Session // open when it began
}

func (rr *restartRun) run() (*result.Restart, error) {
	r := rr.r
	rr.t0 = time.Now()
	r.restarts.Lock()
	defer r.restarts.Unlock()
	r.mu.Lock()
	if r.health.state == stateClosed {
		r.mu.Unlock()
		return &result.Restart{Err: ErrClosed}, ErrClosed
	}
	r.health.state, r.health.building = stateRestarting, false
	rr.gen = int(r.gen.Load()) + 1
	if !rr.auto {
		r.health.restartedByBuild()
	}
	rr.sessions = slices.Clone(r.sessions)
	old := r.server
	r.mu.Unlock()
	r.wg.Go(func() { r.rec.stamp(r.cfg.First.Sources) }) // a scan of the sources, off the restart's path
	if err := r.cfg.Child.check(); err != nil {
		return rr.allDown(errors.New(texts.NoStart(err, r.cfg.Child.Setting)))
	}
	for _, s := range rr.sessions { // they hold for the restart
		s.mu.Lock()
		if s.bridge == nil && s.phase != phaseClosed {
			s.phase = phaseHold
		}
		if !rr.auto {
			s.notices.clear() // a build's restart, not one after a crash
		}
		s.mu.Unlock()
	}
	var srv *child
	if r.cfg.Child.HTTP != nil {
		var err error
		if srv, err = rr.replaceServer(old); err != nil {
			return rr.allDown(err)
		}
	}
	results := make([]*result.Restart, len(rr.sessions))
	errs := make([]error, len(rr.sessions))
	var wg sync.WaitGroup
	for i, s := range rr.sessions {
		wg.Go(func() { results[i], errs[i] = (&reconnect{s: s, ctx: rr.ctx}).run(srv) })
	}
	wg.Wait()

	res := &result.Restart{Gen: rr.gen}
	var err error
	if i := slices.Index(rr.sessions, rr.reported()); i >= 0 && results[i] != nil {
		res, err = results[i], errs[i]
	}
	if srv != nil {
		res.Pid = srv.pid
	}
	ok := len(rr.sessions) == 0 || slices.Contains(errs, nil)
	r.mu.Lock()
	switch {
	case r.health.state == stateClosed:
		r.mu.Unlock()
		return res, ErrClosed
	case ok:
		r.health.state, r.health.report = stateUp, ""
		r.stats.starts.Add(1)
	default:
		r.health.state = stateDown
	}
	late := slices.DeleteFunc(slices.Clone(r.sessions), func(s *Session) bool { return slices.Contains(rr.sessions, s) }) // opened meanwhile
	r.mu.Unlock()
	for _, s := range late {
		r.goConnect(s)
	}
	if !ok {
		return rr.failed(cmp.Or(err, errors.Join(errs...)))
	}
	res.Duration = time.Since(rr.t0)
	r.events.post(Event{Kind: Up, Gen: int(r.gen.Load()), Pid: res.Pid, Restart: res})
	tools := "(no earlier list)"
	if res.Tools.Known {
		tools = res.Tools.String()
	}
	r.log.Debug("restart ✓", "took", result.Dur(res.Duration), "sessions", len(rr.sessions), "tools", tools)
	return res, err
}

// allDown leaves the relay and every session without a child (err: why).
func (rr *restartRun) allDown(err error) (*result.Restart, error) {
	r := rr.r
	r.mu.Lock()
	if r.health.state != stateClosed {
		r.health.state = stateDown
	}
	r.health.report = err.Error()
	r.mu.Unlock()
	for _, s := range rr.sessions {
		s.goDown(err.Error())
	}
	return rr.failed(err)
}

// failed reports a restart that left no child serving.
func (rr *restartRun) failed(err error) (*result.Restart, error) {
	res := &result.Restart{Gen: rr.gen, Err: err, Duration: time.Since(rr.t0)}
	if !errors.Is(err, ErrClosed) {
		rr.r.events.post(Event{Kind: RestartFailed, Gen: rr.gen, Report: err.Error(), Restart: res})
	}
	return res, err
}

// reported is the session whose recompile asked, else the latest active.
func (rr *restartRun) reported() *Session {
	if s, ok := rr.ctx.Value(sessionKey{}).(*Session); ok && slices.Contains(rr.sessions, s) {
		return s
	}
	var best *Session
	var seen time.Time
	for _, s := range rr.sessions {
		s.mu.Lock()
		t := s.seen
		s.mu.Unlock()
		if best == nil || t.After(seen) {
			best, seen = s, t
		}
	}
	return best
}

// replaceServer stops the HTTP server's old process once the calls
// drained, starts the new one (before, if it may overlap) and waits until
// its URL answers.
func (rr *restartRun) replaceServer(old *child) (*child, error) {
	r := rr.r
	var srv *child
	var err error
	if old != nil && r.cfg.Child.HTTP.Overlaps() {
		srv, err = rr.startServer() // while the old one drains
		if err == nil {
			r.log.Info("starting the next server while the calls in flight finish", "pid", srv.pid)
		}
	}
	if old != nil {
		var wg sync.WaitGroup
		for _, s := range rr.sessions {
			s.mu.Lock()
			c := s.child
			s.mu.Unlock()
			if c != nil {
				wg.Go(c.retire)
			}
		}
		wg.Wait()
		old.stop(r.cfg.Child.StopTimeout, r.ctx, nil)
	}
	if srv == nil && err == nil {
		srv, err = rr.startServer()
	}
	if err != nil {
		return nil, errors.New(texts.NoStart(err, r.cfg.Child.Setting))
	}
	ctx, cancel := context.WithCancel(rr.ctx) // Ready is bounded by its own wait (relay.handshake_timeout)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()
	if err := r.cfg.Child.HTTP.Ready(ctx, srv.url); err != nil {
		srv.stop(r.cfg.Child.StopTimeout, r.ctx, nil)
		err = fmt.Errorf("%s: %w", r.cfg.Child.describe(), err)
		return nil, errors.New(texts.WithStderr(texts.BadStart(err, r.cfg.Tools.Rebuild), srv.exitInfo()))
	}
	return srv, nil
}

func (rr *restartRun) startServer() (*child, error) {
	r := rr.r
	var url string
	srv, err := r.start(func(cmd *exec.Cmd) (io.ReadCloser, error) {
		logs, u, err := r.cfg.Child.HTTP.Prepare(cmd)
		url = u
		return logs, err
	}, r.childLine(nil))
	if err != nil {
		return nil, err
	}
	srv.url = url
	r.mu.Lock()
	r.server = srv
	r.mu.Unlock()
	r.log.Info("server started", "pid", srv.pid, "gen", srv.gen, "url", url, "cmd", r.cfg.Child.describe())
	r.wg.Go(func() {
		<-srv.done
		r.serverExited(srv)
	})
	return srv, nil
}

// serverExited handles the end of the HTTP server's process: one mcpflow
// did not stop is a crash (a failed start, if it never answered).
func (r *Relay) serverExited(srv *child) {
	if srv.stopping.Load() {
		return
	}
	e := srv.exitInfo()
	r.mu.Lock()
	if r.server != srv || r.health.state == stateClosed {
		r.mu.Unlock()
		return
	}
	r.server = nil
	report := texts.FailedStart(e, r.cfg.Child.Setting, r.cfg.Tools.Rebuild)
	var backoff time.Duration
	if srv.served.Load() {
		report, backoff = r.health.crashed(e, r.cfg.Tools.Rebuild, r.log)
	}
	r.health.state, r.health.report = stateDown, report
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	r.events.post(Event{Kind: Crashed, Gen: srv.gen, Pid: srv.pid, Report: report})
	r.log.Error("server crashed", "status", e.Status, "uptime", result.Dur(e.Uptime))
	for _, s := range sessions {
		s.mu.Lock()
		c := s.child
		s.mu.Unlock()
		if c != nil && c.p == srv {
			c.link.Close() // its end is handled by conn.ended
		}
	}
	if backoff > 0 {
		r.later(backoff, func() {
			if _, err := (&restartRun{r: r, ctx: r.ctx, auto: true}).run(); err != nil && !errors.Is(err, ErrClosed) {
				r.log.Error("restart after crash failed", "err", firstLine(err.Error()))
			}
		})
	}
}

// failedStart: a child did not come up; with none up, the relay is down.
func (r *Relay) failedStart(report string) {
	for _, s := range r.openSessions() {
		s.mu.Lock()
		up := s.phase == phaseUp && s.child != nil
		s.mu.Unlock()
		if up {
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.health.state != stateClosed && r.health.state != stateRestarting {
		r.health.state = stateDown
	}
	r.health.report = report
}

// restartAfterCrash starts a new child for session s after backoff,
// unless something else did; quiet: no request saw the crash, so the next
// tool result says so.
func (r *Relay) restartAfterCrash(s *Session, backoff time.Duration, quiet bool, status string) {
	r.later(backoff, func() {
		r.mu.Lock()
		skip := r.health.crashes.stopped || r.health.state != stateUp
		srv := r.server
		r.mu.Unlock()
		if skip {
			return
		}
		moot := func(s *Session) bool { return s.child != nil || s.phase != phaseDown }
		res, err := (&reconnect{s: s, ctx: r.ctx, skip: moot}).run(srv)
		if res == nil && err == nil {
			return
		}
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				r.log.Error("restart after crash failed", "err", firstLine(err.Error()))
			}
			return
		}
		r.log.Info("server restarted after its crash", "took", result.Dur(res.Duration))
		r.stats.starts.Add(1)
		r.events.post(Event{Kind: Up, Gen: res.Gen, Pid: res.Pid, Restart: res})
		if quiet {
			s.mu.Lock()
			s.notices.set(noticeCrash, texts.NoticeCrashRestarted(status), r.cfg.Notices)
			s.mu.Unlock()
		}
	})
}

// NoteBuild tells the relay how each build ended (the builder's OnResult):
// a failed build leaves the children serving (with a notice after an
// automatic one), or the sessions answered alone before the first start.
func (r *Relay) NoteBuild(o result.Build) {
	if o.Canceled {
		return
	}
	r.mu.Lock()
	r.health.building, r.health.lastBuildFailed = false, !o.OK
	st := r.health.state
	var report string
	if !o.OK {
		report = texts.BuildFailed(o.Err, o.Errors, r.cfg.Tools.Rebuild)
		if st == stateStarting || st == stateDown {
			r.health.state, r.health.report = stateDown, report
		}
	}
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	for _, s := range sessions {
		s.mu.Lock()
		switch {
		case o.OK:
			s.notices.set(noticeBuild, "", true)
		case st == stateStarting || st == stateDown && s.child == nil:
			s.down(report) // calls held for the first build are answered
		case (st == stateUp || st == stateRestarting) && o.Trigger == "watch": // a crash's restart may run meanwhile
			s.notices.set(noticeBuild, texts.NoticeBuildFailed(r.cfg.Tools.Rebuild), r.cfg.Notices)
		}
		s.mu.Unlock()
	}
}

// runRecompile builds and restarts, through the Recompiler if any.
func (r *Relay) runRecompile(ctx context.Context, progress func(string)) result.Build {
	if r.cfg.Recompiler == nil {
		rs, _ := r.Restart(ctx)
		return result.Build{Trigger: "recompile", Skipped: true, OK: true, Restart: rs}
	}
	return r.cfg.Recompiler.Recompile(ctx, progress)
}

type state int

const (
	stateStarting   state = iota // no good build yet: sessions hold, or answer from the record
	stateUp                      // children may serve
	stateRestarting              // a restart runs: sessions hold
	stateDown                    // no child can serve (a failed build or start, a crash loop): sessions answer alone
	stateClosed
)

// health is whether a child may serve. Relay.mu guards it.
type health struct {
	state  state
	report string // why no child serves, for errors and tool results
	// building: the first build outlasted the grace; calls wait for it.
	building bool
	// lastBuildFailed: the files on disk are not what the server runs.
	lastBuildFailed bool
	ended           bool // the stdio client's input ended
	crashes         crashPolicy
	configProblem   string // why the config file no longer loads (texts.ConfigProblem); "" when it does
}

func (h health) describe() string { return cmp.Or(h.report, texts.NotRunning) }

// buildingFirst reports whether calls wait for the first build.
func (h health) buildingFirst() bool { return h.building && h.state != stateUp }

// restartedByBuild: the crash count and the failed build are over.
func (h *health) restartedByBuild() {
	h.crashes.quick, h.crashes.stopped, h.lastBuildFailed = 0, false, false
}

// crashed applies the crash policy (Config.OnCrash) to a crash: the
// report, and the backoff (0: none).
func (h *health) crashed(e texts.Exit, rebuild string, log *slog.Logger) (string, time.Duration) {
	if h.lastBuildFailed {
		return texts.CrashAfterFailedBuild(e, rebuild), 0
	}
	p := &h.crashes
	if e.Uptime < quickCrash {
		p.quick++
	} else {
		p.quick = 1
	}
	switch {
	case !p.restart:
		log.Info("not restarting (relay.on_crash = \"wait\"): fix the code, then save or call " + rebuild)
		return texts.CrashWait(e, rebuild), 0
	case p.quick >= crashLoop:
		p.stopped = true
		log.Error("crash loop: automatic restarts stopped until a file changes or "+rebuild+" is called", "crashes", p.quick)
		return texts.CrashLoop(e, p.quick, rebuild), 0
	}
	backoff := 100 * time.Millisecond << (p.quick - 1)
	log.Info("restarting after crash", "in", result.Dur(backoff))
	return texts.CrashRestarting(e), backoff
}

// After crashLoop crashes in a row, each within quickCrash of its start,
// restarts stop until the next Restart.
const (
	quickCrash = 5 * time.Second
	crashLoop  = 3
)

// crashPolicy is what health.crashed decides by.
type crashPolicy struct {
	restart bool // OnCrash is "restart"
	quick   int  // crashes in a row soon after start
	stopped bool // automatic restarts stopped by a crash loop
}
