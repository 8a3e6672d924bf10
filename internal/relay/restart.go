package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// probeTimeout bounds the wait for an answer to the relay's ping to a new
// child that no client request reached yet.
const probeTimeout = 5 * time.Second

// Restart replaces the child with a new one: hold client messages, stop the
// old child (every request pending on it gets one error), start the new one,
// replay the session (legacy handshake and state, or the modern listen
// streams), flush the held messages and tell the client its lists changed.
// The first call starts the first child. It returns what it did: timings,
// the tool diff, how the new handshake differs. On error the relay is left
// down, with a report that tools/call results show, and the returned
// Restart (never nil) carries the error too.
func (r *Relay) Restart(ctx context.Context) (*result.Restart, error) {
	return r.restart(ctx, false)
}

// restartRun is one restart seen as its phases, which Relay.restart runs
// in order with Relay.restarts held.
type restartRun struct{ *Relay }

func (r *Relay) restart(ctx context.Context, auto bool) (*result.Restart, error) {
	res := &result.Restart{}
	t0 := time.Now()
	fail := func(err error) (*result.Restart, error) {
		res.Err = err
		res.Duration = time.Since(t0)
		if !errors.Is(err, errClosed) {
			r.events.post(Event{Kind: RestartFailed, Gen: res.Gen, Pid: res.Pid, Report: err.Error(), Restart: res})
		}
		return res, err
	}
	r.restarts.Lock()
	defer r.restarts.Unlock()

	run := restartRun{r}
	old, err := run.beginRestart(ctx, auto)
	if err != nil {
		return fail(err)
	}
	tStop := time.Now()
	var pre *launched
	if old != nil {
		pre = run.prelaunch(old)
		run.drain(old)
		old.stop(r.cfg.Child.StopTimeout, r.ctx)
		<-old.reaped
	}
	res.Stop = time.Since(tStop)

	tStart := time.Now()
	c, err := run.spawn(pre)
	if err != nil {
		if errors.Is(err, errClosed) {
			return fail(err)
		}
		report := texts.NoStart(err, r.cfg.Child.Setting)
		run.goDown(report)
		return fail(errors.New(report))
	}
	res.Gen, res.Pid = c.gen, c.pid
	res.Start = time.Since(tStart)

	ctx, cancel := context.WithTimeout(ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	ctx, cancel2 := mergeCancel(ctx, r.ctx)
	defer cancel2()

	tReplay := time.Now()
	if res.Handshake, err = run.replay(ctx, c); err != nil {
		if errors.Is(err, errOtherEra) {
			return fail(run.handOff(c))
		}
		return fail(run.failStart(c, err))
	}
	res.Replay = time.Since(tReplay)

	tTools := time.Now()
	views, err := run.newTools(ctx, c, res)
	if err != nil {
		return fail(run.failStart(c, err))
	}
	res.ToolsList = time.Since(tTools)

	probe, err := run.goUp(c, views)
	if err != nil {
		return fail(err)
	}
	if err := run.awaitAnswer(ctx, c, probe); err != nil {
		return fail(err)
	}
	res.Duration = time.Since(t0)
	r.events.post(Event{Kind: Up, Gen: res.Gen, Pid: res.Pid, Restart: res})

	r.log.Debug("restart ✓", "took", result.Dur(res.Duration), "stop", result.Dur(res.Stop), "start", result.Dur(res.Start),
		"handshake", result.Dur(res.Replay), "tools", diffOr(res.Tools))
	return res, nil
}

// beginRestart holds client messages for the next child and returns the
// current one, if any. When the relay does not know yet what a client is
// served, it first reads the current child's lists, so that the tool
// diff can be told and list_changed sent only for what changes.
// Relay.restarts is held.
func (r restartRun) beginRestart(ctx context.Context, auto bool) (*child, error) {
	r.sw.mu.Lock()
	if r.sw.state == stateClosed {
		r.sw.mu.Unlock()
		return nil, errClosed
	}
	old := r.sw.child
	unknown := !r.sw.haveTools
	r.sw.eachPort(func(p *Port) { unknown = unknown || p.view.unknown() })
	learn := old != nil && r.sw.state == stateUp && r.sw.sess.ready(r.sw.child) && unknown
	r.sw.mu.Unlock()
	if learn {
		if views, tools, err := r.fetchLists(ctx, old); err == nil {
			r.sw.mu.Lock()
			r.sw.eachPort(func(p *Port) { p.view.learn(views) })
			if !r.sw.haveTools {
				r.sw.baseline, r.sw.haveTools = tools, true
			}
			r.sw.mu.Unlock()
		}
	}
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if r.sw.state != stateClosed {
		r.sw.state = stateRestarting
	}
	r.sw.health.building = false
	if !auto {
		// A build (or the agent) restarts the server: the crash count, the
		// failed build and the notices about them are over.
		r.sw.health.restartedByBuild()
		r.sw.tools.clearNotices()
	}
	return old, nil
}

// newTools reads the new child's lists, when the session lets the relay
// ask, and puts the tool diff in res: against the tools the most recently
// active client last listed, else those of the first child that listed
// them. Relay.restarts is held.
func (r restartRun) newTools(ctx context.Context, c *child, res *result.Restart) (map[string]listView, error) {
	r.sw.mu.Lock()
	ready := r.sw.sess.ready(r.sw.child)
	r.sw.mu.Unlock()
	if !ready {
		return nil, nil
	}
	views, tools, err := r.fetchLists(ctx, c)
	if err != nil {
		return nil, err
	}
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	var base []toolInfo
	known := false
	if p := r.sw.latestPort(); p != nil {
		base, known = p.view.tools, p.view.toolsKnown
	}
	if !known {
		// The client never listed tools: compare with the tools it had
		// when its session began.
		base, known = r.sw.baseline, r.sw.haveTools
	}
	res.Tools = diffTools(base, tools, known)
	if !r.sw.haveTools {
		r.sw.baseline, r.sw.haveTools = tools, true
	}
	return views, nil
}

// speaksModern reports whether a server/discover result names a version
// of the 2026-07-28 era among the server's.
func speaksModern(result []byte) bool {
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	_ = json.Unmarshal(result, &r)
	return slices.ContainsFunc(r.SupportedVersions, wire.IsModern)
}

// handOff stops c, which speaks the other era than the session the relay
// opened for its clients (answering their initialize or server/discover
// itself), and hands every client with a Handoff to it: what each opened
// (its initialize, which the relay answered, or its listen streams) and
// what it has held.
func (r restartRun) handOff(c *child) error {
	c.stop(min(r.cfg.Child.StopTimeout, shutdownStep), r.ctx)
	<-c.reaped
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	r.sw.eachPort(func(p *Port) {
		if p.opts.Handoff == nil {
			return
		}
		var first, answered [][]byte
		if p.initReq != nil {
			first = append(first, p.initReq)
			if env, err := wire.Peek(p.initReq); err == nil {
				answered = append(answered, env.ID)
			}
			if p.initialized {
				first = append(first, wire.Request(nil, "notifications/initialized", nil))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.sw.sess.listens)) {
			if l := r.sw.sess.listens[k]; l.port == p {
				first = append(first, l.clientMsg(k))
			}
		}
		r.sw.handOff(p, first, answered)
	})
	r.sw.bridged()
	return errors.New("the server speaks the other protocol era: the session went to the era bridge")
}

// goUp makes c the serving child: the held messages go to it and the
// client hears of the lists that changed (views; nil: not read). It
// returns the params of a ping to send when c has answered nothing yet
// and no handshake of the client's is on its way to it (nil: none).
func (r restartRun) goUp(c *child, views map[string]listView) (probe []byte, err error) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if r.sw.state == stateClosed {
		return nil, errClosed
	}
	if r.sw.child != c {
		return nil, errors.New(r.sw.health.describe())
	}
	r.sw.state = stateUp
	r.sw.health.downReport = ""
	c.settled = true
	if views != nil {
		// Only a session that existed before this child hears of a
		// change: held messages may be the client's very first handshake.
		r.sw.announce(views)
	} else {
		r.sw.eachPort(func(p *Port) { p.view.forget() })
	}
	r.sw.flushQueue()
	if !c.hasAnswered() && !r.sw.ids.handshakePending(c.gen) {
		return r.sw.sess.withMeta(nil), nil
	}
	return nil, nil
}

