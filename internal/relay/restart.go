package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// probeTimeout bounds the wait for an answer to mcpflow's ping to a new
// child that no client request reached yet.
const probeTimeout = 5 * time.Second

// Restart starts, or replaces, every session's child with the server as
// it is now (a build finished): each session holds its client's messages,
// lets the calls in flight on its old child finish (Config.Drain), stops
// it (every request still pending on it gets one error), starts a new
// one, replays the session into it, sends on what it held and tells the
// client which of its lists changed. An HTTP server's process is replaced
// once, for every session. It returns what it did for the session whose
// recompile asked for it (ctx), else for the most recently active one:
// timings, the tool diff against what that client last listed, how the
// new handshake differs. On error the Restart (never nil) carries it too.
func (r *Relay) Restart(ctx context.Context) (*result.Restart, error) {
	return r.restart(ctx, false)
}

// sessionKey is the context key of the session a recompile runs for.
type sessionKey struct{}

func (r *Relay) restart(ctx context.Context, auto bool) (*result.Restart, error) {
	t0 := time.Now()
	r.restarts.Lock()
	defer r.restarts.Unlock()
	r.mu.Lock()
	if r.state == stateClosed {
		r.mu.Unlock()
		return &result.Restart{Err: errClosed}, errClosed
	}
	r.state = stateRestarting
	gen := r.gen + 1 // the first child this restart starts
	r.health.building = false
	if !auto {
		// A build (or the agent) restarts the server: the crash count, the
		// failed build and the notices about them are over.
		r.health.restartedByBuild()
	}
	sessions := slices.Clone(r.sessions)
	old := r.server
	r.mu.Unlock()
	if err := r.spec().check(); err != nil {
		report := texts.NoStart(err, r.cfg.Child.Setting)
		r.allDown(sessions, report)
		return r.restartFailed(gen, t0, errors.New(report))
	}
	for _, s := range sessions {
		s.holdFor(auto)
	}

	var srv *child
	if r.cfg.Child.HTTP != nil {
		var err error
		if srv, err = r.replaceServer(ctx, old, sessions); err != nil {
			r.allDown(sessions, err.Error())
			return r.restartFailed(gen, t0, err)
		}
	}
	results := make([]*result.Restart, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { results[i], errs[i] = s.reconnect(ctx, srv, false) })
	}
	wg.Wait()

	mine := pickSession(ctx, sessions)
	res := &result.Restart{Gen: gen}
	var err error
	for i, s := range sessions {
		if s == mine && results[i] != nil {
			res, err = results[i], errs[i]
		}
	}
	if srv != nil {
		res.Pid = srv.pid
	}
	ok := len(sessions) == 0 || slices.ContainsFunc(errs, func(e error) bool { return e == nil })
	r.mu.Lock()
	switch {
	case r.state == stateClosed:
		r.mu.Unlock()
		return res, errClosed
	case ok:
		r.state, r.health.downReport = stateUp, ""
		r.starts++
	default:
		r.state = stateDown
	}
	var late []*Session // opened during the restart
	for _, s := range r.sessions {
		if !slices.Contains(sessions, s) {
			late = append(late, s)
		}
	}
	r.mu.Unlock()
	for _, s := range late {
		r.goConnect(s)
	}
	if !ok {
		if err == nil {
			err = errors.Join(errs...)
		}
		return r.restartFailed(gen, t0, err)
	}
	res.Duration = time.Since(t0)
	r.mu.Lock()
	last := r.gen
	r.mu.Unlock()
	r.events.post(Event{Kind: Up, Gen: last, Pid: res.Pid, Restart: res})
	r.log.Debug("restart ✓", "took", result.Dur(res.Duration), "sessions", len(sessions), "tools", diffOr(res.Tools))
	return res, err
}

// allDown leaves the relay, and every session, without a child: no child
// can start (report says why) until the next build or recompile.
func (r *Relay) allDown(sessions []*Session, report string) {
	r.mu.Lock()
	if r.state != stateClosed {
		r.state = stateDown
	}
	r.health.setReport(report, true)
	r.mu.Unlock()
	for _, s := range sessions {
		s.goDown(report)
	}
}

