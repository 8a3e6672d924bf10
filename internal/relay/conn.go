package relay

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpflow/mcpflow/internal/proc/tail"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/report/texts"
)

// conn is a session's connection to its child: a process of its own on
// its stdin and stdout (a stdio server), or an HTTP session on the HTTP
// server's process. done is closed once it ended (its link is done and,
// when the process is its own, the process is gone) and its end was
// handled (connEnded).
type conn struct {
	s        *Session
	p        *child // the process: the session's own, or the HTTP server's
	own      bool
	link     wire.Link
	gen      int         // the connection's own: what its session's requests were sent to
	stopping atomic.Bool // mcpflow ends it on purpose
	answered chan struct{}
	once     sync.Once
	done     chan struct{}

	// Guarded by the session's lock.
	speaks  wire.Era // the era the child was seen to speak
	settled bool     // the start that made it completed: it served
	failed  string   // the report its end is given (no handshake in time)
}

// stdoutGrace is how long a child whose link ended (it closed its
// stdout) may take to exit before mcpflow stops it: it can answer
// nothing more.
const stdoutGrace = 500 * time.Millisecond

// connect makes session s's connection to a new child: a process of its
// own (srv nil), or an HTTP session on srv.
func (s *Session) connect(srv *child) (*conn, error) {
	r := s.r
	c := &conn{s: s, gen: int(r.conns.Add(1)), answered: make(chan struct{}), done: make(chan struct{})}
	var sent func([]byte)
	if t := r.cfg.Traffic; t != nil {
		sent = func(msg []byte) { t("server", true, c.p.gen, msg) }
	}
	if srv != nil {
		c.p, c.link = srv, r.cfg.Child.HTTP.Link(srv.url, sent)
		c.link.Start(receiver{c})
		r.wg.Go(func() {
			<-c.link.Done()
			s.connEnded(c)
			close(c.done)
		})
		return c, nil
	}
	link := newStdioLink(r.cfg.MaxMessage, sent)
	gen := r.nextGen()
	p, err := start(r.spec(), gen, link.attach, r.childLine(c))
	if err != nil {
		link.closeAll()
		return nil, err
	}
	c.p, c.own, c.link = p, true, link
	link.Start(receiver{c})
	r.events.post(Event{Kind: Starting, Gen: gen, Pid: p.pid})
	r.log.Info("server started", "pid", p.pid, "gen", gen, "cmd", describeCommand(r.cfg.Child.Command, r.cfg.Child.Shell))
	r.wg.Go(func() {
		select {
		case <-p.done:
		case <-link.Done():
			// Its stdout ended while it runs: it can answer nothing more.
			if !waitFor(p.done, stdoutGrace) && !p.ending.Load() {
				why := link.Lost()
				p.lost.Store(&why)
				p.kill(r.cfg.Child.StopTimeout, r.ctx, link.Close)
			}
		}
		<-p.done
		link.Close()
		if !waitFor(link.Done(), 2*time.Second) {
			link.abandon() // a process outside the group holds its stdout
			waitFor(link.Done(), 2*time.Second)
		}
		s.connEnded(c)
		close(c.done)
	})
	return c, nil
}

// receiver is a conn's wire.LinkReceiver.
type receiver struct{ c *conn }

func (r receiver) Message(msg, rel []byte)         { r.c.s.fromChild(r.c, msg, rel) }
func (r receiver) TooLarge(tl *wire.TooLargeError) { r.c.s.childTooLarge(r.c, tl) }
func (r receiver) Junk(line []byte, badJSON bool) {
	what := "not JSON-RPC"
	if badJSON {
		what = "not valid JSON"
	}
	r.c.s.childJunk(r.c, line, what, badJSON)
}

// send sends one message to the child.
func (c *conn) send(msg []byte) { c.link.Send(msg) }

// inline is the outbox the session's client reader may write itself (a
// stdio child's stdin); nil for another link.
func (c *conn) inline() *wire.Outbox {
	if l, ok := c.link.(*stdioLink); ok {
		return l.in
	}
	return nil
}

func (c *conn) tail() *tail.Buffer { return c.p.tail }