// awaitAnswer waits until c answered a request: the client's held
// handshake, just sent, or else a ping of the relay's (probe, allowed
// before initialize). A child that ignores a ping is taken as up after
// probeTimeout.
func (r restartRun) awaitAnswer(ctx context.Context, c *child, probe []byte) error {
	if c.hasAnswered() {
		return nil
	}
	var probeTimer <-chan time.Time
	wait := min(probeTimeout, r.cfg.HandshakeTimeout/2)
	if probe != nil {
		go r.call(ctx, c, "ping", probe)
		t := time.NewTimer(wait)
		defer t.Stop()
		probeTimer = t.C
	}
	select {
	case <-c.answered:
	case <-probeTimer:
		r.log.Debug("the server did not answer a ping before its handshake; taken as up", "after", result.Dur(wait))
	case <-c.done:
		<-c.reaped
		r.sw.mu.Lock()
		defer r.sw.mu.Unlock()
		return errors.New(r.sw.health.describe())
	case <-ctx.Done():
		return r.failStart(c, ctx.Err())
	}
	return nil
}

// drain lets the calls in flight on old, a child about to be replaced,
// finish within Config.Drain, while new messages are held for its
// successor. It returns when none is left, at the end of Drain, when old
// exits or when the relay shuts down; what still runs then gets the
// restart error as old is stopped.
func (r restartRun) drain(old *child) {
	if r.cfg.Drain <= 0 || old.exited() {
		return
	}
	r.sw.mu.Lock()
	done := r.sw.ids.startDrain(old.gen)
	n := r.sw.ids.calls(old.gen)
	r.sw.mu.Unlock()
	defer func() {
		r.sw.mu.Lock()
		r.sw.ids.endDrain()
		r.sw.mu.Unlock()
	}()
	if n == 0 {
		return
	}
	r.log.Info("letting the calls in flight finish before the restart", "calls", n, "drain", result.Dur(r.cfg.Drain))
	t := time.NewTimer(r.cfg.Drain)
	defer t.Stop()
	select {
	case <-done:
		r.log.Debug("the calls in flight finished; restarting")
	case <-t.C:
		r.sw.mu.Lock()
		left := r.sw.ids.calls(old.gen)
		r.sw.mu.Unlock()
		r.log.Warn("drain time over: the calls still running get the restart error", "calls", left, "drain", result.Dur(r.cfg.Drain))
	case <-old.done:
		<-old.reaped // its exit is handled as a crash before stop marks it stopped
	case <-r.ctx.Done():
	}
}

