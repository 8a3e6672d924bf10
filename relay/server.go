package relay

import (
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
)

// fromChild handles one message the child wrote on stdout (valid JSON:
// the reader checked).
func (r *switchboard) fromChild(c *child, msg []byte) {
	if r.cfg.Traffic != nil {
		r.cfg.Traffic("server", false, c.gen, msg)
	}
	env, err := wire.Peek(msg)
	if err != nil || env.IsArray || (env.Method == "" && env.Result == nil && !env.HasError) {
		r.childJunk(c, msg, false)
		return
	}
	if env.IsResponse() {
		c.markAnswered()
	}
	if r.trace != nil && !env.IsResponse() {
		r.trace.msg("server", &env, len(msg), nil)
	}
	r.out.beginInline() // written by this goroutine once the lock is free
	defer r.out.endInline()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case env.IsResponse():
		r.childResponse(c, msg, env)
	case env.IsRequest():
		r.childRequest(c, msg, env)
	case env.IsNotification():
		r.childNotification(c, msg, env)
	}
}

// childJunk drops a line the child wrote on stdout that is not JSON-RPC
// (badJSON: not even valid JSON): forwarding it would corrupt the client's
// stream. A request the line seems to answer gets an error instead.
func (r *switchboard) childJunk(c *child, msg []byte, badJSON bool) {
	c.tail.Write([]byte("[stdout] " + wire.Abbreviate(msg, 2000) + "\n"))
	r.mu.Lock()
	defer r.mu.Unlock()
	if badJSON {
		id := wire.PartialID(msg)
		if id != nil && !r.ids.deliver(string(id), wire.ErrorResponse(id, wire.CodeInternalError, errTextServerBadJSON, nil)) {
			if p, ok := r.ids.lookup(string(id), c.gen); ok && p.kind != kindListen {
				r.ids.forget(string(id))
				r.reply(wire.ErrorResponse(p.replyID(string(id)), wire.CodeInternalError, errTextServerBadJSON, nil))
			}
		}
	}
	first := !r.junk.warned
	r.junk.warned = true
	what := "not JSON-RPC"
	if badJSON {
		what = "not valid JSON"
	}
	if first {
		r.log.Warn("the server wrote a line to stdout that is "+what+"; it was not forwarded (stdout belongs to the protocol: log to stderr). Further such lines are logged at debug level", "line", wire.Abbreviate(msg, 200))
	} else {
		r.junk.child.Debug("stdout ("+what+"): "+wire.Abbreviate(msg, 500), "bytes", len(msg))
	}
}

func (r *switchboard) childResponse(c *child, msg []byte, env wire.Envelope) {
	key := string(env.ID)
	if strings.HasPrefix(key, reservedPrefix) && r.ids.deliver(key, msg) {
		if r.trace != nil {
			r.trace.msg("server", &env, len(msg), nil)
		}
		return
	}
	p, ok := r.ids.lookup(key, c.gen)
	if r.trace != nil {
		r.trace.msg("server", &env, len(msg), p)
	}
	if !ok {
		r.log.Debug("dropped a server response to a request that is no longer in flight", "id", key)
		return
	}
	if p.kind == kindListen {
		if l := r.sess.listens[key]; l != nil && l.tools {
			// The relay keeps this stream open: it sends tools/list_changed
			// itself after each restart.
			r.log.Debug("kept a subscriptions/listen open that the server ended", "id", key)
			return
		}
		delete(r.sess.listens, key)
	}
	if p.kind == kindInitialize && env.HasError && r.cfg.Handoff != nil && !r.sess.initDecided {
		// The child refused the client's first initialize: a server of
		// 2026-07-28 only, which the era bridge serves.
		r.ids.forget(key)
		r.handOff([][]byte{p.msg}, nil)
		return
	}
	r.ids.forget(key)
	r.stats.answered(p.kind, env.Result)
	switch p.kind {
	case kindInitialize:
		msg = r.forceResult(c, msg, env, true)
	case kindDiscover:
		msg = r.forceResult(c, msg, env, false)
	case kindToolsList:
		r.view.noteTools(p.firstPage, env.Result)
		msg = r.tools.inject(msg, env)
	case kindToolsCall:
		msg = r.tools.attach(msg, env)
	}
	if _, ok := recordLists[p.method]; ok && p.kind != kindToolsList {
		r.view.hear(p.method)
	}
	if !env.HasError {
		result := env.Result
		if p.kind == kindInitialize || p.kind == kindDiscover {
			result = r.sess.initResult // forced, as the client gets it
		}
		keepInRecord(r, p.method, p.firstPage, result)
	}
	if p.clientID != nil {
		if e, err := wire.Peek(msg); err == nil {
			msg = wire.Splice(msg, e.IDStart, e.IDEnd, p.clientID)
		}
	}
	r.reply(msg)
}

// childRequest renumbers a server→client request so that a late answer can
// be told apart from one meant for the next child.
func (r *switchboard) childRequest(c *child, msg []byte, env wire.Envelope) {
	if c != r.child || r.state == stateClosed {
		return
	}
	id := r.ids.renumber(c.gen, env.ID)
	r.out.send(wire.Splice(msg, env.IDStart, env.IDEnd, id))
}

