package relay

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// phase is where a session stands with its child.
type phase int

const (
	phaseHold phase = iota // its child is coming (the first build, a restart, its start): messages wait
	phaseUp                // its child serves
	phaseDown              // no child serves it: mcpflow answers, saying why (report)
	phaseClosed
)

// Session is one client's session with the server (a wire.Session): a
// child of its own, the client's State replayed into each new one, and
// what the client is served. Its lock is taken before the Relay's.
type Session struct {
	r       *Relay
	out     *wire.Outbox // to the client
	waiting atomic.Bool  // it waits for a child slot (MaxChildren)
	moving  sync.Mutex   // held by the reconnect under way

	mu         sync.Mutex
	st         wire.State // the client's session, as its messages set it up
	phase      phase
	report     string // why it is answered alone (phaseDown)
	child      *conn  // its child; nil when none
	ids        router
	held       holdQueue
	view       clientView
	hs         handshake
	notices    notices
	recompiles recompiles
	bridge     *bridged  // the era bridge's session, once handed over
	graceArmed bool      // its first request armed First's grace
	oneShot    bool      // mcpflow tools or call: waits for the first build
	late       bool      // the first build outlasted its wait: a stale record answers
	seen       time.Time // the client's last message
}

func newSession(r *Relay, c wire.Client) *Session {
	s := &Session{r: r, ids: newRouter(), view: newClientView(), held: holdQueue{maxLen: r.cfg.Queue.Size, maxBytes: r.cfg.Queue.Bytes}}
	s.recompiles = recompiles{s: s, running: map[string]context.CancelFunc{}}
	s.out = &wire.Outbox{
		Write: func(msg, rel []byte) error { c.Deliver(msg, rel); return nil },
		Hard:  r.cfg.Queue.Bytes + 2*r.cfg.MaxMessage,
		OnFail: func(err error) {
			r.log.Warn("a client took nothing of what waits for it; its session is closed", "err", err)
			s.Close()
		},
	}
	go s.out.Run(nil)
	return s
}

// Send hands the session one message from the client (see wire.Session).
func (s *Session) Send(msg []byte) {
	env, err := wire.Peek(msg)
	if err != nil || env.IsArray {
		s.out.Send(wire.ErrorResponse(nil, wire.CodeInvalidRequest, wire.TextNotAnRPC, nil), nil)
		return
	}
	s.r.trace("client", &env, len(msg), nil)
	s.mu.Lock()
	var in *wire.Outbox // a stdio child's stdin: written by this goroutine once the lock is free
	if c := s.child; c != nil && s.bridge == nil {
		if l, ok := c.link.(*stdioLink); ok {
			in = l.in
			in.BeginInline()
		}
	}
	br := s.bridge
	if br == nil {
		s.fromClient(msg, env)
	}
	s.mu.Unlock()
	if in != nil {
		in.EndInline()
	}
	if br != nil {
		br.Send(msg)
	}
}

// fromClient routes one client message. s.mu is held.
func (s *Session) fromClient(msg []byte, env wire.Envelope) {
	if s.phase == phaseClosed {
		return
	}
	s.seen = time.Now()
	if answer, refused := s.st.Note(msg, env); refused {
		if answer != nil {
			s.out.Send(answer, env.ID)
		}
		return
	}
	switch {
	case s.hs.initID != nil && !(env.IsRequest() && env.Method == "initialize"):
		s.hold(msg, env) // until its initialize is answered: the bridge may take the session
	case env.IsResponse():
		s.clientResponse(msg, env)
	case env.IsNotification():
		s.clientNotification(msg, env)
	default:
		s.clientRequest(msg, env)
	}
}