func diffOr(d result.ToolDiff) string {
	if !d.Known {
		return "(no earlier list)"
	}
	return d.String()
}

// probeEra asks child c, with a server/discover of the relay's own, whether
// it speaks 2026-07-28, for the modern clients whose requests wait
// (probeFirst): if it does, they go on; if not, every modern client with
// a Handoff goes to the era bridge, and the others' requests go on to it
// as they are.
func (r *Relay) probeEra(c *child) {
	r.sw.mu.Lock()
	params := r.sw.sess.withMeta(nil)
	r.sw.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	res, err := r.call(ctx, c, "server/discover", params)
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	r.sw.probing = false
	if r.sw.child != c || r.sw.state == stateClosed {
		r.sw.flushQueue()
		return
	}
	if err == nil && speaksModern(res) {
		c.speaks = eraModern
		r.sw.sess.childDiscover = true
		r.sw.flushQueue()
		return
	}
	c.speaks = eraLegacy
	r.log.Info("the server does not speak the 2026-07-28 era of its client: the client goes to the era bridge", "err", err)
	handed := false
	r.sw.eachPort(func(p *Port) {
		if p.era != eraModern || p.opts.Handoff == nil {
			return
		}
		var first [][]byte
		for _, k := range slices.Sorted(maps.Keys(r.sw.sess.listens)) {
			if l := r.sw.sess.listens[k]; l.port == p {
				first = append(first, l.clientMsg(k))
			}
		}
		r.sw.handOff(p, first, nil)
		handed = true
	})
	if handed {
		r.sw.bridged()
		return
	}
	r.sw.flushQueue()
}

