package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
	"github.com/mcpflow/mcpflow/internal/result"
	"github.com/mcpflow/mcpflow/internal/wire"
)

// fromClient handles one line read from the client.
// The message is valid JSON (the reader checked).
func (r *switchboard) fromClient(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil {
		r.reply(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.TextNotAnRPC, nil))
		return
	}
	if r.trace != nil {
		r.trace.msg("client", &env, len(msg), nil)
	}
	if env.IsArray {
		r.clientBatch(msg)
		return
	}
	r.mu.Lock()
	c := r.child
	if c != nil {
		c.in.beginInline() // written by this goroutine once the lock is free
	}
	r.dispatchClient(msg, env)
	r.mu.Unlock()
	if c != nil {
		c.in.endInline()
	}
}

// clientBatch handles a JSON-RPC batch (protocol 2025-03-26): each element
// is handled as a message of its own, and the answers go back as one array.
func (r *switchboard) clientBatch(msg []byte) {
	var elems []json.RawMessage
	if err := json.Unmarshal(msg, &elems); err != nil || len(elems) == 0 {
		r.reply(wire.ErrorResponse(nil, wire.CodeInvalidRequest, errTextEmptyBatch, nil))
		return
	}
	envs := make([]wire.Envelope, len(elems))
	var ids, refused [][]byte
	for i, el := range elems {
		env, err := wire.Peek(el)
		if err != nil || env.IsArray {
			envs[i].IsArray = true // not a JSON-RPC object: answered at once, skipped below
			refused = append(refused, wire.ErrorResponse(nil, wire.CodeInvalidRequest, errTextBatchElem, nil))
			continue
		}
		envs[i] = env
		if env.IsRequest() {
			ids = append(ids, env.ID)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.batches.Begin(ids, refused)
	for i, el := range elems {
		if !envs[i].IsArray {
			r.dispatchClient(el, envs[i])
		}
	}
	r.batches.Dispatched(b)
}

// dispatchClient routes one client message. sw.mu is held.
func (r *switchboard) dispatchClient(msg []byte, env wire.Envelope) {
	switch {
	case r.sess.handedOff:
		r.cfg.Handoff([][]byte{msg}, nil)
	case r.sess.initID != nil && !(env.IsRequest() && env.Method == "initialize"):
		r.hold(msg, env) // until initialize is answered (Config.Handoff)
	case env.IsResponse():
		r.clientResponse(msg, env)
	case env.IsNotification():
		r.clientNotification(msg, env)
	case env.IsRequest():
		r.clientRequest(msg, env)
	default:
		// Neither request, response nor notification: answered under its
		// id when it has a valid one, else under null (JSON-RPC 2.0, 5.1).
		r.log.Warn("client sent a message that is neither request, response nor notification; answered with an error", "msg", wire.Abbreviate(msg, 200))
		id := env.ID
		if wire.IDProblem(id) != "" {
			id = nil
		}
		r.reply(wire.ErrorResponse(id, wire.CodeInvalidRequest, errTextNoKind, nil))
	}
}

func (r *switchboard) clientRequest(msg []byte, env wire.Envelope) {
	key := string(env.ID)
	switch {
	case wire.IDProblem(env.ID) != "":
		r.reply(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.IDProblem(env.ID), nil))
		return
	case strings.HasPrefix(key, reservedPrefix):
		r.reply(wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, errTextReservedID, nil))
		return
	}
	if r.ids.inFlight(key) {
		r.reply(wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, errTextInFlight, nil))
		return
	}
	if _, dup := r.recompiles[key]; dup {
		r.reply(wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, errTextInFlight, nil))
		return
	}
	r.sess.note(env, r.log)
	if env.Method == "initialize" && r.cfg.Handoff != nil && !r.sess.initDecided && r.sess.initID == nil {
		r.sess.initID = bytes.Clone(env.ID)
	}

	if env.Method == "tools/call" {
		switch toolName(env.Params) {
		case r.cfg.Tool:
			r.shell.startRecompile(env)
			return
		case r.cfg.CallTool:
			if r.cfg.CallTool != "" {
				msg, env = rewriteCallTool(msg, env)
			}
		}
	}

	if r.state == stateStarting && firstAnswer(r, msg, env) {
		return
	}
	switch {
	case r.state == stateStarting || r.state == stateRestarting || r.health.waitsForFirstBuild(r.state, env):
		r.hold(msg, env)
	case r.state == stateDown:
		r.answerDown(msg, env)
	case r.state == stateUp:
		r.forward(msg, env)
	}
}