// restartFailed reports a restart that left no child serving.
func (r *Relay) restartFailed(gen int, t0 time.Time, err error) (*result.Restart, error) {
	res := &result.Restart{Gen: gen, Err: err, Duration: time.Since(t0)}
	if !errors.Is(err, errClosed) {
		r.events.post(Event{Kind: RestartFailed, Gen: gen, Report: err.Error(), Restart: res})
	}
	return res, err
}

// pickSession is the session a restart reports on: the one whose
// recompile asked for it, else the most recently active one.
func pickSession(ctx context.Context, sessions []*Session) *Session {
	if s, ok := ctx.Value(sessionKey{}).(*Session); ok && slices.Contains(sessions, s) {
		return s
	}
	var best *Session
	var seen time.Time
	for _, s := range sessions {
		s.mu.Lock()
		t := s.seen
		s.mu.Unlock()
		if best == nil || t.After(seen) {
			best, seen = s, t
		}
	}
	return best
}

// holdFor makes the session hold its client's messages for the restart
// (auto: not a build's), withdrawing the notices a build makes untrue.
func (s *Session) holdFor(auto bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bridge == nil && s.phase != phaseClosed {
		s.phase = phaseHold
	}
	if !auto {
		s.notices.clear()
	}
}

// replaceServer stops the HTTP server's old process, once every session
// let its calls in flight finish (Drain), and starts the new one (before
// that, when a process may run beside the one it replaces), then waits
// until its URL answers.
func (r *Relay) replaceServer(ctx context.Context, old *child, sessions []*Session) (*child, error) {
	var srv *child
	var err error
	if old != nil && r.cfg.Child.HTTP.Overlaps() {
		srv, err = r.startServer() // while the old one drains
		if err == nil {
			r.log.Info("starting the next server while the calls in flight finish", "pid", srv.pid)
		}
	}
	if old != nil {
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Go(func() { s.stopChild() })
		}
		wg.Wait()
		old.stop(r.cfg.Child.StopTimeout, r.ctx, nil)
	}
	if srv == nil && err == nil {
		srv, err = r.startServer()
	}
	if err != nil {
		return nil, errors.New(texts.NoStart(err, r.cfg.Child.Setting))
	}
	rctx, cancel := context.WithCancel(ctx) // Ready is bounded by its own wait (relay.handshake_timeout)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()
	if err := r.cfg.Child.HTTP.Ready(rctx, srv.url); err != nil {
		srv.stop(r.cfg.Child.StopTimeout, r.ctx, nil)
		err = fmt.Errorf("%s: %w", describeCommand(r.cfg.Child.Command, r.cfg.Child.Shell), err)
		return nil, errors.New(texts.WithStderr(texts.BadStart(err, r.cfg.Tools.Rebuild), srv.exitInfo()))
	}
	return srv, nil
}