func (s *Session) clientRequest(msg []byte, env wire.Envelope) {
	if env.Method == "initialize" && s.bridgeable() && !s.hs.initDecided && s.hs.initID == nil {
		s.hs.initID = bytes.Clone(env.ID)
	}
	if tools := s.r.cfg.Tools; env.Method == "tools/call" && !tools.None {
		switch toolName(env.Params) {
		case tools.Recompile:
			s.recompiles.start(env)
			return
		case tools.Call:
			if tools.Call != "" {
				msg, env = rewriteCallTool(msg, env)
			}
		}
	}
	s.dispatch(msg, env)
}

// dispatch sends a request where the session's phase says. s.mu is held.
func (s *Session) dispatch(msg []byte, env wire.Envelope) {
	switch s.phase {
	case phaseHold:
		if s.r.now().state == stateStarting && s.firstAnswer(msg, env) {
			return
		}
		s.hold(msg, env)
	case phaseDown:
		if h := s.r.now(); env.Method == "tools/call" && h.buildingFirst() {
			s.hold(msg, env) // a call waits for the first build
			return
		}
		s.answerDown(msg, env)
	case phaseUp:
		if s.probeFirst(env) {
			s.hold(msg, env)
			return
		}
		s.forward(msg, env)
	}
}

func (s *Session) clientNotification(msg []byte, env wire.Envelope) {
	switch env.Method {
	case "notifications/initialized":
		if s.hs.selfInit && s.phase != phaseUp {
			return // mcpflow answered initialize: it is replayed to the child
		}
	case "notifications/cancelled":
		id := jsonscan.Member(env.Params, "requestId")
		if s.recompiles.cancel(id) {
			return
		}
		if s.held.remove(id) {
			return // canceled while held: it is never sent
		}
		key, pd, ok := s.ids.byClient(id)
		if !ok {
			s.r.log.Debug("dropped a cancel for a request that is not in flight", "id", string(id))
			return
		}
		s.ids.forget(key)
		if c := s.child; c != nil && c.gen == pd.gen && s.phase != phaseDown {
			if vs, ve, ok := jsonscan.MemberSpan(env.Params, "requestId"); ok && key != string(id) {
				msg = wire.Splice(msg, env.ParStart+vs, env.ParStart+ve, []byte(key))
			}
			c.link.Send(msg)
		}
		return
	}
	switch s.phase {
	case phaseHold:
		s.hold(msg, env)
	case phaseUp:
		s.child.link.Send(msg)
	}
}

// clientResponse passes the client's answer to the child that asked.
func (s *Session) clientResponse(msg []byte, env wire.Envelope) {
	sr, ok := s.ids.mapBack(string(env.ID))
	if !ok {
		s.r.log.Warn("dropped a client response to an unknown request id", "id", string(env.ID))
		return
	}
	c := s.child
	if c == nil || c.gen != sr.gen || c.exited() {
		s.r.log.Info("dropped a client answer meant for a server that has since been replaced", "id", string(env.ID))
		return
	}
	c.link.Send(wire.Splice(msg, env.IDStart, env.IDEnd, sr.origID))
}

// reply answers one of the client's requests, once. s.mu is held.
func (s *Session) reply(id, msg []byte) {
	if s.hs.initID != nil && bytes.Equal(id, s.hs.initID) {
		// Its initialize is answered: what it held back goes on.
		s.hs.initID, s.hs.initDecided = nil, true
		defer s.flush()
	}
	if !s.st.InFlight(id) {
		return // answered already, or canceled
	}
	s.st.Answered(id)
	s.out.Send(msg, id)
}

// deliver sends the client a message that is no answer. s.mu is held.
func (s *Session) deliver(msg, rel []byte) {
	if s.phase != phaseClosed {
		s.out.Send(msg, rel)
	}
}

func (s *Session) hold(msg []byte, env wire.Envelope) {
	switch {
	case !s.held.add(msg, env, time.Now()):
		s.r.log.Warn("queue full; refused a message", "method", env.Method)
		if env.IsRequest() {
			s.reply(env.ID, wire.ErrorResponse(env.ID, wire.CodeQueueFull, texts.ErrQueueFull(len(s.held.q), s.held.bytes), nil))
		}
	case len(s.held.q) == 1:
		time.AfterFunc(s.r.cfg.Queue.Timeout, s.expire)
	}
}

