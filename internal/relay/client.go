package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// fromClient handles one message from port p's client: valid JSON (its
// front checked), one JSON-RPC object (its front split batches).
func (r *switchboard) fromClient(p *Port, msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil || env.IsArray {
		r.mu.Lock()
		p.deliver(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.TextNotAnRPC, nil), nil)
		r.mu.Unlock()
		return
	}
	if r.trace != nil {
		r.trace.msg("client", &env, len(msg), nil)
	}
	r.mu.Lock()
	var in inliner
	if c := r.child; c != nil {
		if in, _ = c.link.(inliner); in != nil {
			in.beginInline() // written by this goroutine once the lock is free
		}
	}
	r.dispatchClient(p, msg, env)
	r.mu.Unlock()
	if in != nil {
		in.endInline()
	}
}

// dispatchClient routes one client message. sw.mu is held.
func (r *switchboard) dispatchClient(p *Port, msg []byte, env wire.Envelope) {
	if p.closed {
		return
	}
	r.touch(p)
	switch {
	case p.handedOff:
		p.hand.send(msg, nil)
	case p.initID != nil && !(env.IsRequest() && env.Method == "initialize"):
		r.hold(p, msg, env) // until initialize is answered (PortOptions.Handoff)
	case env.IsResponse():
		r.clientResponse(p, msg, env)
	case env.IsNotification():
		r.clientNotification(p, msg, env)
	case env.IsRequest():
		r.clientRequest(p, msg, env)
	default:
		// Neither request, response nor notification: answered under its
		// id when it has a valid one, else under null (JSON-RPC 2.0, 5.1).
		r.log.Warn("client sent a message that is neither request, response nor notification; answered with an error", "msg", wire.Abbreviate(msg, 200))
		id := env.ID
		if wire.IDProblem(id) != "" {
			id = nil
		}
		p.deliver(wire.ErrorResponse(id, wire.CodeInvalidRequest, texts.ErrNoKind, nil), id)
	}
}

func (r *switchboard) clientRequest(p *Port, msg []byte, env wire.Envelope) {
	key := string(env.ID)
	switch {
	case wire.IDProblem(env.ID) != "":
		p.deliver(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.IDProblem(env.ID), nil), nil)
		return
	case strings.HasPrefix(key, reservedPrefix) && p.opts.KeepIDs && !strings.HasPrefix(key, embedderPrefix):
		p.reply(env.ID, wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, texts.ErrReservedID, nil))
		return
	}
	if r.ids.inFlight(p, env.ID) {
		p.reply(env.ID, wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, texts.ErrInFlight, nil))
		return
	}
	if _, dup := r.recompiles[p.key(env.ID)]; dup {
		p.reply(env.ID, wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, texts.ErrInFlight, nil))
		return
	}
	r.notePort(p, env)
	r.sess.note(env, r.log)
	if env.Method == "initialize" && p.initReq == nil {
		p.initReq = msg
	}
	if env.Method == "initialize" && p.opts.Handoff != nil && !p.initDecided && p.initID == nil {
		p.initID = bytes.Clone(env.ID)
	}

	if env.Method == "tools/call" && r.cfg.Tool != "" {
		switch toolName(env.Params) {
		case r.cfg.Tool:
			r.shell.startRecompile(p, env)
			return
		case r.cfg.CallTool:
			if r.cfg.CallTool != "" {
				msg, env = rewriteCallTool(msg, env)
			}
		}
	}

	if env.Method == "initialize" && r.sess.initReq != nil && !p.answeredOwn {
		// The child's session is open already (another client opened it):
		// this client is answered from it.
		if r.sess.initResult == nil {
			r.hold(p, msg, env) // its first answer is on its way
			return
		}
		r.answerInitialize(p, env, r.sess.initResult)
		return
	}
	if r.state == stateStarting && firstAnswer(r, p, msg, env) {
		return
	}
	switch {
	case r.state == stateStarting || r.state == stateRestarting || r.health.waitsForFirstBuild(r.state, env):
		r.hold(p, msg, env)
	case r.state == stateDown:
		r.answerDown(p, msg, env)
	case r.state == stateUp && r.probeFirst(p, env):
		r.hold(p, msg, env)
	case r.state == stateUp:
		r.forward(p, msg, env)
	}
}