// respawn starts a fresh child without a build (initialize after discover).
// After a failed build that child runs that build's output: the agent is
// told so.
func (r *Relay) respawn() {
	if _, err := r.restart(r.ctx, true); err != nil {
		if !errors.Is(err, errClosed) {
			r.log.Error("starting a fresh server", "err", firstLine(err.Error()))
		}
		return
	}
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if r.sw.health.lastBuildFailed {
		r.sw.tools.notice(noticeBuild, texts.NoticeFailedBuildRunning(r.cfg.rebuild()))
	}
}

// restartAfterCrash restarts the child of generation gen after backoff,
// unless something else restarted it meanwhile or the relay stopped
// restarting; betweenCalls: no request saw the crash, so the next tool
// result says that mcpflow restarted the server.
func (r *Relay) restartAfterCrash(gen int, backoff time.Duration, betweenCalls bool, status string) {
	r.log.Info("restarting after crash", "in", result.Dur(backoff))
	go func() {
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backoff):
		}
		r.sw.mu.Lock()
		skip := r.sw.gen != gen || r.sw.health.crashes.stopped || r.sw.state != stateDown
		r.sw.mu.Unlock()
		if skip {
			return
		}
		res, err := r.restart(r.ctx, true)
		if err != nil {
			if !errors.Is(err, errClosed) {
				// The stderr tail is in the log already, line by line.
				r.log.Error("restart after crash failed", "err", firstLine(err.Error()))
			}
			return
		}
		r.log.Info("server restarted after its crash", "took", result.Dur(res.Duration))
		if betweenCalls {
			r.sw.mu.Lock()
			r.sw.tools.notice(noticeCrash, texts.NoticeCrashRestarted(status))
			r.sw.mu.Unlock()
		}
	}()
}

// recompileInBackground rebuilds and restarts on the child's own request.
func (r *Relay) recompileInBackground(why string) {
	o := r.runRecompile(r.ctx, nil)
	text, isErr := texts.Outcome(o, r.cfg.rebuild(), r.running())
	if isErr {
		r.log.Error("rebuild failed", "trigger", why, "result", firstLine(text))
	}
}

// prelaunch starts the process of the next child while the calls in
// flight on old drain, when its Link overlaps (Overlapper): spawn then
// makes it the child once old is gone. It returns nil when there is
// nothing to drain, when the process must wait until old is gone, or
// when it did not start (spawn tries again, and reports).
func (r restartRun) prelaunch(old *child) *launched {
	if r.cfg.Drain <= 0 || r.spec.link == nil || old.exited() {
		return nil
	}
	link := r.spec.link()
	if o, ok := link.(Overlapper); !ok || !o.Overlaps() {
		return nil
	}
	r.sw.mu.Lock()
	n := r.sw.ids.calls(old.gen)
	spec := r.nextSpec()
	r.sw.mu.Unlock()
	if n == 0 {
		return nil
	}
	spec.link = func() Link { return link }
	l, err := launch(spec)
	if err != nil {
		return nil
	}
	r.log.Info("starting the next server while the calls in flight finish", "pid", l.cmd.Process.Pid)
	return l
}

// nextSpec is how the next child starts: its environment with the
// overrides of the moment. sw.mu is held.
func (r restartRun) nextSpec() childSpec {
	spec := r.spec
	spec.env = mergeEnv(mergeEnv(spec.env, r.cfg.Child.ExtraEnv), r.sw.tools.env)
	return spec
}

// spawn starts the next generation, or adopts pre, a process prelaunch
// started, and makes it current. The state stays as it is (restarting),
// so client messages keep waiting.
func (r restartRun) spawn(pre *launched) (*child, error) {
	r.sw.mu.Lock()
	if r.sw.state == stateClosed {
		r.sw.mu.Unlock()
		if pre != nil {
			pre.abort()
		}
		return nil, errClosed
	}
	r.sw.gen++
	gen := r.sw.gen
	spec := r.nextSpec()
	// Start under the lock: the child's first messages and a crash at once
	// must find it already current.
	var c *child
	var err error
	if pre != nil {
		c = adopt(pre, spec, gen, r.sw)
	} else if c, err = startChild(spec, gen, r.sw); err != nil {
		r.sw.mu.Unlock()
		return nil, err
	}
	r.sw.child = c
	r.curGen.Store(int64(gen))
	r.sw.sess.newChild()
	r.events.post(Event{Kind: Starting, Gen: gen, Pid: c.pid})
	r.children.Add(1)
	go func() {
		defer r.children.Done()
		<-c.done
		r.childExited(c)
		close(c.reaped)
	}()
	r.sw.mu.Unlock()
	r.log.Info("server started", "pid", c.pid, "gen", gen, "cmd", describeCommand(spec))
	return c, nil
}

