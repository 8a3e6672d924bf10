package relay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// probeTimeout bounds the wait for a new child's answer to a ping.
const probeTimeout = 5 * time.Second

// reconnect is one session's move to a new child.
type reconnect struct {
	s    *Session
	ctx  context.Context
	c    *conn                 // the new child
	skip func(s *Session) bool // s.mu held: another move made this one moot
}

// run stops the old child once its calls drained, starts the new one (an
// HTTP session on srv, if not nil), replays the session into it, reads its
// lists, tells the client what changed and sends on what was held.
func (rc *reconnect) run(srv *child) (res *result.Restart, err error) {
	s, r := rc.s, rc.s.r
	t0 := time.Now()
	s.moving.Lock() // one move at a time: the next retires the child this one starts
	defer s.moving.Unlock()
	s.mu.Lock()
	if rc.skip != nil && rc.skip(s) {
		s.mu.Unlock()
		return nil, nil
	}
	old, closed, bridged := s.child, s.phase == phaseClosed, s.bridge != nil
	learn := old != nil && !old.exited() && s.ready() && s.view.unknown()
	if !closed && !bridged {
		s.phase = phaseHold
	}
	s.mu.Unlock()
	if closed {
		return nil, ErrClosed
	} else if bridged {
		return nil, nil // the bridge's own session with the relay has a child of its own
	}
	if learn { // what old lists, where unknown, for the diff and list_changed
		if views, tools, err := rc.lists(old); err == nil && views != nil {
			s.mu.Lock()
			s.view.learn(views)
			s.mu.Unlock()
			r.known.note(tools)
		}
	}
	res = &result.Restart{}
	defer func() { res.Err = err }()
	mark := time.Now()
	lap := func() time.Duration { d := time.Since(mark); mark = time.Now(); return d }
	if old != nil {
		old.retire()
	}
	res.Stop = lap()
	c, err := newConn(s, srv)
	if err != nil {
		report := texts.NoStart(err, r.cfg.Child.Setting)
		s.goDown(report)
		r.failedStart(report)
		return res, errors.New(report)
	}
	rc.c = c
	res.Gen, res.Pid, res.Start = c.p.gen, c.p.pid, lap()
	s.mu.Lock()
	if s.phase == phaseClosed {
		s.mu.Unlock()
		c.stop(shutdownStep, r.ctx)
		return res, ErrClosed
	}
	s.child, s.hs.childDiscover = c, false
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(rc.ctx, r.cfg.HandshakeTimeout)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()
	rc.ctx = ctx
	if res.Handshake, err = rc.replay(); errors.Is(err, errOtherEra) {
		return res, nil // the era bridge serves the session
	} else if err != nil {
		return res, rc.fail(err)
	}
	res.Replay = lap()
	views, tools, err := rc.lists(c)
	if err != nil {
		return res, rc.fail(err)
	}
	res.Tools, res.ToolsList = rc.diff(tools, views != nil), lap()
	probe, err := rc.goUp(views)
	if err == nil {
		err = rc.awaitAnswer(probe)
	}
	res.Duration = time.Since(t0)
	return res, err
}

// errOtherEra: the new child does not speak the client's era (bridged).
var errOtherEra = errors.New("the server does not speak the client's protocol era")