func (r *switchboard) childNotification(c *child, msg []byte, env wire.Envelope) {
	if c != r.child {
		return
	}
	switch env.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		// The child changed a list itself: what the client is served is
		// no longer known.
		r.view.forgetKind(strings.TrimSuffix(strings.TrimPrefix(env.Method, "notifications/"), "/list_changed"))
	case "notifications/subscriptions/acknowledged":
		l := r.sess.listens[string(subscriptionID(env.Params))]
		if l != nil && l.awaitingAck {
			l.awaitingAck = false
			return
		}
		if l != nil && l.tools {
			msg = forceAck(msg, env)
		}
	case "notifications/cancelled":
		// The child cancels one of its own requests to the client.
		if id, ok := r.ids.cancelServerReq(c.gen, jsonscan.Member(env.Params, "requestId")); ok {
			if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok {
				r.out.send(wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(id)))
			}
		}
		return
	}
	r.out.send(msg)
}

// childTooLarge handles an over-long line from the child: it is dropped,
// and the request it answered gets an error instead.
func (r *switchboard) childTooLarge(c *child, tl *wire.TooLargeError) {
	id := tl.ID()
	r.log.Error("server message too large; dropped", "bytes", tl.Size, "limit", tl.Max)
	if id == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := string(id)
	if p, ok := r.ids.lookup(key, c.gen); ok && p.kind != kindListen {
		r.ids.forget(key)
		r.reply(wire.ErrorResponse(p.replyID(key), wire.CodeInternalError, errTextServerTooLarge(tl.Size, tl.Max), nil))
	}
}

// childStderr copies a stderr line to the log.
func (r *switchboard) childStderr(c *child, line string) {
	r.junk.child.Info(line)
	if r.cfg.RestartMarker != "" && line == r.cfg.RestartMarker && !c.stopping.Load() {
		r.log.Info("the server asked for a restart (relay.restart_marker)")
		go r.shell.recompileInBackground("restart marker")
	}
}

// childExited is called once per child, after it is fully gone. Every
// request still pending on it gets exactly one error. A child that exits
// before it answered its handshake, or before the restart that started it
// completed, is a failed start: it is reported, not restarted. A crash
// while the last build failed is not restarted either (the files on disk
// came from that build). Other crashes follow relay.on_crash.
func (r *Relay) childExited(c *child) {
	r.sw.mu.Lock()
	defer r.sw.mu.Unlock()
	restarted := c.stopping.Load()
	// A child that exits while its calls drain is being replaced anyway:
	// its calls get the crash report, the relay stays restarting.
	replacing := !restarted && r.sw.ids.draining(c.gen)
	current := !restarted && !replacing && r.sw.child == c && r.sw.state != stateClosed
	e := c.exitInfo()
	tool := r.cfg.Tool
	var report string
	action, backoff := crashWait, time.Duration(0)
	failedStart := false
	switch {
	case restarted:
	case replacing:
		report = msgCrashRestarting(e)
	case c.failed != "":
		failedStart = true
		report = c.failed
	case !c.hasAnswered() || !c.settled:
		failedStart = true
		report = msgFailedStart(e, r.cfg.Child.Setting, tool)
	case !current:
		report = msgCrashWait(e, tool)
	case r.sw.health.lastBuildFailed:
		report = msgCrashAfterFailedBuild(e, tool)
	default:
		action, backoff = r.sw.health.crashes.crashed(e.uptime)
		switch action {
		case crashWait:
			report = msgCrashWait(e, tool)
		case crashLoopStop:
			report = msgCrashLoop(e, r.sw.health.crashes.quick, tool)
		case crashRestart:
			report = msgCrashRestarting(e)
		}
	}
	if restarted {
		r.events.post(Event{Kind: Stopped, Gen: c.gen, Pid: c.pid})
	} else {
		r.events.post(Event{Kind: Crashed, Gen: c.gen, Pid: c.pid, Report: report})
	}
	failed := 0
	var handshake []queued
	for _, pr := range r.sw.ids.takeGen(c.gen) {
		key, p := pr.key, pr.p
		if !restarted && (p.kind == kindInitialize || p.kind == kindDiscover) {
			// The session must survive a server that dies at once: the
			// relay answers the handshake itself, once it is down.
			if env, err := wire.Peek(p.msg); err == nil {
				handshake = append(handshake, queued{msg: p.msg, env: env})
				continue
			}
		}
		failed++
		if restarted {
			r.sw.reply(wire.ErrorResponse(p.replyID(key), wire.CodeServerRestarted, errTextRestarted, nil))
		} else {
			r.sw.reply(wire.ErrorResponse(p.replyID(key), wire.CodeServerDown, errTextCrashed(report), map[string]any{"exit": c.exitDesc, "stderr": c.tail.String()}))
		}
	}
	if replacing {
		r.log.Error("server crashed while its calls drained; the restart goes on", "status", c.exitDesc)
	}
	if !current {
		return
	}
	r.sw.child = nil
	r.sw.sess.newChild()
	r.sw.state = stateDown
	r.sw.health.downReport = report
	for _, m := range handshake {
		r.sw.answerDown(m.msg, m.env)
	}
	r.sw.down(report, true)
	r.log.Error("server crashed", "status", c.exitDesc, "uptime", result.Dur(e.uptime))
	switch {
	case failedStart:
		r.log.Error("it exited before answering its handshake: a failed start, not restarted until the next change or " + tool)
		return
	case r.sw.health.lastBuildFailed:
		r.log.Error("the last build failed: not restarting the server from that build's output until a build succeeds or " + tool + " is called")
		return
	}
	switch action {
	case crashWait:
		r.log.Info("not restarting (relay.on_crash = \"wait\"): fix the code, then save or call " + tool)
	case crashLoopStop:
		r.log.Error("crash loop: automatic restarts stopped until a file changes or "+tool+" is called", "crashes", r.sw.health.crashes.quick)
	case crashRestart:
		r.restartAfterCrash(c.gen, backoff, failed == 0, c.exitDesc)
	}
}
