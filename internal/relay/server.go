package relay

import (
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// fromChild handles one message the child sent (valid JSON: the link's
// framer checked); rel is the id (as the child knows it) of the request
// whose exchange carried it, when the link knows (see wire.LinkReceiver).
func (r *switchboard) fromChild(c *child, msg, rel []byte) {
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
	r.mu.Lock()
	var only *Port
	if len(r.ports) == 1 {
		// One client: what goes to it is written by this goroutine once
		// the lock is free. Its pace is the child's (back-pressure), and no
		// hand-off is paid.
		only = r.ports[0]
		only.out.beginInline()
	}
	switch {
	case env.IsResponse():
		r.childResponse(c, msg, env)
	case env.IsRequest():
		r.childRequest(c, msg, env, rel)
	case env.IsNotification():
		r.childNotification(c, msg, env, rel)
	}
	r.mu.Unlock()
	if only != nil {
		only.out.endInline()
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
		if id != nil && !r.ids.deliver(string(id), wire.ErrorResponse(id, wire.CodeInternalError, texts.ErrServerBadJSON, nil)) {
			if pd, ok := r.ids.lookup(string(id), c.gen); ok && pd.kind != kindListen {
				r.ids.forget(string(id))
				rid := pd.replyID(string(id))
				pd.port.reply(rid, wire.ErrorResponse(rid, wire.CodeInternalError, texts.ErrServerBadJSON, nil))
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

// childResponse hands the child's answer to the client whose request it
// answers. sw.mu is held.
func (r *switchboard) childResponse(c *child, msg []byte, env wire.Envelope) {
	key := string(env.ID)
	if strings.HasPrefix(key, reservedPrefix) && r.ids.deliver(key, msg) {
		if r.trace != nil {
			r.trace.msg("server", &env, len(msg), nil)
		}
		return
	}
	pd, ok := r.ids.lookup(key, c.gen)
	if r.trace != nil {
		r.trace.msg("server", &env, len(msg), pd)
	}
	if !ok {
		r.log.Debug("dropped a server response to a request that is no longer in flight", "id", key)
		return
	}
	p := pd.port
	if pd.kind == kindListen {
		if l := r.sess.listens[key]; l != nil && l.tools {
			// The relay keeps this stream open: it sends tools/list_changed
			// itself after each restart.
			r.log.Debug("kept a subscriptions/listen open that the server ended", "id", key)
			return
		}
		delete(r.sess.listens, key)
	}
	if pd.kind == kindInitialize && env.HasError && p.opts.Handoff != nil && !p.initDecided {
		// The child refused the client's first initialize: a server of
		// 2026-07-28 only, which the era bridge serves.
		r.ids.forget(key)
		p.initReq = nil
		r.handOff(p, [][]byte{pd.msg}, nil)
		r.bridged()
		return
	}
	r.ids.forget(key)
	r.stats.answered(pd.kind, env.Result)
	switch pd.kind {
	case kindInitialize:
		msg = r.forceResult(c, msg, env, true)
		defer r.flushQueue() // other clients' initialize waited for this answer
	case kindDiscover:
		msg = r.forceResult(c, msg, env, false)
	case kindToolsList:
		p.view.noteTools(pd.firstPage, env.Result)
		if !r.cfg.NoOwnTools {
			msg = r.tools.inject(msg, env)
		}
	case kindToolsCall:
		msg = r.tools.attach(msg, env)
	}
	if _, ok := recordLists[pd.method]; ok && pd.kind != kindToolsList {
		p.view.hear(pd.method)
	}
	if !env.HasError {
		result := env.Result
		if pd.kind == kindInitialize || pd.kind == kindDiscover {
			result = r.sess.initResult // forced, as the client gets it
		}
		keepInRecord(r, pd.method, pd.firstPage, result)
	}
	id := pd.replyID(key)
	if pd.clientID != nil {
		if e, err := wire.Peek(msg); err == nil {
			msg = wire.Splice(msg, e.IDStart, e.IDEnd, pd.clientID)
		}
	}
	p.reply(id, msg)
}

// childRequest sends a server→client request to the client it belongs to
// (see route), renumbered so that a late answer can be told apart from
// one meant for the next child. sw.mu is held.
func (r *switchboard) childRequest(c *child, msg []byte, env wire.Envelope, rel []byte) {
	if c != r.child || r.state == stateClosed {
		return
	}
	p, prel := r.route(c, env, rel)
	if p == nil {
		r.log.Warn("the server sent a request while no client is connected; it was answered with an error", "method", env.Method)
		c.send(wire.ErrorResponse(env.ID, wire.CodeInternalError, texts.ErrNoClient, nil))
		return
	}
	id := r.ids.renumber(c.gen, env.ID, p)
	p.deliver(wire.Splice(msg, env.IDStart, env.IDEnd, id), prel)
}

// route finds the client a child's request or notification belongs to,
// and the client's id of the request it belongs to (rel for Deliver):
// the request whose exchange carried it (rel, from an HTTP link), else
// the request its progress token names, else the listen stream its
// subscription id names, else the request most recently sent to the
// child; else, with nothing in flight, the most recently active client
// and no request. sw.mu is held.
func (r *switchboard) route(c *child, env wire.Envelope, rel []byte) (*Port, []byte) {
	if rel != nil {
		if pd, ok := r.ids.lookup(string(rel), c.gen); ok {
			return pd.port, pd.replyID(string(rel))
		}
	}
	if tok := jsonscan.Member(env.Params, "progressToken"); tok != nil {
		if t, ok := r.ids.tokens[string(tok)]; ok {
			if pd, ok := r.ids.pending[t.key]; ok {
				return t.port, pd.replyID(t.key)
			}
			return t.port, nil
		}
	}
	if sub := subscriptionID(env.Params); sub != nil {
		if l := r.sess.listens[string(sub)]; l != nil && l.port != nil {
			return l.port, l.replyID(string(sub))
		}
	}
	if key, pd := r.ids.newest(c.gen); pd != nil {
		return pd.port, pd.replyID(key)
	}
	return r.latestPort(), nil
}

// childNotification passes a notification of the child's to the client it
// belongs to (see route), or to every client when it belongs to no
// request. sw.mu is held.
func (r *switchboard) childNotification(c *child, msg []byte, env wire.Envelope, rel []byte) {
	if c != r.child {
		return
	}
	switch env.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		// The child changed a list itself: what the clients are served is
		// no longer known.
		kind := strings.TrimSuffix(strings.TrimPrefix(env.Method, "notifications/"), "/list_changed")
		r.eachPort(func(p *Port) { p.view.forgetKind(kind) })
		if subscriptionID(env.Params) == nil {
			r.eachPort(func(p *Port) { p.deliver(msg, nil) })
			return
		}
	case "notifications/resources/updated":
		if subscriptionID(env.Params) == nil {
			r.eachPort(func(p *Port) { p.deliver(msg, nil) })
			return
		}
	case "notifications/subscriptions/acknowledged":
		sub := subscriptionID(env.Params)
		l := r.sess.listens[string(sub)]
		if l != nil && l.awaitingAck {
			l.awaitingAck = false
			return
		}
		if l != nil && l.tools {
			msg = forceAck(msg, env)
		}
		if l != nil && l.port != nil {
			l.port.deliver(l.restore(msg), l.replyID(string(sub)))
			return
		}
	case "notifications/cancelled":
		// The child cancels one of its own requests to a client.
		if id, p, ok := r.ids.cancelServerReq(c.gen, jsonscan.Member(env.Params, "requestId")); ok {
			if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok {
				p.deliver(wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(id)), nil)
			}
			return
		}
		return
	case "notifications/progress":
		tok := jsonscan.Member(env.Params, "progressToken")
		if t, ok := r.ids.tokens[string(tok)]; ok {
			if t.client != nil {
				if vs, ve, ok := jsonscan.MemberSpan(env.Params, "progressToken"); ok {
					msg = wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, t.client)
				}
			}
			var prel []byte
			if pd, ok := r.ids.pending[t.key]; ok {
				prel = pd.replyID(t.key)
			}
			t.port.deliver(msg, prel)
			return
		}
	}
	p, prel := r.route(c, env, rel)
	if prel == nil {
		// It belongs to no request: every client hears it.
		r.eachPort(func(q *Port) { q.deliver(msg, nil) })
		return
	}
	if sub := subscriptionID(env.Params); sub != nil {
		if l := r.sess.listens[string(sub)]; l != nil && l.port == p {
			msg = l.restore(msg)
		}
	}
	p.deliver(msg, prel)
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
	if pd, ok := r.ids.lookup(key, c.gen); ok && pd.kind != kindListen {
		r.ids.forget(key)
		rid := pd.replyID(key)
		pd.port.reply(rid, wire.ErrorResponse(rid, wire.CodeInternalError, texts.ErrServerTooLarge(tl.Size, tl.Max), nil))
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
	tool := r.cfg.rebuild()
	var report string
	action, backoff := crashWait, time.Duration(0)
	failedStart := false
	switch {
	case restarted:
	case replacing:
		report = texts.CrashRestarting(e)
	case c.failed != "":
		failedStart = true
		report = c.failed
	case !c.hasAnswered() || !c.settled:
		failedStart = true
		report = texts.FailedStart(e, r.cfg.Child.Setting, tool)
	case !current:
		report = texts.CrashWait(e, tool)
	case r.sw.health.lastBuildFailed:
		report = texts.CrashAfterFailedBuild(e, tool)
	default:
		action, backoff = r.sw.health.crashes.crashed(e.Uptime)
		switch action {
		case crashWait:
			report = texts.CrashWait(e, tool)
		case crashLoopStop:
			report = texts.CrashLoop(e, r.sw.health.crashes.quick, tool)
		case crashRestart:
			report = texts.CrashRestarting(e)
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
		key, pd := pr.key, pr.p
		if !restarted && (pd.kind == kindInitialize || pd.kind == kindDiscover) {
			// The session must survive a server that dies at once: the
			// relay answers the handshake itself, once it is down.
			if env, err := wire.Peek(pd.msg); err == nil {
				handshake = append(handshake, queued{msg: pd.msg, env: env, port: pd.port})
				continue
			}
		}
		failed++
		id := pd.replyID(key)
		if restarted {
			pd.port.reply(id, wire.ErrorResponse(id, wire.CodeServerRestarted, texts.ErrRestarted, nil))
		} else {
			pd.port.reply(id, wire.ErrorResponse(id, wire.CodeServerDown, texts.ErrCrashed(report), map[string]any{"exit": c.exitDesc, "stderr": c.tail.String()}))
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
		if !m.port.closed {
			r.sw.answerDown(m.port, m.msg, m.env)
		}
	}
	r.sw.down(report, true)
	r.log.Error("server crashed", "status", c.exitDesc, "uptime", result.Dur(e.Uptime))
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