// startServer starts a process of the HTTP server.
func (r *Relay) startServer() (*child, error) {
	gen := r.nextGen()
	var url string
	srv, err := start(r.spec(), gen, func(cmd *exec.Cmd) (io.ReadCloser, error) {
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
	r.events.post(Event{Kind: Starting, Gen: gen, Pid: srv.pid})
	r.log.Info("server started", "pid", srv.pid, "gen", gen, "url", url, "cmd", describeCommand(r.cfg.Child.Command, r.cfg.Child.Shell))
	r.wg.Go(func() {
		<-srv.done
		r.serverExited(srv)
	})
	return srv, nil
}

// serverExited handles the end of the HTTP server's process: every
// session's HTTP session ended with it; one mcpflow did not stop is a
// crash, restarted as relay.on_crash says (a process no session got an
// answer from is a failed start, not restarted).
func (r *Relay) serverExited(srv *child) {
	if srv.stopping.Load() {
		r.events.post(Event{Kind: Stopped, Gen: srv.gen, Pid: srv.pid})
		return
	}
	e := srv.exitInfo()
	r.mu.Lock()
	if r.server != srv || r.state == stateClosed {
		r.mu.Unlock()
		return
	}
	r.server = nil
	var report string
	var backoff time.Duration
	switch {
	case !srv.served.Load():
		report = texts.FailedStart(e, r.cfg.Child.Setting, r.cfg.Tools.Rebuild)
	case r.health.lastBuildFailed:
		report = texts.CrashAfterFailedBuild(e, r.cfg.Tools.Rebuild)
	default:
		r.mu.Unlock()
		report, backoff = r.crashed(e)
		r.mu.Lock()
	}
	r.health.setReport(report, true)
	r.state = stateDown
	sessions := slices.Clone(r.sessions)
	r.mu.Unlock()
	r.events.post(Event{Kind: Crashed, Gen: srv.gen, Pid: srv.pid, Report: report})
	r.log.Error("server crashed", "status", e.Status, "uptime", result.Dur(e.Uptime))
	for _, s := range sessions {
		s.mu.Lock()
		c := s.child
		s.mu.Unlock()
		if c != nil && c.p == srv {
			c.link.Close() // its end is handled by connEnded
		}
	}
	if backoff > 0 {
		r.wg.Go(func() {
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(backoff):
			}
			if _, err := r.restart(r.ctx, true); err != nil && !errors.Is(err, errClosed) {
				r.log.Error("restart after crash failed", "err", firstLine(err.Error()))
			}
		})
	}
}

// crashed applies the crash policy (relay.on_crash) to a crash after the
// child ran e.Uptime: the report the agent reads, and after how long it
// is restarted (0: it is not).
func (r *Relay) crashed(e texts.Exit) (string, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tool := r.cfg.Tools.Rebuild
	action, backoff := r.health.crashes.crashed(e.Uptime)
	switch action {
	case crashLoopStop:
		r.log.Error("crash loop: automatic restarts stopped until a file changes or "+tool+" is called", "crashes", r.health.crashes.quick)
		return texts.CrashLoop(e, r.health.crashes.quick, tool), 0
	case crashRestart:
		r.log.Info("restarting after crash", "in", result.Dur(backoff))
		return texts.CrashRestarting(e), backoff
	}
	r.log.Info("not restarting (relay.on_crash = \"wait\"): fix the code, then save or call " + tool)
	return texts.CrashWait(e, tool), 0
}

// failedStart notes a child that did not come up: while no session is
// served by a child, the relay is down with report (new sessions are
// answered alone with it) until the next build or recompile.
func (r *Relay) failedStart(report string) {
	sessions := r.openSessions()
	for _, s := range sessions {
		s.mu.Lock()
		up := s.phase == phaseUp && s.child != nil
		s.mu.Unlock()
		if up {
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != stateClosed && r.state != stateRestarting {
		r.state = stateDown
	}
	r.health.setReport(report, true)
}

func (r *Relay) openSessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sessions)
}

// restartAfterCrash starts a new child for session s after backoff,
// unless something else did meanwhile; quiet: no request saw the crash,
// so the next tool result says that mcpflow restarted the server.
func (r *Relay) restartAfterCrash(s *Session, backoff time.Duration, quiet bool, status string) {
	r.wg.Go(func() {
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backoff):
		}
		s.mu.Lock()
		skip := s.child != nil || s.phase != phaseDown
		s.mu.Unlock()
		r.mu.Lock()
		skip = skip || r.health.crashes.stopped || r.state != stateUp
		srv := r.server
		r.mu.Unlock()
		if skip {
			return
		}
		res, err := s.reconnect(r.ctx, srv, true)
		if err != nil {
			if !errors.Is(err, errClosed) {
				r.log.Error("restart after crash failed", "err", firstLine(err.Error()))
			}
			return
		}
		r.log.Info("server restarted after its crash", "took", result.Dur(res.Duration))
		r.mu.Lock()
		r.starts++
		r.mu.Unlock()
		r.events.post(Event{Kind: Up, Gen: res.Gen, Pid: res.Pid, Restart: res})
		if quiet {
			s.mu.Lock()
			s.notices.set(noticeCrash, texts.NoticeCrashRestarted(status), r.cfg.Notices)
			s.mu.Unlock()
		}
	})
}