// forward sends a client request to the current child. sw.mu is held and a
// child is up.
func (r *switchboard) forward(msg []byte, env wire.Envelope) {
	c := r.child
	k := kindPlain
	switch env.Method {
	case "initialize":
		if r.sess.childDiscover {
			// A Go SDK server that answered server/discover refuses a later
			// initialize; the relay owns the child, so it starts a fresh one.
			r.log.Info("initialize after server/discover: starting a fresh server for the legacy handshake")
			r.hold(msg, env)
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
		r.sess.listens[string(env.ID)] = newListen(msg, env.Params)
		k = kindListen
	case "logging/setLevel":
		r.sess.logLevel = bytes.Clone(env.Params)
	case "resources/subscribe":
		r.sess.subs[uriOf(env.Params)] = bytes.Clone(env.Params)
	case "resources/unsubscribe":
		delete(r.sess.subs, uriOf(env.Params))
	}
	p := &pending{kind: k, gen: c.gen, method: env.Method}
	if r.trace != nil {
		p.sent = time.Now()
	}
	if strings.HasSuffix(env.Method, "/list") {
		p.firstPage = jsonscan.Member(env.Params, "cursor") == nil
	}
	if k == kindInitialize || k == kindDiscover {
		p.msg = msg
		r.boundHandshake(c, p)
	}
	key := string(env.ID)
	if k != kindListen && !plainID(env.ID) {
		// The child might not echo this id byte for byte (6.5 comes back
		// as 6 from some SDKs): it gets one of the relay's instead, and
		// the answer the client's own.
		id := r.ids.newID("c")
		p.clientID = bytes.Clone(env.ID)
		msg = wire.Splice(msg, env.IDStart, env.IDEnd, id)
		key = string(id)
	}
	r.ids.track(key, p)
	c.in.send(msg)
}

// boundHandshake gives child c HandshakeTimeout to answer the client's
// handshake p; a child that does not is stopped, and the relay answers
// the handshake itself, saying why (msgNoHandshake). sw.mu is held.
func (r *switchboard) boundHandshake(c *child, p *pending) {
	time.AfterFunc(r.cfg.HandshakeTimeout, func() {
		r.mu.Lock()
		pending := false
		for _, q := range r.ids.pending {
			pending = pending || q == p
		}
		stale := !pending || r.child != c || c.exited() || c.failed != ""
		if !stale {
			c.failed = msgNoHandshake(describeCommand(childSpec{argv: r.cfg.Child.Command, shell: r.cfg.Child.Shell}), r.cfg.Child.Setting, r.cfg.HandshakeTimeout, c.stderrInfo(), r.cfg.Tool)
		}
		r.mu.Unlock()
		if !stale {
			r.log.Error("the server did not answer its handshake in time; stopping it", "after", result.Dur(r.cfg.HandshakeTimeout))
			c.kill(r.cfg.Child.StopTimeout, context.Background())
		}
	})
}

func (r *switchboard) clientNotification(msg []byte, env wire.Envelope) {
	switch env.Method {
	case "notifications/initialized":
		if r.sess.selfInit {
			// The relay answered initialize: the session exists now; the
			// child gets its own notifications/initialized when replayed.
			r.sess.clientInit = true
			return
		}
		if r.state == stateStarting || r.state == stateRestarting {
			r.hold(msg, env) // counted when it is delivered
			return
		}
		r.sess.clientInit = true
	case "notifications/cancelled":
		id := jsonscan.Member(env.Params, "requestId")
		key := string(id)
		r.batches.Forget(id)
		if cancel, ok := r.recompiles[key]; ok {
			cancel()
			return
		}
		delete(r.sess.listens, key)
		childKey := r.ids.childKey(key)
		p, ok := r.ids.forget(childKey)
		if !ok {
			if r.held.remove(id) {
				return // canceled while held: it is never sent
			}
			r.log.Debug("dropped a cancel for a request that is not in flight", "id", key)
			return
		}
		// The request is over for the client: a late answer is dropped.
		// A child being replaced may still run it (the drain).
		if (r.state == stateUp || r.state == stateRestarting) && r.child != nil && r.child.gen == p.gen {
			if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok && childKey != key {
				msg = wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(childKey))
			}
			r.child.in.send(msg)
		}
		return
	}
	switch r.state {
	case stateStarting, stateRestarting:
		r.hold(msg, env)
	case stateUp:
		r.child.in.send(msg)
	}
}