func (c *conn) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop ends the connection on purpose (a restart, the session's end): a
// process of its own is stopped (its input closed first), an HTTP
// session's link closed. It returns once the connection ended; when ctx
// ends, what is left of a process's stop is cut short.
func (c *conn) stop(grace time.Duration, ctx context.Context) {
	c.stopping.Store(true)
	c.end(grace, ctx)
}

// end ends a connection that failed (its failed report says why).
func (c *conn) end(grace time.Duration, ctx context.Context) {
	if c.own {
		c.p.stop(grace, ctx, c.link.Close)
	} else {
		c.link.Close()
	}
	<-c.done
}

// markAnswered records that the child answered a request.
func (c *conn) markAnswered() {
	c.once.Do(func() {
		c.p.served.Store(true)
		close(c.answered)
	})
}

// hasAnswered reports whether the child ever answered a request.
func (c *conn) hasAnswered() bool {
	select {
	case <-c.answered:
		return true
	default:
		return false
	}
}

// stderrInfo is what is known of the child, which may still run: the end
// of its stderr.
func (c *conn) stderrInfo() texts.Exit {
	return texts.Exit{Stderr: strings.TrimSpace(c.p.tail.String())}
}

// exitInfo is what the agent is told of a child that is gone: its
// process's exit, or why its HTTP session ended.
func (c *conn) exitInfo() texts.Exit {
	if c.own || c.p.exited() {
		return c.p.exitInfo()
	}
	return texts.Exit{Status: c.link.Lost(), Uptime: c.p.ranFor(), Stderr: strings.TrimSpace(c.p.tail.String())}
}

// childLine copies one line of a process's log to the server's logger,
// and acts on relay.restart_marker.
func (r *Relay) childLine(c *conn) func(string) {
	return func(line string) {
		r.cfg.ServerLogger.Info(line)
		if r.cfg.Child.RestartMarker != "" && line == r.cfg.Child.RestartMarker && (c == nil || !c.stopping.Load()) {
			r.log.Info("the server asked for a restart (relay.restart_marker)")
			r.wg.Go(func() { r.recompileInBackground("restart marker") })
		}
	}
}

// connEnded is called once per conn, after it is fully gone. Every
// request still pending on it gets exactly one error. A child that ends
// before it answered its handshake, or before the start that made it
// completed, is a failed start: reported, not restarted. A crash while
// the last build failed is not restarted either (the files on disk came
// from that build). Other crashes follow relay.on_crash; an HTTP server's
// process that is gone is the relay's to restart (serverExited).
func (s *Session) connEnded(c *conn) {
	r := s.r
	stopped := c.stopping.Load()
	e := c.exitInfo()
	tool := r.cfg.Tools.Rebuild
	s.mu.Lock()
	// A child that ends while its calls drain is being replaced anyway:
	// its calls get the crash report, the session goes on holding.
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
		failedStart, report = true, texts.FailedStart(e, r.cfg.Child.Setting, tool)
	case serverGone:
		report = r.report()
	case r.lastBuildFailed():
		report = texts.CrashAfterFailedBuild(e, tool)
	default:
		report, backoff = r.crashed(e)
	}
	var handshake []queued
	for key, pd := range s.ids.takeGen(c.gen) {
		if current && (pd.kind == kindInitialize || pd.kind == kindDiscover) {
			// The session must survive a server that dies at once: mcpflow
			// answers the handshake itself, once it is down.
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
	quiet := len(handshake) == 0
	if current {
		s.child = nil
		s.hs.childDiscover = false
		s.down(report)
		for _, m := range handshake {
			s.answerDown(m.msg, m.env)
		}
	}
	s.mu.Unlock()
	if c.own {
		if stopped {
			r.events.post(Event{Kind: Stopped, Gen: c.p.gen, Pid: c.p.pid})
		} else {
			r.events.post(Event{Kind: Crashed, Gen: c.p.gen, Pid: c.p.pid, Report: report})
		}
	}
	if !current {
		return
	}
	r.log.Error("server crashed", "status", e.Status, "uptime", result.Dur(e.Uptime))
	switch {
	case failedStart:
		r.log.Error("it exited before answering its handshake: a failed start, not restarted until the next change or " + tool)
		r.failedStart(report)
	case serverGone:
	case backoff > 0:
		r.restartAfterCrash(s, backoff, quiet, e.Status)
	}
}