// expire answers the held requests that waited past Queue.Timeout.
func (s *Session) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.r.now()
	building := h.buildingFirst()
	if (s.oneShot || h.ended) && h.state == stateStarting {
		time.AfterFunc(s.r.cfg.Queue.Timeout/4, s.expire) // a one-shot waits for the first build (its own bound)
		return
	}
	for _, m := range s.held.expire(time.Now().Add(-s.r.cfg.Queue.Timeout)) {
		switch {
		case !m.env.IsRequest():
		case building:
			s.reply(m.env.ID, wire.ResultResponse(m.env.ID, toolResult(texts.ErrDown(texts.Building(s.r.cfg.Tools.Rebuild, s.r.cfg.Queue.Timeout)), true, nil, s.modern())))
		default:
			s.reply(m.env.ID, wire.ErrorResponse(m.env.ID, wire.CodeQueueFull, texts.ErrQueueTimeout(s.r.cfg.Queue.Timeout), nil))
		}
	}
	if len(s.held.q) > 0 {
		time.AfterFunc(s.r.cfg.Queue.Timeout/4, s.expire)
	}
}

// flush dispatches the held messages in order (or holds them). s.mu is held.
func (s *Session) flush() {
	for _, m := range s.held.take() {
		switch {
		case s.phase == phaseHold || s.phase == phaseClosed:
			s.held.put(m)
		case s.bridge != nil:
			s.bridge.Send(m.msg)
		case s.hs.initID != nil && !bytes.Equal(m.env.ID, s.hs.initID):
			s.held.put(m)
		case m.env.IsRequest():
			s.dispatch(m.msg, m.env)
		case m.env.IsNotification():
			s.clientNotification(m.msg, m.env)
		}
	}
}

func (s *Session) modern() bool { return s.st.Era == wire.EraModern }

// bridgeable reports whether the session could go to the era bridge.
func (s *Session) bridgeable() bool { return s.r.cfg.Bridge != nil && s.bridge == nil }

// respawn gives the session a fresh child in place of old without a
// build (initialize after server/discover), telling the agent if it runs
// a failed build's output.
func (s *Session) respawn(old *conn) {
	moot := func(s *Session) bool { return s.child != old }
	if _, err := (&reconnect{s: s, ctx: s.r.ctx, skip: moot}).run(nil); err != nil {
		if !errors.Is(err, ErrClosed) {
			s.r.log.Error("starting a fresh server", "err", firstLine(err.Error()))
		}
		return
	}
	if s.r.now().lastBuildFailed {
		s.mu.Lock()
		s.notices.set(noticeBuild, texts.NoticeFailedBuildRunning(s.r.cfg.Tools.Rebuild), s.r.cfg.Notices)
		s.mu.Unlock()
	}
}

func (s *Session) goDown(report string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down(report)
}

// down answers the session alone from now on, saying report. s.mu is held.
func (s *Session) down(report string) {
	if s.phase == phaseClosed {
		return
	}
	s.phase, s.report = phaseDown, report
	s.flush()
	s.announce(emptyViews())
}

// Close ends the session: its child is stopped (its requests in flight
// are the front's to answer), its held messages dropped; nothing is
// delivered after, but for one under way (at most closeWait).
func (s *Session) Close() {
	s.mu.Lock()
	if s.phase == phaseClosed {
		s.mu.Unlock()
		return
	}
	s.phase = phaseClosed
	c, br := s.child, s.bridge
	s.child = nil
	if c != nil { // the child's requests to the client get their answer
		for id, sr := range s.ids.serverReqs {
			if sr.gen == c.gen {
				c.link.Send(wire.ErrorResponse(sr.origID, wire.CodeInternalError, texts.ErrClientLeft, nil))
			}
			delete(s.ids.serverReqs, id)
		}
	}
	for _, cancel := range s.recompiles.running {
		cancel()
	}
	clear(s.recompiles.running)
	s.held.take()
	s.mu.Unlock()
	s.out.Drop() // what is under way: at most closeWait
	if !wire.WaitClosed(s.out.Done(), closeWait) {
		s.r.log.Warn("a client took no message for a while; its session was closed under a delivery", "after", closeWait)
	}
	if br != nil {
		br.Close()
	}
	if c != nil {
		c.stop(min(s.r.cfg.Child.StopTimeout, shutdownStep), s.r.ctx)
	}
	s.r.remove(s)
}

