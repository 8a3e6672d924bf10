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

	"github.com/mcpflow/mcpflow/internal/result"
)

// handshakeTimeout bounds each step of bringing a new child up.
const handshakeTimeout = 30 * time.Second

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
	r.restarts.mu.Lock()
	defer r.restarts.mu.Unlock()

	r.sw.mu.Lock()
	if r.sw.state == stateClosed {
		r.sw.mu.Unlock()
		return fail(errClosed)
	}
	old := r.sw.child
	baseline := !r.restarts.haveTools && old != nil && r.sw.state == stateUp && r.sw.sessionReady()
	if !r.restarts.haveTools && old == nil && r.sw.state == stateDown && r.sw.sess.era != eraUnknown {
		// Down until now: the client has seen no tools but the relay's.
		r.restarts.baseline, r.restarts.haveTools = []toolInfo{}, true
	}
	r.sw.mu.Unlock()
	if baseline {
		// The first restart: learn the old tools, so the diff can be told.
		if tools, err := r.fetchTools(ctx, old); err == nil {
			r.restarts.baseline, r.restarts.haveTools = tools, true
		}
	}

	r.sw.mu.Lock()
	if r.sw.state != stateClosed {
		r.sw.state = stateRestarting
	}
	if !auto {
		r.sw.crashes.reset()
	}
	r.sw.mu.Unlock()

	tStop := time.Now()
	if old != nil {
		old.stop(r.cfg.StopTimeout)
		<-old.reaped
	}
	res.Stop = time.Since(tStop)

	tStart := time.Now()
	c, err := r.spawn()
	if err != nil {
		r.goDown(fmt.Sprintf("the MCP server could not be started: %v", err))
		return fail(err)
	}
	res.Gen, res.Pid = c.gen, c.pid
	res.Start = time.Since(tStart)

	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	ctx, cancel2 := mergeCancel(ctx, r.ctx)
	defer cancel2()

	tReplay := time.Now()
	changes, err := r.replay(ctx, c)
	if err != nil {
		return fail(r.failStart(c, err))
	}
	res.Handshake = changes
	res.Replay = time.Since(tReplay)

	tTools := time.Now()
	r.sw.mu.Lock()
	ready := r.sw.sessionReady()
	r.sw.mu.Unlock()
	if ready {
		tools, err := r.fetchTools(ctx, c)
		if err != nil {
			return fail(r.failStart(c, err))
		}
		res.Tools = diffTools(r.restarts.baseline, tools, r.restarts.haveTools) // a first start has nothing to diff against
		r.restarts.baseline, r.restarts.haveTools = tools, true
	}
	res.ToolsList = time.Since(tTools)

	r.sw.mu.Lock()
	if r.sw.state == stateClosed {
		r.sw.mu.Unlock()
		return fail(errClosed)
	}
	if r.sw.child != c {
		report := r.sw.downReport
		r.sw.mu.Unlock()
		return fail(errors.New(report))
	}
	r.sw.state = stateUp
	r.sw.downReport = ""
	// Only a session that existed before this child hears of the change:
	// held messages may be the client's very first handshake.
	if st := r.sw.sess.strategy(); st != nil && st.established(&r.sw.sess) {
		for _, m := range st.listChanged(&r.sw.sess, r.sw.sess.listKinds()) {
			r.sw.out.send(m)
		}
	}
	r.sw.flushQueue()
	res.Duration = time.Since(t0)
	r.events.post(Event{Kind: Up, Gen: res.Gen, Pid: res.Pid, Restart: res})
	r.sw.mu.Unlock()

	r.log.Debug("restart ✓", "took", result.Dur(res.Duration), "stop", result.Dur(res.Stop), "start", result.Dur(res.Start),
		"handshake", result.Dur(res.Replay), "tools", diffOr(res.Tools))
	return res, nil
}