// probeFirst reports whether port p's request must wait while the relay
// asks the child whether it speaks 2026-07-28 (see probeEra): a modern
// client's request, to a child that said nothing of its era yet, when a
// client could be handed to the era bridge should it not. sw.mu is held.
func (r *switchboard) probeFirst(p *Port, env wire.Envelope) bool {
	c := r.child
	if r.probing {
		return true
	}
	if p.era != eraModern || env.Method == "server/discover" || c.speaks != eraUnknown || r.cfg.Bridge == nil || p.opts.Handoff == nil {
		return false
	}
	r.probing = true
	go r.shell.probeEra(c)
	return true
}

// notePort records what a request says of port p's client: its era and
// who it is (initialize, or a 2026-07-28 request's _meta). sw.mu is held.
func (r *switchboard) notePort(p *Port, env wire.Envelope) {
	e := eraOf(env)
	if e == eraUnknown {
		return
	}
	if p.era == eraUnknown {
		p.era = e
	}
	if e == eraLegacy || p.client.Name == "" {
		p.client = clientOf(env, e)
	}
}

// answerInitialize answers port p's initialize with result, an initialize
// result of the child's session, under the version the client asked for
// when it is one of the legacy versions. sw.mu is held.
func (r *switchboard) answerInitialize(p *Port, env wire.Envelope, result []byte) {
	var asked struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(env.Params, &asked)
	res := withVersion(result, asked.ProtocolVersion)
	p.answeredOwn = true
	p.reply(env.ID, wire.ResultResponse(env.ID, res))
}

// forward sends a client request to the current child. sw.mu is held and a
// child is up.
func (r *switchboard) forward(p *Port, msg []byte, env wire.Envelope) {
	c := r.child
	orig := msg
	k := kindPlain
	switch env.Method {
	case "initialize":
		if r.sess.childDiscover {
			// A Go SDK server that answered server/discover refuses a later
			// initialize; the relay owns the child, so it starts a fresh one.
			r.log.Info("initialize after server/discover: starting a fresh server for the legacy handshake")
			r.hold(p, msg, env)
			r.state = stateRestarting
			go r.shell.respawn()
			return
		}
		r.sess.initReq = msg
		r.sess.selfInit = false
		r.sess.childInit = true
		k = kindInitialize
	case "server/discover":
		r.sess.childDiscover = true
		k = kindDiscover
	case "tools/list":
		k = kindToolsList
	case "tools/call":
		k = kindToolsCall
	case "subscriptions/listen":
		k = kindListen
	case "logging/setLevel":
		r.sess.logLevel = bytes.Clone(env.Params)
	case "resources/subscribe":
		r.sess.subs[uriOf(env.Params)] = bytes.Clone(env.Params)
	case "resources/unsubscribe":
		delete(r.sess.subs, uriOf(env.Params))
	}
	pd := &pending{kind: k, gen: c.gen, method: env.Method, port: p}
	if r.trace != nil {
		pd.sent = time.Now()
	}
	if strings.HasSuffix(env.Method, "/list") {
		pd.firstPage = jsonscan.Member(env.Params, "cursor") == nil
	}
	if k == kindInitialize || k == kindDiscover {
		pd.msg = orig // as the client sent it: answered by the relay should the child die
		r.boundHandshake(c, pd)
	}
	key := string(env.ID)
	if !p.opts.KeepIDs || !plainID(env.ID) {
		// The child might not echo this id byte for byte (6.5 comes back
		// as 6 from some SDKs), or another client may use it too: the
		// child gets one of the relay's instead, and the answer the
		// client's own.
		id := r.ids.newID("c")
		pd.clientID = bytes.Clone(env.ID)
		msg = wire.Splice(msg, env.IDStart, env.IDEnd, id)
		key = string(id)
		if env2, err := wire.Peek(msg); err == nil {
			env = env2
		}
	}
	r.ids.track(p, key, pd)
	if tok := jsonscan.Member(jsonscan.Member(env.Params, "_meta"), "progressToken"); tok != nil {
		msg = r.ids.trackToken(p, msg, env, tok, key)
	}
	if k == kindListen {
		l := newListen(msg, env.Params)
		l.port, l.clientID, l.orig = p, pd.clientID, orig
		r.sess.listens[key] = l
	}
	c.send(msg)
}