// stopChild stops the session's child once the calls in flight on it
// finished (at most Drain): its requests still pending get the restart
// error.
func (s *Session) stopChild() {
	s.mu.Lock()
	c := s.child
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.drain(c)
	c.stop(s.r.cfg.Child.StopTimeout, s.r.ctx)
}

// drain lets the calls in flight on c, a child about to be replaced,
// finish within Config.Drain, while new messages are held. It returns
// when none is left, at the end of Drain, when c ends or when the relay
// shuts down.
func (s *Session) drain(c *conn) {
	r := s.r
	if r.cfg.Drain <= 0 || c.exited() {
		return
	}
	s.mu.Lock()
	done := s.ids.startDrain(c.gen)
	n := s.ids.calls(c.gen)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.ids.endDrain()
		s.mu.Unlock()
	}()
	if n == 0 {
		return
	}
	r.log.Info("letting the calls in flight finish before the restart", "calls", n, "drain", result.Dur(r.cfg.Drain))
	t := time.NewTimer(r.cfg.Drain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.log.Warn("drain time over: the calls still running get the restart error", "drain", result.Dur(r.cfg.Drain))
	case <-c.done:
	case <-r.ctx.Done():
	}
}

// reconnect gives the session a new child of the current generation (a
// process of its own, or an HTTP session on srv): the old one is stopped
// once its calls drained, the session replayed into the new one, its
// lists read and the client told of what changed, the held messages sent
// on. auto: a restart after a crash, not a build's.
func (s *Session) reconnect(ctx context.Context, srv *child, auto bool) (*result.Restart, error) {
	r := s.r
	t0 := time.Now()
	s.mu.Lock()
	if s.phase == phaseClosed {
		s.mu.Unlock()
		return nil, errClosed
	}
	if s.bridge != nil {
		s.mu.Unlock()
		return nil, nil // the bridge's own session with the relay has a child of its own
	}
	old := s.child
	learn := old != nil && !old.exited() && s.ready() && s.view.unknown()
	s.phase = phaseHold
	s.mu.Unlock()
	if learn {
		s.learnLists(ctx, old)
	}
	res := &result.Restart{}
	tStop := time.Now()
	if old != nil {
		s.drain(old)
		old.stop(r.cfg.Child.StopTimeout, r.ctx)
	}
	res.Stop = time.Since(tStop)

	tStart := time.Now()
	c, err := s.connect(srv)
	if err != nil {
		report := texts.NoStart(err, r.cfg.Child.Setting)
		s.goDown(report)
		r.failedStart(report)
		res.Err = errors.New(report)
		return res, res.Err
	}
	res.Gen, res.Pid, res.Start = c.p.gen, c.p.pid, time.Since(tStart)
	s.mu.Lock()
	if s.phase == phaseClosed {
		s.mu.Unlock()
		c.stop(shutdownStep, r.ctx)
		return res, errClosed
	}
	s.child, s.hs.childDiscover = c, false
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()

	tReplay := time.Now()
	if res.Handshake, err = s.replay(ctx, c); err != nil {
		if errors.Is(err, errOtherEra) {
			return res, nil // the era bridge serves the session
		}
		res.Err = s.failStart(c, err)
		return res, res.Err
	}
	res.Replay = time.Since(tReplay)
	tTools := time.Now()
	views, tools, err := s.lists(ctx, c)
	if err != nil {
		res.Err = s.failStart(c, err)
		return res, res.Err
	}
	res.Tools = s.diff(tools, views != nil)
	res.ToolsList = time.Since(tTools)
	probe, err := s.goUp(c, views)
	if err == nil {
		err = s.awaitAnswer(ctx, c, probe)
	}
	if err != nil {
		res.Err = err
		return res, err
	}
	res.Duration = time.Since(t0)
	return res, nil
}