func diffOr(d result.ToolDiff) string {
	if !d.Known {
		return "(no earlier list)"
	}
	return d.String()
}

// restartText is the agent's rendering of a restart.
func restartText(res *result.Restart) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Server restarted in %s (stop %s, start %s, handshake %s, tools/list %s).\n",
		result.Dur(res.Duration), result.Dur(res.Stop), result.Dur(res.Start), result.Dur(res.Replay), result.Dur(res.ToolsList))
	d := res.Tools
	switch {
	case !d.Known:
	case d.Empty():
		b.WriteString("Tools: unchanged.\n")
	default:
		fmt.Fprintf(&b, "Tools: %s\n", d)
		for _, n := range d.Current {
			det, ok := d.Details[n]
			switch {
			case !ok:
			case slices.Contains(d.Added, n):
				fmt.Fprintf(&b, "  %s (new): %s\n  input schema: %s\n", n, det.Description, det.InputSchema)
			case det.SchemaChanged:
				fmt.Fprintf(&b, "  %s (changed): input schema: %s\n", n, det.InputSchema)
			}
		}
	}
	for _, ch := range res.Handshake {
		b.WriteString("Note: " + ch + "\n")
	}
	return b.String()
}

// respawn starts a fresh child without a build (initialize after discover).
func (r *Relay) respawn() {
	if _, err := r.restart(r.ctx, true); err != nil && !errors.Is(err, errClosed) {
		r.log.Error("starting a fresh server", "err", err)
	}
}

// afterCrash applies relay.on_crash. r.sw.mu is held.
func (r *Relay) afterCrash(uptime time.Duration) {
	action, backoff := r.sw.crashes.crashed(uptime)
	switch action {
	case crashWait:
		r.log.Info("not restarting (relay.on_crash = \"wait\"): fix the code, then save or call " + r.cfg.Tool)
		return
	case crashLoopStop:
		r.sw.downReport += fmt.Sprintf("\nThe server crashed %d times in a row right after starting, so mcpflow stopped restarting it. Fix the code, then save a file or call %s.", r.sw.crashes.quick, r.cfg.Tool)
		r.log.Error("crash loop: automatic restarts stopped until a file changes or recompile is called", "crashes", r.sw.crashes.quick)
		return
	}
	gen := r.sw.gen
	r.log.Info("restarting after crash", "in", backoff)
	go func() {
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(backoff):
		}
		r.sw.mu.Lock()
		skip := r.sw.gen != gen || r.sw.crashes.stopped || r.sw.state != stateDown
		r.sw.mu.Unlock()
		if skip {
			return
		}
		res, err := r.restart(r.ctx, true)
		if err != nil {
			if !errors.Is(err, errClosed) {
				r.log.Error("restart after crash failed", "err", err)
			}
			return
		}
		r.log.Info("server restarted after its crash", "took", result.Dur(res.Duration))
	}()
}

// recompileInBackground rebuilds and restarts on the child's own request.
func (r *Relay) recompileInBackground(why string) {
	text, isErr := formatOutcome(r.runRecompile(r.ctx, nil), r.cfg.Tool)
	if isErr {
		r.log.Error("rebuild failed", "trigger", why, "result", text)
	}
}