// boundHandshake gives child c HandshakeTimeout to answer the client's
// handshake pd; a child that does not is stopped, and the relay answers
// the handshake itself, saying why (texts.NoHandshake). sw.mu is held.
func (r *switchboard) boundHandshake(c *child, pd *pending) {
	time.AfterFunc(r.cfg.HandshakeTimeout, func() {
		r.mu.Lock()
		pending := false
		for _, q := range r.ids.pending {
			pending = pending || q == pd
		}
		stale := !pending || r.child != c || c.exited() || c.failed != ""
		if !stale {
			c.failed = texts.NoHandshake(describeCommand(childSpec{argv: r.cfg.Child.Command, shell: r.cfg.Child.Shell}), r.cfg.Child.Setting, r.cfg.HandshakeTimeout, c.stderrInfo(), r.cfg.rebuild())
		}
		r.mu.Unlock()
		if !stale {
			r.log.Error("the server did not answer its handshake in time; stopping it", "after", result.Dur(r.cfg.HandshakeTimeout))
			c.kill(r.cfg.Child.StopTimeout, context.Background())
		}
	})
}

func (r *switchboard) clientNotification(p *Port, msg []byte, env wire.Envelope) {
	switch env.Method {
	case "notifications/initialized":
		p.initialized = true
		switch {
		case p.answeredOwn:
			return // answered from the child's open session: it was told
		case r.sess.selfInit:
			// The relay answered initialize: the session exists now; the
			// child gets its own notifications/initialized when replayed.
			r.sess.clientInit = true
			return
		case r.state == stateStarting || r.state == stateRestarting:
			r.hold(p, msg, env) // counted when it is delivered
			return
		}
		r.sess.clientInit = true
	case "notifications/cancelled":
		id := jsonscan.Member(env.Params, "requestId")
		if cancel, ok := r.recompiles[p.key(id)]; ok {
			cancel()
			return
		}
		childKey := r.ids.childKey(p, id)
		pd, ok := r.ids.forget(childKey)
		if !ok {
			if r.held.remove(p, id) {
				return // canceled while held: it is never sent
			}
			r.log.Debug("dropped a cancel for a request that is not in flight", "id", string(id))
			return
		}
		if pd.kind == kindListen {
			delete(r.sess.listens, childKey)
		}
		// The request is over for the client: a late answer is dropped.
		// A child being replaced may still run it (the drain).
		if (r.state == stateUp || r.state == stateRestarting) && r.child != nil && r.child.gen == pd.gen {
			if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok && childKey != string(id) {
				msg = wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(childKey))
			}
			r.child.send(msg)
		}
		return
	}
	switch r.state {
	case stateStarting, stateRestarting:
		r.hold(p, msg, env)
	case stateUp:
		r.child.send(msg)
	}
}

// clientResponse maps the client's answer to a server→client request back
// to the child that asked, if that child is still the current one.
func (r *switchboard) clientResponse(p *Port, msg []byte, env wire.Envelope) {
	key := string(env.ID)
	sr, ok := r.ids.mapBack(key)
	if !ok {
		r.log.Warn("dropped a client response to an unknown request id", "id", key)
		return
	}
	if r.child == nil || r.child.gen != sr.gen || r.child.exited() {
		r.log.Info("dropped a client answer meant for a server that has since been replaced", "id", key)
		return
	}
	r.child.send(wire.Splice(msg, env.IDStart, env.IDEnd, sr.origID))
}