// replay brings a new child to where the client's session is: the legacy
// handshake (the answer compared with the last one), or the check that
// it speaks the 2026-07-28 era mcpflow answered for, then the rest of the
// session (State.Replay). It returns what differs from the previous
// child's answer; errOtherEra when the session went to the era bridge.
func (s *Session) replay(ctx context.Context, c *conn) ([]string, error) {
	s.mu.Lock()
	era, init := s.st.Era, s.st.Init
	if init != nil {
		if env, err := wire.Peek(init); err != nil || s.held.has(env) {
			init = nil // held: it reaches the child when sent on
		}
	}
	prev := s.hs.initResult
	if s.hs.selfInit {
		prev = nil // mcpflow's own stand-in answer: nothing to compare
	}
	probe := s.hs.selfDiscover && (era == wire.EraModern || era == wire.EraUnknown && s.bridgeable())
	params := s.withMeta(nil)
	s.mu.Unlock()
	var changes []string
	switch {
	case era == wire.EraLegacy && init != nil:
		env, _ := wire.Peek(init)
		res, err := s.call(ctx, c, "initialize", env.Params)
		var refused *callError
		if errors.As(err, &refused) && s.bridgeable() {
			s.mu.Lock()
			s.handOff(s.opening(), [][]byte{env.ID}) // a server of 2026-07-28 only
			s.mu.Unlock()
			return nil, errOtherEra
		}
		if err != nil {
			return nil, fmt.Errorf("replaying initialize: %w", err)
		}
		forced, err := forcedResult(res, true, s.r.cfg.ServerSuffix)
		if err != nil {
			return nil, fmt.Errorf("replaying initialize: %w", err)
		}
		s.mu.Lock()
		s.hs.selfInit, s.hs.caps, s.hs.initResult = false, declaredCaps(res), forced
		c.speaks = wire.EraLegacy
		s.mu.Unlock()
		s.r.keep([]recorded{{"initialize", true, forced}})
		changes = compareInit(prev, forced)
	case probe:
		// mcpflow answered server/discover itself: does this server speak
		// 2026-07-28?
		res, err := s.call(ctx, c, "server/discover", params)
		if (err != nil || !speaksModern(res)) && s.bridgeable() {
			s.mu.Lock()
			s.handOff(s.opening(), nil)
			s.mu.Unlock()
			return nil, errOtherEra
		}
		if err != nil {
			return nil, fmt.Errorf("asking the server's era: %w", err)
		}
		if forced, err := forcedResult(res, false, s.r.cfg.ServerSuffix); err == nil {
			s.r.keep([]recorded{{"server/discover", true, forced}})
		}
		s.mu.Lock()
		c.speaks, s.hs.childDiscover, s.hs.selfDiscover = wire.EraModern, true, false
		s.mu.Unlock()
	case era == wire.EraLegacy:
		return nil, nil // its initialize is held: it reaches the child when sent on
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resume(c)
	return changes, nil
}

// resume sends child c the rest of the session: initialized, the log
// level and the subscriptions (answers dropped), the open listens (their
// acknowledgements dropped) — but what the hold queue has, which reaches
// the child when it is sent on. s.mu is held.
func (s *Session) resume(c *conn) {
	for _, m := range s.st.Replay(func() []byte { return s.ids.newID('r') }) {
		env, err := wire.Peek(m)
		if err != nil || env.Method == "initialize" || s.held.has(env) {
			continue
		}
		switch {
		case env.Method == "subscriptions/listen":
			s.send(c, m, env, &pending{kind: kindListen, gen: c.gen, method: env.Method, awaitingAck: true})
		default:
			c.send(m) // a request under an id of mcpflow's own: its answer is dropped
		}
	}
}

// compareInit lists what a new child answered differently.
func compareInit(prev, cur []byte) []string {
	if prev == nil {
		return nil
	}
	var a, b map[string]json.RawMessage
	if json.Unmarshal(prev, &a) != nil || json.Unmarshal(cur, &b) != nil {
		return nil
	}
	var out []string
	for _, k := range []string{"protocolVersion", "capabilities", "instructions", "serverInfo"} {
		if !sameJSON(a[k], b[k]) {
			out = append(out, texts.HandshakeChanged(k, compactJSON(b[k]), compactJSON(a[k])))
		}
	}
	return out
}

// goUp makes c the session's serving child: the client hears of the
// lists that changed (views; nil: not read), the held messages go to it.
// It returns the params of a ping to send when c answered nothing yet and
// no handshake of the client's is on its way to it (nil: none).
func (s *Session) goUp(c *conn, views map[string]listView) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase == phaseClosed {
		return nil, errClosed
	}
	if s.child != c {
		return nil, errors.New(s.report)
	}
	s.phase, s.report, s.waiting = phaseUp, "", false
	c.settled = true
	if views != nil {
		s.announce(views)
	} else {
		s.view.forget()
	}
	s.flush()
	if !c.hasAnswered() && !s.ids.handshakePending(c.gen) {
		return s.withMeta(nil), nil
	}
	return nil, nil
}

