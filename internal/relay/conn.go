package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// conn is a session's connection to its child (a process of its own, or
// an HTTP session), its link's receiver; done: its end was handled.
type conn struct {
	s        *Session
	p        *child // the process: the session's own, or the HTTP server's
	own      bool
	link     wire.Link
	gen      int           // the connection's own: what its session's requests were sent to
	stopping atomic.Bool   // mcpflow ends it on purpose
	answered chan struct{} // closed at its first answer (Message), once
	once     sync.Once
	done     chan struct{}

	// Guarded by the session's lock.
	speaks  wire.Era // the era the child was seen to speak
	settled bool     // the start that made it completed: it served
	failed  string   // the report its end is given (no handshake in time)
}

// stdoutGrace is how long a child that closed its stdout may take to exit.
const stdoutGrace = 500 * time.Millisecond

// newConn connects s to a new child: its own process, or a session on srv.
func newConn(s *Session, srv *child) (*conn, error) {
	r := s.r
	c := &conn{s: s, gen: int(r.conns.Add(1)), answered: make(chan struct{}), done: make(chan struct{})}
	var sent func([]byte)
	if t := r.cfg.Traffic; t != nil {
		sent = func(msg []byte) { t("server", true, c.p.gen, msg) }
	}
	if srv != nil {
		c.p, c.link = srv, r.cfg.Child.HTTP.Link(srv.url, sent)
		c.link.Start(c)
		r.wg.Go(func() {
			<-c.link.Done()
			c.ended()
		})
		return c, nil
	}
	// A child that computes is not stalled: only what piles up is bounded.
	link := &stdioLink{maxMsg: r.cfg.MaxMessage, in: &wire.Outbox{Sent: sent, Stall: -1}, done: make(chan struct{})}
	p, err := r.start(link.attach, r.childLine(c))
	if err != nil {
		link.closeAll()
		return nil, err
	}
	c.p, c.own, c.link = p, true, link
	link.Start(c)
	r.log.Info("server started", "pid", p.pid, "gen", p.gen, "cmd", r.cfg.Child.describe())
	r.wg.Go(func() {
		select {
		case <-p.done:
		case <-link.Done(): // it can answer nothing more
			if !wire.WaitClosed(p.done, stdoutGrace) && !p.ending.Load() {
				why := link.Lost()
				p.lost.Store(&why)
				p.kill(r.cfg.Child.StopTimeout, r.ctx, closerFunc(link.Close))
			}
		}
		<-p.done
		link.Close()
		if !wire.WaitClosed(link.Done(), 2*time.Second) {
			link.outR.Close() // a process outside the group (a daemon) holds its stdout: its read end goes
			wire.WaitClosed(link.Done(), 2*time.Second)
		}
		c.ended()
	})
	return c, nil
}

func (c *conn) exited() bool { return closed(c.done) }

// stop ends the connection on purpose and returns once it ended.
func (c *conn) stop(grace time.Duration, ctx context.Context) {
	c.stopping.Store(true)
	c.end(grace, ctx)
}

// end ends a connection that failed (its failed report says why).
func (c *conn) end(grace time.Duration, ctx context.Context) {
	if c.own {
		c.p.stop(grace, ctx, closerFunc(c.link.Close))
	} else {
		c.link.Close()
	}
	<-c.done
}

// endMute ends a child that did not answer its handshake: the end of its
// input means nothing to it, so it gets SIGTERM at once.
func (c *conn) endMute(grace time.Duration, ctx context.Context) {
	if c.own {
		c.p.stop(grace, ctx, nil)
	}
	c.end(grace, ctx)
}

func (c *conn) hasAnswered() bool { return closed(c.answered) }

// noHandshake is the report of a child that did not answer its handshake.
func (c *conn) noHandshake() string {
	cfg := &c.s.r.cfg
	stderr := texts.Exit{Stderr: strings.TrimSpace(c.p.tail.String())}
	return texts.NoHandshake(cfg.Child.describe(), cfg.Child.Setting, cfg.HandshakeTimeout, stderr, cfg.Tools.Rebuild)
}

func (c *conn) exitInfo() texts.Exit {
	if c.own || c.p.exited() {
		return c.p.exitInfo()
	}
	return texts.Exit{Status: c.link.Lost(), Uptime: c.p.ranFor(), Stderr: strings.TrimSpace(c.p.tail.String())}
}