// replay brings a new child to where the client's session is: the legacy
// handshake and session state, or the modern listen streams. It returns
// what differs from the previous child's answer.
func (r restartRun) replay(ctx context.Context, c *child) ([]string, error) {
	r.sw.mu.Lock()
	st, initReq, prevResult := r.sw.sess.strategy(), r.sw.sess.initReq, r.sw.sess.initResult
	if r.sw.sess.selfInit {
		prevResult = nil // the relay's own stand-in answer: nothing to compare
	}
	r.sw.mu.Unlock()
	var changes []string
	switch st.(type) {
	case nil:
		r.sw.mu.Lock()
		probe, params := r.sw.sess.selfDiscover, r.sw.sess.withMeta(nil)
		r.sw.mu.Unlock()
		if !probe || !r.bridges() {
			return nil, nil
		}
		// The relay answered server/discover itself and the client said
		// nothing more yet: what it sends next is of 2026-07-28, so the
		// new server must speak it.
		res, err := r.call(ctx, c, "server/discover", params)
		if err != nil || !speaksModern(res) {
			return nil, errOtherEra
		}
		forced, ferr := forcedResult(res, false, r.cfg.ServerSuffix)
		r.sw.mu.Lock()
		if ferr == nil {
			keepInRecord(r.sw, "server/discover", true, forced) // the server's answer, however late it came
		}
		c.speaks = eraModern
		r.sw.sess.childDiscover = r.sw.child == c // a later initialize gets a fresh server
		r.sw.mu.Unlock()
		return nil, nil
	case legacyEra:
		if initReq == nil {
			return nil, nil // initialize is held: it reaches the child when flushed
		}
		env, err := wire.Peek(initReq)
		if err != nil {
			return nil, err
		}
		res, err := r.call(ctx, c, "initialize", env.Params)
		var refused *callError
		if errors.As(err, &refused) && r.bridges() {
			return nil, errOtherEra // a server of 2026-07-28 only
		}
		if err != nil {
			return nil, fmt.Errorf("replaying initialize: %w", err)
		}
		forced, err := forcedResult(res, true, r.cfg.ServerSuffix)
		if err != nil {
			return nil, fmt.Errorf("replaying initialize: %w", err)
		}
		r.sw.mu.Lock()
		defer r.sw.mu.Unlock()
		if r.sw.child == c {
			r.sw.sess.childInit = true
		}
		r.sw.sess.selfInit = false // the child holds the session from now on
		r.sw.sess.childCaps = declaredCaps(res)
		r.sw.sess.initResult = forced
		r.sw.sess.childInitResult = forced
		keepInRecord(r.sw, "initialize", true, forced) // the server's answer, however late it came
		changes = compareInit(prevResult, forced)
	default:
		r.sw.mu.Lock()
		probe, params := r.sw.sess.selfDiscover, r.sw.sess.withMeta(nil)
		r.sw.mu.Unlock()
		if probe {
			// The relay answered server/discover itself: does this server
			// speak 2026-07-28?
			res, err := r.call(ctx, c, "server/discover", params)
			var refused *callError
			if (errors.As(err, &refused) || err == nil && !speaksModern(res)) && r.bridges() {
				return nil, errOtherEra
			}
			if err != nil {
				return nil, fmt.Errorf("asking the server's era: %w", err)
			}
			if forced, ferr := forcedResult(res, false, r.cfg.ServerSuffix); ferr == nil {
				r.sw.mu.Lock()
				keepInRecord(r.sw, "server/discover", true, forced) // the server's answer, however late it came
				r.sw.mu.Unlock()
			}
		}
		r.sw.mu.Lock()
		defer r.sw.mu.Unlock()
		r.sw.sess.selfDiscover = false
	}
	for _, m := range st.replay(&r.sw.sess, r.sw.ids, c.gen) {
		c.send(m)
	}
	return changes, nil
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

// failStart stops a child that came up broken and leaves the relay down.
// It returns the report the agent reads.
func (r restartRun) failStart(c *child, err error) error {
	if r.ctx.Err() != nil {
		// The relay shuts down: the start was cut short, nothing failed.
		c.kill(shutdownStep, r.ctx)
		<-c.reaped
		return errClosed
	}
	report := texts.BadStart(err, r.cfg.rebuild())
	if errors.Is(err, context.DeadlineExceeded) {
		report = texts.NoHandshake(describeCommand(r.spec), r.cfg.Child.Setting, r.cfg.HandshakeTimeout, c.stderrInfo(), r.cfg.rebuild())
		if w := c.link.Waiting(); w != "" {
			// It never got the handshake: say where the link waits.
			report = texts.WithStderr(texts.BadStart(errors.New(w), r.cfg.rebuild()), c.stderrInfo())
		}
	}
	r.sw.mu.Lock()
	alive := !c.exited()
	if alive {
		c.failed = report // childExited goes down with it, answering a held handshake itself
	}
	r.sw.mu.Unlock()
	if alive {
		c.kill(r.cfg.Child.StopTimeout, r.ctx)
	}
	<-c.reaped
	if !alive {
		// It exited on its own: childExited reported the failed start.
		report = texts.FailedStart(c.exitInfo(), r.cfg.Child.Setting, r.cfg.rebuild())
		r.goDown(report)
	}
	r.log.Error("the new server did not come up; waiting for the next change or "+r.cfg.rebuild(), "err", firstLine(report))
	return errors.New(report)
}

// goDown leaves the relay without a child, unless it is down already for a
// reason of its own (a crash report says more).
func (r restartRun) goDown(report string) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	r.sw.down(report, r.sw.state != stateDown || r.sw.health.downReport == "")
}