// clientResponse maps the client's answer to a server→client request back
// to the child that asked, if that child is still the current one.
func (r *switchboard) clientResponse(msg []byte, env wire.Envelope) {
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
	r.child.in.send(wire.Splice(msg, env.IDStart, env.IDEnd, sr.origID))
}

// hold queues a client message while a restart or the first build runs.
func (r *switchboard) hold(msg []byte, env wire.Envelope) {
	switch r.held.add(msg, env, time.Now()) {
	case duplicate:
		r.reply(wire.ErrorResponse(env.ID, wire.CodeInvalidRequest, errTextInFlight, nil))
	case full:
		reason := errTextQueueFull(r.held.len(), r.held.bytes)
		r.log.Warn("restart queue full; refused a message", "method", env.Method)
		if env.IsRequest() {
			r.reply(wire.ErrorResponse(env.ID, wire.CodeQueueFull, reason, nil))
		}
	}
}

// flushQueue dispatches the held messages in order. sw.mu is held. A
// message that finds the relay restarting again is held again, behind
// none of the others, so order is kept.
func (r *switchboard) flushQueue() {
	for _, m := range r.held.take() {
		if r.state == stateStarting || r.state == stateRestarting {
			r.held.put(m)
			continue
		}
		r.dispatchQueued(m)
	}
}

func (r *switchboard) dispatchQueued(m queued) {
	env := m.env
	switch {
	case r.sess.initID != nil && !bytes.Equal(env.ID, r.sess.initID):
		r.held.put(m) // until initialize is answered (Config.Handoff)
	case env.IsRequest():
		switch {
		case r.health.waitsForFirstBuild(r.state, env):
			r.held.put(m)
		case r.state == stateDown:
			r.answerDown(m.msg, env)
		case r.state == stateUp:
			r.forward(m.msg, env)
		}
	case env.IsNotification():
		r.clientNotification(m.msg, env)
	}
}

// expireQueue answers held requests that waited longer than QueueTimeout.
func (r *Relay) expireQueue() {
	t := time.NewTicker(min(r.cfg.Queue.Timeout/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		r.sw.mu.Lock()
		for _, m := range r.sw.held.expire(time.Now().Add(-r.cfg.Queue.Timeout)) {
			switch {
			case !m.env.IsRequest():
			case r.sw.health.building:
				r.sw.reply(wire.ResultResponse(m.env.ID, toolResult(errTextDown(msgBuilding(r.cfg.Tool)), true, nil, r.sw.sess.era == eraModern)))
			default:
				r.sw.reply(wire.ErrorResponse(m.env.ID, wire.CodeQueueFull, errTextQueueTimeout(r.cfg.Queue.Timeout), nil))
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