// call sends the child a request of mcpflow's own and waits for its result.
func (c *conn) call(ctx context.Context, method string, params []byte) ([]byte, error) {
	s := c.s
	s.mu.Lock()
	id, ch := s.ids.newID('r'), make(chan []byte, 1)
	s.ids.waiters[string(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.ids.waiters, string(id))
		s.mu.Unlock()
	}()
	c.link.Send(wire.Request(id, method, params))
	select {
	case msg := <-ch:
		env, err := wire.Peek(msg)
		if err != nil {
			return nil, err
		}
		if env.HasError {
			var e jsonrpc.Error
			_ = json.Unmarshal(env.Error, &e)
			return nil, fmt.Errorf("%s: %w %d: %s", method, errRefused, e.Code, e.Message)
		}
		return env.Result, nil
	case <-c.done:
		return nil, fmt.Errorf("it exited (%s) before answering %s", c.exitInfo().Status, method)
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

// errRefused is a child's error answer to a request of mcpflow's own.
var errRefused = errors.New("server answered error")

// request sends the child a client request, tracked as pd under the id it
// returns. s.mu is held.
func (c *conn) request(msg []byte, env wire.Envelope, pd *pending) string {
	ids := &c.s.ids
	key := string(env.ID)
	if !plainID(env.ID) {
		id := ids.newID('r')
		pd.clientID = bytes.Clone(env.ID)
		msg = wire.Splice(msg, env.IDStart, env.IDEnd, id)
		key = string(id)
		if e, err := wire.Peek(msg); err == nil {
			env = e
		}
	}
	if tok := jsonscan.Member(jsonscan.Member(env.Params, "_meta"), "progressToken"); tok != nil && ids.byToken(tok) == "" {
		pd.token = string(tok)
	}
	ids.pending[key] = pd
	c.link.Send(msg)
	return key
}

// boundHandshake stops a child that does not answer handshake key in time.
func (c *conn) boundHandshake(key string) {
	s, r := c.s, c.s.r
	pd := s.ids.pending[key]
	time.AfterFunc(r.cfg.HandshakeTimeout, func() {
		s.mu.Lock()
		stale := s.ids.pending[key] != pd || s.child != c || c.exited() || c.failed != ""
		if !stale {
			c.failed = c.noHandshake()
		}
		s.mu.Unlock()
		if !stale {
			r.log.Error("the server did not answer its handshake in time; stopping it", "after", result.Dur(r.cfg.HandshakeTimeout))
			c.endMute(r.cfg.Child.StopTimeout, context.Background())
		}
	})
}

// drain lets the calls on c, a child being replaced, finish (Config.Drain).
func (c *conn) drain() {
	s, r := c.s, c.s.r
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

// retire stops c, a child being replaced, once its calls drained.
func (c *conn) retire() {
	c.drain()
	c.stop(c.s.r.cfg.Child.StopTimeout, c.s.r.ctx)
}

// ended handles the end of c, and closes done: every request pending on
// it gets one error. A child that ends before its start completed is a
// failed start, not restarted; others follow health.crashed (an HTTP
// server's process, serverExited).
func (c *conn) ended() {
	defer close(c.done)
	s, r := c.s, c.s.r
	stopped := c.stopping.Load()
	e := c.exitInfo()
	s.mu.Lock()
	// One that ends while its calls drain is being replaced anyway.
	current := !stopped && s.child == c && s.phase != phaseClosed && s.ids.drain.gen != c.gen
	serverGone := !c.own && c.p.exited()
	failedStart := false
	var report string
	var backoff time.Duration
	switch {
	case stopped:
	case !current:
		report = texts.CrashRestarting(e)
	case c.failed != "":
		failedStart, report = true, c.failed
	case !c.hasAnswered() || !c.settled:
		failedStart, report = true, texts.FailedStart(e, r.cfg.Child.Setting, r.cfg.Tools.Rebuild)
	case serverGone:
		report = r.now().describe()
	default:
		r.mu.Lock()
		report, backoff = r.health.crashed(e, r.cfg.Tools.Rebuild, r.log)
		r.mu.Unlock()
	}
	var handshake []queued
	for key, pd := range s.ids.takeGen(c.gen) {
		if current && (pd.kind == kindInitialize || pd.kind == kindDiscover) {
			// mcpflow answers the handshake itself, once the session is down.
			if env, err := wire.Peek(pd.msg); err == nil {
				handshake = append(handshake, queued{msg: pd.msg, env: env})
				continue
			}
		}
		id := pd.replyID(key)
		if stopped {
			s.reply(id, wire.ErrorResponse(id, wire.CodeServerRestarted, texts.ErrRestarted, nil))
		} else {
			s.reply(id, wire.ErrorResponse(id, wire.CodeServerDown, texts.ErrCrashed(report), map[string]any{"exit": e.Status, "stderr": e.Stderr}))
		}
	}
	if current {
		s.child = nil
		s.hs.childDiscover = false
		s.down(report)
		for _, m := range handshake {
			s.answerDown(m.msg, m.env)
		}
	}
	s.mu.Unlock()
	if c.own && !stopped {
		r.events.post(Event{Kind: Crashed, Gen: c.p.gen, Pid: c.p.pid, Report: report})
	}
	if !current {
		return
	}
	r.log.Error("server crashed", "status", e.Status, "uptime", result.Dur(e.Uptime))
	switch {
	case failedStart:
		r.log.Error("it exited before answering its handshake: a failed start, not restarted until the next change or " + r.cfg.Tools.Rebuild)
		r.failedStart(report)
	case backoff > 0:
		r.restartAfterCrash(s, backoff, len(handshake) == 0, e.Status)
	}
}