// hold queues a client message while a restart or the first build runs.
func (r *switchboard) hold(p *Port, msg []byte, env wire.Envelope) {
	switch r.held.add(p, msg, env, time.Now()) {
	case duplicate:
		p.reply(env.ID, wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, texts.ErrInFlight, nil))
	case full:
		reason := texts.ErrQueueFull(r.held.len(), r.held.bytes)
		r.log.Warn("restart queue full; refused a message", "method", env.Method)
		if env.IsRequest() {
			p.reply(env.ID, wire.ErrorResponse(env.ID, wire.CodeQueueFull, reason, nil))
		}
	}
}

// flushQueue dispatches the held messages in order. sw.mu is held. A
// message that finds the relay restarting again is held again, behind
// none of the others, so order is kept.
func (r *switchboard) flushQueue() {
	if r.moved != nil {
		close(r.moved)
		r.moved = nil
	}
	for _, m := range r.held.take() {
		if r.state == stateStarting || r.state == stateRestarting || m.port.closed {
			if !m.port.closed {
				r.held.put(m)
			}
			continue
		}
		r.dispatchQueued(m)
	}
}

func (r *switchboard) dispatchQueued(m queued) {
	env, p := m.env, m.port
	switch {
	case p.handedOff:
		p.hand.send(m.msg, nil)
	case p.initID != nil && !bytes.Equal(env.ID, p.initID):
		r.held.put(m) // until initialize is answered (PortOptions.Handoff)
	case env.IsRequest():
		switch {
		case env.Method == "initialize" && r.sess.initReq != nil && !bytes.Equal(r.sess.initReq, m.msg):
			if r.sess.initResult == nil {
				r.held.put(m)
				return
			}
			r.answerInitialize(p, env, r.sess.initResult)
		case r.health.waitsForFirstBuild(r.state, env):
			r.held.put(m)
		case r.state == stateDown:
			r.answerDown(p, m.msg, env)
		case r.state == stateUp && r.probeFirst(p, env):
			r.held.put(m)
		case r.state == stateUp:
			r.forward(p, m.msg, env)
		}
	case env.IsNotification():
		r.clientNotification(p, m.msg, env)
	}
}

// expireQueue answers held requests that waited longer than QueueTimeout;
// it looks at the queue only while something is held (an idle relay does
// not wake).
func (r *Relay) expireQueue() {
	every := min(r.cfg.Queue.Timeout/4, time.Second)
	t := time.NewTimer(every)
	t.Stop()
	armed := false
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.sw.held.added:
			if !armed {
				t.Reset(every)
				armed = true
			}
			continue
		case <-t.C:
			armed = false
		}
		r.sw.mu.Lock()
		if len(r.sw.held.q) > 0 {
			t.Reset(every)
			armed = true
		}
		for _, m := range r.sw.held.expire(time.Now().Add(-r.cfg.Queue.Timeout)) {
			switch {
			case !m.env.IsRequest():
			case r.sw.health.building:
				m.port.reply(m.env.ID, wire.ResultResponse(m.env.ID, toolResult(texts.ErrDown(texts.Building(r.cfg.rebuild())), true, nil, m.port.era == eraModern)))
			default:
				m.port.reply(m.env.ID, wire.ErrorResponse(m.env.ID, wire.CodeQueueFull, texts.ErrQueueTimeout(r.cfg.Queue.Timeout), nil))
			}
		}
		r.sw.mu.Unlock()
	}
}

func toolName(params []byte) string {
	v := jsonscan.Member(params, "name")
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _ := jsonscan.Unquote(v)
	return s
}

func uriOf(params []byte) string {
	v := jsonscan.Member(params, "uri")
	s, _ := jsonscan.Unquote(v)
	return s
}