// closeWait bounds how long Close waits for a delivery under way.
const closeWait = 2 * time.Second

// answerDown answers for the server while none serves. s.mu is held.
func (s *Session) answerDown(msg []byte, env wire.Envelope) {
	r := s.r
	id := env.ID
	report := cmp.Or(s.report, r.now().describe())
	if env.Method == "tools/call" {
		r.stats.served.Add(1)
	}
	modern := s.modern()
	ok := func(result any) { s.reply(id, wire.ResultResponse(id, wire.Complete(mustJSON(result), modern))) }
	switch env.Method {
	case "initialize":
		result := map[string]any{
			"protocolVersion": cmp.Or(protocolVersion(env.Params), "2025-06-18"),
			"capabilities":    map[string]any{"tools": map[string]bool{"listChanged": true}},
			"serverInfo":      map[string]string{"name": "mcpflow", "version": r.cfg.Version},
			"instructions":    texts.Instructions(report),
		}
		s.hs.selfInit, s.hs.initResult, s.hs.initDecided = true, mustJSON(result), true
		s.view.beginEmpty()
		ok(result)
	case "server/discover":
		// Answered, so that a 2026-07-28 client stays in its era (bridged).
		s.hs.selfDiscover = true
		if res, found := r.rec.current().answer(env, nil); found {
			s.reply(id, wire.ResultResponse(id, res))
			return
		}
		ok(map[string]any{
			"resultType":        "complete",
			"_meta":             map[string]any{mcp.MetaKeyServerInfo: map[string]string{"name": "mcpflow", "version": r.cfg.Version}},
			"supportedVersions": mcp.SupportedProtocolVersions(),
			"capabilities":      map[string]any{"tools": map[string]bool{"listChanged": true}},
			"instructions":      texts.Instructions(report),
		})
	case "tools/list":
		s.view.beginEmpty()
		s.reply(id, wire.ResultResponse(id, wire.Complete([]byte(`{"tools":[`+string(r.ownTools)+`],"_meta":{`+string(mustJSON(wire.DownMeta))+`:`+string(mustJSON(report))+`}}`), modern)))
	case "prompts/list", "resources/list", "resources/templates/list":
		ok(map[string]any{recordLists[env.Method]: []any{}})
	case "tools/call":
		s.notices.clear()
		s.reply(id, wire.ResultResponse(id, toolResult(texts.ErrDown(report), true, nil, modern)))
	case "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		ok(map[string]any{}) // in its State: replayed to the next child
	case "subscriptions/listen":
		// Taken: replayed to the next child (its acknowledgement dropped).
		s.deliver(selfAck(id, s.st.Listens()[string(id)].Tools), id)
	default:
		s.reply(id, wire.ErrorResponse(id, wire.CodeServerDown, texts.ErrDown(report), nil))
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

// plainID reports whether any peer echoes the request id byte for byte:
// printable ASCII that no encoder escapes (Go escapes <, > and &), not in
// mcpflow's namespace, or an integer that a float64 holds exactly.
func plainID(id []byte) bool {
	if id[0] == '"' {
		if strings.HasPrefix(string(id), `"mcpflow:r`) || strings.HasPrefix(string(id), `"mcpflow:s`) {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && strconv.FormatInt(n, 10) == string(id) && n > -1e15 && n < 1e15
}