// spawn starts the next generation and makes it current. The state stays
// as it is (restarting), so client messages keep waiting.
func (r *Relay) spawn() (*child, error) {
	r.sw.mu.Lock()
	if r.sw.state == stateClosed {
		r.sw.mu.Unlock()
		return nil, errClosed
	}
	r.sw.gen++
	gen := r.sw.gen
	spec := r.spec
	spec.env = mergeEnv(mergeEnv(spec.env, r.cfg.ExtraEnv), r.sw.tools.env)
	// Start under the lock: the child's first messages and a crash at once
	// must find it already current.
	c, err := startChild(spec, gen, r.sw.fromChild, r.sw.fromChildChunks, r.sw.childTooLarge, r.childStderr)
	if err != nil {
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
func (r *Relay) replay(ctx context.Context, c *child) ([]string, error) {
	r.sw.mu.Lock()
	st, initReq, prevResult := r.sw.sess.strategy(), r.sw.sess.initReq, r.sw.sess.initResult
	r.sw.mu.Unlock()
	var changes []string
	switch st.(type) {
	case nil:
		return nil, nil
	case legacyEra:
		if initReq == nil {
			return nil, nil // initialize is held: it reaches the child when flushed
		}
		env, err := peekEnvelope(initReq)
		if err != nil {
			return nil, err
		}
		res, err := r.call(ctx, c, "initialize", env.params)
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
		changes = compareInit(prevResult, forced)
	default:
		r.sw.mu.Lock()
		defer r.sw.mu.Unlock()
	}
	for _, m := range st.replay(&r.sw.sess, r.sw.ids, c.gen) {
		c.in.send(m)
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
			out = append(out, fmt.Sprintf("the new server's initialize result has a different %s: %s (was %s); the client keeps the old one until it reconnects", k, compactJSON(b[k]), compactJSON(a[k])))
		}
	}
	return out
}

// sessionReady reports whether the client's session lets the relay send
// requests of its own to the child. sw.mu is held.
func (r *switchboard) sessionReady() bool { return r.sess.ready(r.child) }

// failStart stops a child that came up broken and leaves the relay down.
func (r *Relay) failStart(c *child, err error) error {
	if !c.exited() {
		c.stop(r.cfg.StopTimeout)
	}
	<-c.reaped
	report := fmt.Sprintf("the MCP server started but %v", err)
	if t := strings.TrimSpace(c.tail.String()); t != "" {
		report += "\nLast lines of its stderr:\n" + lastLines(t, 40)
	}
	r.goDown(report)
	return errors.New(report)
}

// goDown leaves the relay without a child; held messages are answered.
func (r *Relay) goDown(report string) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	if r.sw.state == stateClosed {
		return
	}
	if r.sw.state != stateDown || r.sw.downReport == "" {
		// (Down already: the child crashed while starting, and its crash
		// report, crash-loop verdict included, says more.)
		r.sw.state = stateDown
		r.sw.downReport = report
	}
	r.sw.flushQueue()
}

// NoteBuild tells the relay how a build cycle ended (the builder's
// OnResult). A failed first build leaves the relay answering alone; a
// failed automatic rebuild leaves a notice for the agent.
func (r *Relay) NoteBuild(o result.Build) {
	if o.OK {
		return
	}
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	report := "the build failed"
	if o.Err != nil {
		report = fmt.Sprintf("the build failed (%v)", o.Err)
	}
	if o.Errors != "" {
		report += ":\n" + strings.TrimRight(o.Errors, "\n")
	}
	r.events.post(Event{Kind: BuildFailed, Report: report})
	switch r.sw.state {
	case stateStarting:
		r.sw.state = stateDown
		r.sw.downReport = report + "\nFix the errors, then call " + r.cfg.Tool + "."
		r.sw.flushQueue()
	case stateDown:
		r.sw.downReport = report + "\nFix the errors, then call " + r.cfg.Tool + "."
	case stateUp:
		if o.Trigger == "watch" {
			r.sw.tools.notice("mcpflow: the automatic rebuild after your last edit failed; the previous server is still running. Call %s to see the errors.", r.cfg.Tool)
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
	c.in.send(request(id, method, params))
	select {
	case msg := <-ch:
		env, err := peekEnvelope(msg)
		if err != nil {
			return nil, err
		}
		if env.hasError {
			var e struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal(msg, &e)
			return nil, fmt.Errorf("%s: server answered error %d: %s", method, e.Error.Code, e.Error.Message)
		}
		return env.result, nil
	case <-c.done:
		return nil, fmt.Errorf("it exited (%s) before answering %s", c.exitDesc, method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

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