// replay brings the new child to where the client's session is: the
// legacy handshake, or the check that it speaks the 2026-07-28 era, then
// the rest. It returns how the handshake's answer changed.
func (rc *reconnect) replay() ([]string, error) {
	s, c := rc.s, rc.c
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
	params := withMeta(&s.st, nil)
	s.mu.Unlock()
	var changes []string
	switch {
	case era == wire.EraLegacy && init != nil:
		env, _ := wire.Peek(init)
		res, err := c.call(rc.ctx, "initialize", env.Params)
		if errors.Is(err, errRefused) && rc.handOff([][]byte{env.ID}) { // a server of 2026-07-28 only
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
		s.hs.selfInit, s.hs.caps, s.hs.initResult = false, bytes.Clone(jsonscan.Member(res, "capabilities")), forced
		c.speaks = wire.EraLegacy
		s.mu.Unlock()
		s.r.rec.keep([]recorded{{"initialize", true, forced}})
		changes = compareInit(prev, forced)
	case probe:
		res, err := c.call(rc.ctx, "server/discover", params)
		if (err != nil || !speaksModern(res)) && rc.handOff(nil) {
			return nil, errOtherEra
		}
		if err != nil {
			return nil, fmt.Errorf("asking the server's era: %w", err)
		}
		if forced, err := forcedResult(res, false, s.r.cfg.ServerSuffix); err == nil {
			s.r.rec.keep([]recorded{{"server/discover", true, forced}})
		}
		s.mu.Lock()
		c.speaks, s.hs.childDiscover, s.hs.selfDiscover = wire.EraModern, true, false
		s.mu.Unlock()
	case era == wire.EraLegacy:
		return nil, nil // its initialize is held: it reaches the child when sent on
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rc.resume()
	return changes, nil
}

// handOff gives the session to the era bridge, if it may go there.
func (rc *reconnect) handOff(answered [][]byte) bool {
	s := rc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.bridgeable() {
		return false
	}
	s.handOff(opening(&s.st), answered)
	return true
}

// resume replays the rest of the session but what is held. s.mu is held.
func (rc *reconnect) resume() {
	s, c := rc.s, rc.c
	for _, m := range s.st.Replay(func() []byte { return s.ids.newID('r') }) {
		env, err := wire.Peek(m)
		if err != nil || env.Method == "initialize" || s.held.has(env) {
			continue
		}
		if env.Method == "subscriptions/listen" {
			c.request(m, env, &pending{kind: kindListen, gen: c.gen, method: env.Method, awaitingAck: true})
		} else {
			c.link.Send(m) // a request under an id of mcpflow's own: its answer is dropped
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

// lists reads what c lists, when the session lets mcpflow ask (nil views
// when not): tools, and prompts and resources if declared (legacy) or
// maybe there (2026-07-28; an error: empty).
func (rc *reconnect) lists(c *conn) (map[string]listView, []toolInfo, error) {
	s := rc.s
	s.mu.Lock()
	ready, caps, modern := s.ready(), s.hs.caps, s.modern()
	s.mu.Unlock()
	if !ready {
		return nil, nil, nil
	}
	views := map[string]listView{}
	var keep []recorded
	var tools []toolInfo
	for _, kind := range listKindNames {
		if kind != "tools" && !declares(caps, kind) && !modern {
			views[kind] = viewOf(nil)
			continue
		}
		items, err := rc.fetchList(c, kind)
		if err != nil && (kind == "tools" || c.exited()) {
			return nil, nil, err
		}
		views[kind] = viewOf(items)
		keep = append(keep, recorded{kind + "/list", true, mustJSON(map[string]any{kind: append([]json.RawMessage{}, items...)})})
		if kind == "tools" {
			tools = toolInfos(items)
		}
	}
	s.r.rec.keep(keep)
	return views, tools, nil
}

// fetchList reads every page of one list of c's.
func (rc *reconnect) fetchList(c *conn, kind string) ([]json.RawMessage, error) {
	method := kind + "/list"
	var all []json.RawMessage
	cursor := ""
	for range 100 {
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		rc.s.mu.Lock()
		p := withMeta(&rc.s.st, params)
		rc.s.mu.Unlock()
		res, err := c.call(rc.ctx, method, p)
		if err != nil {
			return nil, err
		}
		var lr struct{ NextCursor string }
		if err := json.Unmarshal(res, &lr); err != nil {
			return nil, fmt.Errorf("%s result: %w", method, err)
		}
		var items []json.RawMessage
		if raw := jsonscan.Member(res, kind); raw != nil && string(raw) != "null" {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("%s result: %w", method, err)
			}
		}
		all = append(all, items...)
		if lr.NextCursor == "" {
			break
		}
		cursor = lr.NextCursor
	}
	return all, nil
}

// diff is the tool diff against what the client, or the server, listed.
func (rc *reconnect) diff(tools []toolInfo, read bool) result.ToolDiff {
	if !read {
		return result.ToolDiff{}
	}
	s := rc.s
	s.mu.Lock()
	base, known := s.view.tools, s.view.toolsKnown
	s.mu.Unlock()
	if !known {
		base, known = s.r.known.baseline()
	}
	s.r.known.note(tools)
	return diffTools(base, tools, known)
}

// goUp makes the new child the session's; probe: a ping to send, if any.
func (rc *reconnect) goUp(views map[string]listView) ([]byte, error) {
	s, c := rc.s, rc.c
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase == phaseClosed {
		return nil, ErrClosed
	}
	if s.child != c {
		return nil, errors.New(s.report)
	}
	s.phase, s.report = phaseUp, ""
	s.waiting.Store(false)
	c.settled = true
	if views != nil {
		s.announce(views)
	} else {
		s.view.forget()
	}
	s.flush()
	if !c.hasAnswered() && !s.ids.handshakePending(c.gen) {
		return withMeta(&s.st, nil), nil
	}
	return nil, nil
}

// awaitAnswer waits until the new child answered (probe: up after a while).
func (rc *reconnect) awaitAnswer(probe []byte) error {
	s, c := rc.s, rc.c
	if c.hasAnswered() {
		return nil
	}
	var probeTimer <-chan time.Time
	wait := min(probeTimeout, s.r.cfg.HandshakeTimeout/2)
	if probe != nil {
		s.r.wg.Go(func() { _, _ = c.call(rc.ctx, "ping", probe) })
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
		return errors.New(cmp.Or(s.report, texts.NotRunning))
	case <-rc.ctx.Done():
		return rc.fail(rc.ctx.Err())
	}
	return nil
}

// fail stops the new child, which came up broken, and says why.
func (rc *reconnect) fail(err error) error {
	s, c, r := rc.s, rc.c, rc.s.r
	report, end := texts.BadStart(err, r.cfg.Tools.Rebuild), c.end
	if errors.Is(err, context.DeadlineExceeded) {
		report, end = c.noHandshake(), c.endMute
	}
	s.mu.Lock()
	closed := s.phase == phaseClosed || r.ctx.Err() != nil // its client left meanwhile, or mcpflow stops
	if !closed && !c.exited() && c.failed == "" {
		c.failed = report
	}
	s.mu.Unlock()
	if closed {
		c.stop(shutdownStep, r.ctx)
		return ErrClosed
	}
	end(r.cfg.Child.StopTimeout, r.ctx)
	s.mu.Lock()
	report = cmp.Or(s.report, report) // conn.ended's, which says more of an exit
	s.mu.Unlock()
	r.log.Error("the new server did not come up; waiting for the next change or "+r.cfg.Tools.Rebuild, "err", firstLine(report))
	return errors.New(report)
}