// awaitAnswer waits until c answered a request: the client's held
// handshake, just sent, or else a ping of mcpflow's (probe). A child that
// ignores a ping is taken as up after probeTimeout.
func (s *Session) awaitAnswer(ctx context.Context, c *conn, probe []byte) error {
	if c.hasAnswered() {
		return nil
	}
	var probeTimer <-chan time.Time
	wait := min(probeTimeout, s.r.cfg.HandshakeTimeout/2)
	if probe != nil {
		s.r.wg.Go(func() { _, _ = s.call(ctx, c, "ping", probe) })
		t := time.NewTimer(wait)
		defer t.Stop()
		probeTimer = t.C
	}
	select {
	case <-c.answered:
	case <-probeTimer:
		s.r.log.Debug("the server did not answer a ping before its handshake; taken as up", "after", result.Dur(wait))
	case <-c.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return errors.New(orString(s.report, texts.NotRunning))
	case <-ctx.Done():
		return s.failStart(c, ctx.Err())
	}
	return nil
}

// failStart stops a child that came up broken; the session is then
// answered alone (connEnded). It returns the report the agent reads.
func (s *Session) failStart(c *conn, err error) error {
	r := s.r
	if r.ctx.Err() != nil {
		c.stop(shutdownStep, r.ctx)
		return errClosed
	}
	report := texts.BadStart(err, r.cfg.Tools.Rebuild)
	if errors.Is(err, context.DeadlineExceeded) {
		report = texts.NoHandshake(describeCommand(r.cfg.Child.Command, r.cfg.Child.Shell), r.cfg.Child.Setting, r.cfg.HandshakeTimeout, c.stderrInfo(), r.cfg.Tools.Rebuild)
	}
	s.mu.Lock()
	alive := !c.exited()
	if alive && c.failed == "" {
		c.failed = report
	}
	s.mu.Unlock()
	c.end(r.cfg.Child.StopTimeout, r.ctx)
	s.mu.Lock()
	if s.report != "" {
		report = s.report // connEnded's, which says more of an exit
	}
	s.mu.Unlock()
	r.log.Error("the new server did not come up; waiting for the next change or "+r.cfg.Tools.Rebuild, "err", firstLine(report))
	return errors.New(report)
}

// respawn is the restart of a session's own child (initialize after
// server/discover) without a build. After a failed build that child runs
// that build's output: the agent is told so.
func (s *Session) respawn() {
	if _, err := s.reconnect(s.r.ctx, nil, true); err != nil {
		if !errors.Is(err, errClosed) {
			s.r.log.Error("starting a fresh server", "err", firstLine(err.Error()))
		}
		return
	}
	if s.r.lastBuildFailed() {
		s.mu.Lock()
		s.notices.set(noticeBuild, texts.NoticeFailedBuildRunning(s.r.cfg.Tools.Rebuild), s.r.cfg.Notices)
		s.mu.Unlock()
	}
}