// running reports whether a server serves now.
func (r *Relay) running() bool {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	return r.sw.state == stateUp && r.sw.child != nil
}

// NoteBuild tells the relay how a build cycle ended (the builder's
// OnResult); it receives every build's result. A failed build leaves the
// old server serving, with a notice for the agent after an automatic
// rebuild; should that server then crash, the relay does not restart it
// from the failed build's output. A failed first build leaves the relay
// answering alone.
func (r *Relay) NoteBuild(o result.Build) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if o.Canceled {
		return
	}
	r.sw.health.building = false
	if o.OK {
		r.sw.health.lastBuildFailed = false
		r.sw.tools.clearNotice(noticeBuild)
		return
	}
	r.sw.health.lastBuildFailed = true
	report := texts.BuildFailed(o.Err, o.Errors, r.cfg.rebuild())
	r.events.post(Event{Kind: BuildFailed, Report: report})
	switch r.sw.state {
	case stateStarting:
		r.sw.down(report, true)
	case stateDown:
		r.sw.down(report, true) // tool calls held for the first build are answered
	case stateUp:
		if o.Trigger == "watch" {
			r.sw.tools.notice(noticeBuild, texts.NoticeBuildFailed(r.cfg.rebuild()))
		}
	}
}

// call sends a request of the relay's own to c and waits for its result.
func (r *Relay) call(ctx context.Context, c *child, method string, params []byte) ([]byte, error) {
	id := r.sw.ids.newID("")
	r.sw.mu.Lock()
	ch := r.sw.ids.wait(id)
	r.sw.mu.Unlock()
	defer func() {
		r.sw.mu.Lock()
		r.sw.ids.unwait(id)
		r.sw.mu.Unlock()
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
		return nil, fmt.Errorf("it exited (%s) before answering %s", c.exitDesc, method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

// callError is a child's error answer to a request of the relay's own.
type callError struct {
	method  string
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *callError) Error() string {
	return fmt.Sprintf("%s: server answered error %d: %s", e.method, e.Code, e.Message)
}

// errOtherEra: the new child does not speak the era of the clients'
// session, which the relay answered itself (from the record, or for
// mcpflow, while no server ran): the clients are handed to their
// Handoff, which bridges the eras.
var errOtherEra = errors.New("the server does not speak the client's protocol era")

// mergeCancel returns a context canceled when either parent is.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
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
