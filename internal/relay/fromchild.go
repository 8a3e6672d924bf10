package relay

import (
	"strings"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Message handles a message of the child's; rel: the request that carried it.
func (c *conn) Message(msg, rel []byte) {
	s := c.s
	if t := s.r.cfg.Traffic; t != nil {
		t("server", false, c.p.gen, msg)
	}
	env, err := wire.Peek(msg)
	switch {
	case err != nil || env.IsArray || (env.Method == "" && env.Result == nil && !env.HasError):
		c.junk(msg, "not JSON-RPC", false)
		return
	case env.Ambiguous:
		c.junk(msg, "ambiguous (a member named twice, or in another case)", true)
		return
	}
	if env.IsResponse() {
		c.once.Do(func() {
			c.p.served.Store(true)
			close(c.answered)
		})
	} else {
		s.r.trace("server", &env, len(msg), nil)
	}
	var keep []recorded
	s.mu.Lock()
	s.out.BeginInline() // written by this goroutine once the lock is free: the client's pace is the child's
	if c == s.child {
		switch {
		case env.IsResponse():
			keep = c.response(msg, env)
		case env.IsRequest():
			id := s.ids.renumber(c.gen, env.ID)
			s.deliver(wire.Splice(msg, env.IDStart, env.IDEnd, id), c.relOf(env, rel))
		case env.IsNotification():
			c.notification(msg, env, rel)
		}
	}
	s.mu.Unlock()
	s.out.EndInline()
	s.r.rec.keep(keep)
}

// response passes the child's answer on and returns what the record keeps.
func (c *conn) response(msg []byte, env wire.Envelope) []recorded {
	s := c.s
	key := string(env.ID)
	if strings.HasPrefix(key, `"mcpflow:r`) && s.ids.answer(key, msg) {
		s.r.trace("server", &env, len(msg), nil)
		return nil
	}
	pd, ok := s.ids.lookup(key, c.gen)
	s.r.trace("server", &env, len(msg), pd)
	if !ok {
		s.r.log.Debug("dropped a server response to a request that is no longer in flight", "id", key)
		wire.Discard(msg)
		return nil
	}
	if pd.kind == kindListen && !env.HasError {
		if s.st.Listens()[string(pd.replyID(key))].Tools { // mcpflow keeps it open: it sends list_changed on it
			s.r.log.Debug("kept a subscriptions/listen open that the server ended", "id", key)
			return nil
		}
	}
	if pd.kind == kindInitialize && env.HasError && s.bridgeable() && !s.hs.initDecided {
		s.ids.forget(key) // a server of 2026-07-28 only
		s.handOff([][]byte{pd.msg}, nil)
		return nil
	}
	s.ids.forget(key)
	if pd.kind == kindToolsCall {
		s.r.stats.served.Add(1)
	} else if whole := wire.Expand(msg); len(whole) != len(msg) {
		msg = whole // the handshake and the lists are kept: whole
		env, _ = wire.Peek(msg)
	}
	var keep []recorded
	switch pd.kind {
	case kindInitialize, kindDiscover:
		msg = c.forceResult(msg, env, pd.kind == kindInitialize)
		if !env.HasError {
			keep = append(keep, recorded{pd.method, true, s.hs.initResult})
		}
	case kindToolsList:
		if s.view.noteTools(pd.firstPage, env.Result) {
			s.r.known.note(s.view.tools)
		}
		msg = s.r.ownTools.inject(msg, env)
	case kindToolsCall:
		msg = s.notices.attach(msg, env)
	}
	if _, ok := recordLists[pd.method]; ok {
		s.view.hear(pd.method)
		if !env.HasError {
			keep = append(keep, recorded{pd.method, pd.firstPage, env.Result})
		}
	}
	id := pd.replyID(key)
	if pd.clientID != nil {
		if e, err := wire.Peek(msg); err == nil {
			msg = wire.Splice(msg, e.IDStart, e.IDEnd, pd.clientID)
		}
	}
	s.reply(id, msg)
	return keep
}

// relOf is the client's id of the request a child's message belongs to:
// the one that carried it (rel), or its progress token or subscription id
// names, else the one call in flight; nil when none. s.mu is held.
func (c *conn) relOf(env wire.Envelope, rel []byte) []byte {
	s := c.s
	if rel != nil {
		if pd, ok := s.ids.lookup(string(rel), c.gen); ok {
			return pd.replyID(string(rel))
		}
	}
	if key := s.ids.byToken(jsonscan.Member(env.Params, "progressToken")); key != "" {
		return s.ids.pending[key].replyID(key)
	}
	if sub := subscriptionID(env.Params); sub != nil {
		if pd, ok := s.ids.pending[string(sub)]; ok && pd.kind == kindListen {
			return pd.replyID(string(sub))
		}
	}
	if key, pd := s.ids.only(c.gen); pd != nil {
		return pd.replyID(key)
	}
	return nil
}

// notification passes a child's notification to the client. s.mu is held.
func (c *conn) notification(msg []byte, env wire.Envelope, rel []byte) {
	s := c.s
	switch env.Method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		s.view.forgetKind(strings.TrimSuffix(strings.TrimPrefix(env.Method, "notifications/"), "/list_changed"))
	case "notifications/subscriptions/acknowledged":
		sub := subscriptionID(env.Params)
		pd := s.ids.pending[string(sub)]
		if pd != nil && pd.awaitingAck {
			pd.awaitingAck = false // the replay's: the client has its own
			return
		}
		if pd != nil && s.st.Listens()[string(pd.replyID(string(sub)))].Tools {
			msg = forceAck(msg, env)
		}
		if pd != nil && pd.clientID != nil {
			msg = withSubscriptionID(msg, pd.clientID)
		}
	case "notifications/cancelled": // one of the child's requests to the client
		id, ok := s.ids.cancelServerReq(c.gen, jsonscan.Member(env.Params, "requestId"))
		if !ok {
			return
		}
		if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok {
			msg = wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(id))
		}
	default:
		if sub := subscriptionID(env.Params); sub != nil {
			if pd := s.ids.pending[string(sub)]; pd != nil && pd.clientID != nil {
				msg = withSubscriptionID(msg, pd.clientID)
			}
		}
	}
	s.deliver(msg, c.relOf(env, rel))
}