// NoteBuild tells the relay how a build cycle ended (the builder's
// OnResult); it receives every build's result. A failed build leaves the
// old children serving, with a notice for the agent after an automatic
// rebuild; should one then crash, it is not restarted from the failed
// build's output. A failed first build leaves the sessions answered
// alone.
func (r *Relay) NoteBuild(o result.Build) {
	if o.Canceled {
		return
	}
	r.mu.Lock()
	r.health.building = false
	if o.OK {
		r.health.lastBuildFailed = false
		r.mu.Unlock()
		r.eachSession(func(s *Session) { s.notices.set(noticeBuild, "", true) })
		return
	}
	r.health.lastBuildFailed = true
	report := texts.BuildFailed(o.Err, o.Errors, r.cfg.Tools.Rebuild)
	st := r.state
	if st == stateStarting || st == stateDown {
		r.state = stateDown
		r.health.setReport(report, true)
	}
	r.mu.Unlock()
	r.events.post(Event{Kind: BuildFailed, Report: report})
	r.eachSession(func(s *Session) {
		switch {
		case st == stateStarting || st == stateDown && s.child == nil:
			s.down(report) // calls held for the first build are answered
		case st == stateUp && o.Trigger == "watch":
			s.notices.set(noticeBuild, texts.NoticeBuildFailed(r.cfg.Tools.Rebuild), r.cfg.Notices)
		}
	})
}

// eachSession calls f for each open session with its lock held.
func (r *Relay) eachSession(f func(s *Session)) {
	for _, s := range r.openSessions() {
		s.mu.Lock()
		f(s)
		s.mu.Unlock()
	}
}

// recompileInBackground rebuilds and restarts on the child's own request.
func (r *Relay) recompileInBackground(why string) {
	o := r.runRecompile(r.ctx, nil)
	if text, isErr := texts.Outcome(o, r.cfg.Tools.Rebuild, r.running()); isErr {
		r.log.Error("rebuild failed", "trigger", why, "result", firstLine(text))
	}
}

// running reports whether a child serves now.
func (r *Relay) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == stateUp
}

// starting reports whether the first good build is still to come.
func (r *Relay) starting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == stateStarting
}

// buildingFirst reports whether calls wait for the first build (it runs
// past the client's grace).
func (r *Relay) buildingFirst() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.health.building && r.state != stateUp
}

func (r *Relay) lastBuildFailed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.health.lastBuildFailed
}

// call sends a request of mcpflow's own to c and waits for its result.
func (s *Session) call(ctx context.Context, c *conn, method string, params []byte) ([]byte, error) {
	s.mu.Lock()
	id := s.ids.newID('r')
	ch := s.ids.wait(id)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.ids.waiters, string(id))
		s.mu.Unlock()
	}()
	c.send(wire.Request(id, method, params))
	select {
	case msg := <-ch:
		env, err := wire.Peek(msg)
		if err != nil {
			return nil, err
		}
		if env.HasError {
			e := &callError{method: method}
			_ = json.Unmarshal(env.Error, e)
			return nil, e
		}
		return env.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("it exited (%s) before answering %s", c.exitInfo().Status, method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

// callError is a child's error answer to a request of mcpflow's own.
type callError struct {
	method  string
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *callError) Error() string {
	return fmt.Sprintf("%s: server answered error %d: %s", e.method, e.Code, e.Message)
}

// errOtherEra: the new child does not speak the era of the client's
// session, which mcpflow answered itself: the era bridge serves it.
var errOtherEra = errors.New("the server does not speak the client's protocol era")

// speaksModern reports whether a server/discover result names a version
// of the 2026-07-28 era among the server's.
func speaksModern(result []byte) bool {
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	_ = json.Unmarshal(result, &r)
	return slices.ContainsFunc(r.SupportedVersions, wire.IsModern)
}

func diffOr(d result.ToolDiff) string {
	if !d.Known {
		return "(no earlier list)"
	}
	return d.String()
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func mergeEnv(base []string, over map[string]string) []string {
	if len(over) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(over))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := over[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		out = append(out, k+"="+over[k])
	}
	return out
}