// Junk drops a line the child wrote that is no JSON-RPC message.
func (c *conn) Junk(line []byte, badJSON bool) {
	what := "not JSON-RPC"
	if badJSON {
		what = "not valid JSON"
	}
	c.junk(line, what, badJSON)
}

// junk drops a line of the child's; answer: its request gets an error.
func (c *conn) junk(msg []byte, what string, answer bool) {
	s := c.s
	c.p.tail.Write([]byte("[stdout] " + wire.Abbreviate(msg, 2000) + "\n"))
	if id := wire.PartialID(msg); answer && id != nil {
		s.mu.Lock()
		c.answerError(string(id), texts.ErrServerBadJSON)
		s.mu.Unlock()
	}
	if s.r.stats.junkWarned.CompareAndSwap(false, true) {
		s.r.log.Warn("the server wrote a line to stdout that is "+what+"; it was not forwarded (stdout belongs to the protocol: log to stderr). Further such lines are logged at debug level", "line", wire.Abbreviate(msg, 200))
	} else {
		s.r.cfg.ServerLogger.Debug("stdout ("+what+"): "+wire.Abbreviate(msg, 500), "bytes", len(msg))
	}
}

// TooLarge drops an over-long message; the request it answers gets an error.
func (c *conn) TooLarge(tl *wire.TooLargeError) {
	s := c.s
	s.r.log.Error("server message too large; dropped", "bytes", tl.Size, "limit", tl.Max)
	id := tl.ID()
	if id == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.answerError(string(id), texts.ErrServerTooLarge(tl.Size, tl.Max))
}

// answerError answers the request key, if in flight on c, with an error.
func (c *conn) answerError(key, text string) {
	s := c.s
	if pd, ok := s.ids.lookup(key, c.gen); ok && pd.kind != kindListen && c == s.child {
		s.ids.forget(key)
		id := pd.replyID(key)
		s.reply(id, wire.ErrorResponse(id, wire.CodeInternalError, text, nil))
	}
}

// withSubscriptionID puts the client's listen id in a notification.
func withSubscriptionID(msg, id []byte) []byte {
	env, err := wire.Peek(msg)
	if vs, ve, ok := env.MetaSpan(mcp.MetaKeySubscriptionID); err == nil && ok {
		return wire.Splice(msg, vs, ve, id)
	}
	return msg
}
