package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// port is a session's part on one server: its session with the server
// (Backend.Open, of which it is the wire.Client), opened at first use with
// no lock held; the mux's handshake and requests on it; the reading of its
// lists into the catalog. Its session's lock guards its fields.
type port struct {
	s       *session
	srv     *server
	once    sync.Once
	sess    wire.Session           // once opened
	opened  bool                   // given the client's handshake (legacy), or the mux's listen (2026-07-28)
	ready   chan struct{}          // closed once the server answered that handshake
	waits   map[string]chan []byte // the mux's own requests in flight, by id
	instr   string                 // the server's instructions, from its handshake
	fresh   bool                   // its lists in the catalog are current
	asked   int                    // times they were marked stale: a read under way that sees it change reads again
	reading chan struct{}          // closed when the lists being read are in; nil when none is
}

// The bounds of the waits on a server: its answer to the mux's handshake;
// its lists, past its start, for a */list (listWait) and for one reading
// (readTimeout: a server still starting answers once it is up).
const (
	handshakeWait = 30 * time.Second
	listWait      = 5 * time.Second
	readTimeout   = 10 * time.Minute
)

// open is the port's session with its server, opened at the first call.
func (p *port) open() wire.Session {
	p.once.Do(func() { p.sess = p.srv.b.Open(p) })
	return p.sess
}

// close closes the port's session; one never opened never will be.
func (p *port) close() {
	p.once.Do(func() { p.sess = closedSession{} })
	p.sess.Close()
}

// closedSession is the session of a port closed before it opened.
type closedSession struct{}

func (closedSession) Send([]byte) {}
func (closedSession) Close()      {}

// Deliver handles one message the server sends the session: an answer to
// a request of the mux's own or of the client's; a request to the client,
// under an id of the mux's; a list_changed, on which the lists are read
// again; anything else goes to the client as it is.
func (p *port) Deliver(msg, rel []byte) {
	s := p.s
	if wire.IsResponse(msg) {
		s.mu.Lock()
		ch := p.waits[string(rel)]
		delete(p.waits, string(rel))
		delete(s.calls, string(rel))
		s.mu.Unlock()
		if ch != nil {
			ch <- msg
		} else {
			s.answer(msg, rel) // if the client's request is still in flight
		}
		return
	}
	env, err := wire.Peek(msg)
	if err != nil {
		return
	}
	switch {
	case env.IsRequest():
		id := s.m.newID()
		s.mu.Lock()
		s.reqs[string(id)] = serverReq{server: p.srv.spec.Name, id: bytes.Clone(env.ID)}
		s.mu.Unlock()
		s.deliver(wire.Splice(msg, env.IDStart, env.IDEnd, id), rel)
	case strings.HasSuffix(env.Method, "/list_changed") && env.Method != "notifications/roots/list_changed":
		p.stale()
	case bytes.HasPrefix(jsonscan.Member(jsonscan.Member(env.Params, "_meta"), mcp.MetaKeySubscriptionID), []byte(ownPrefix)):
		// On a listen of the mux's own (its acknowledgement).
	default:
		s.deliver(msg, rel)
	}
}

// greet opens the port for the client's session, s.mu held, and returns
// what to send: a legacy client's handshake (its initialize under an id of
// the mux's, whose answer is awaited for the server's instructions;
// initialized; the log level), or for a 2026-07-28 client a listen of the
// mux's own, on which the server says its lists changed.
func (p *port) greet() [][]byte {
	s := p.s
	p.opened = true
	if s.st.Era == wire.EraModern {
		close(p.ready)
		params := `{` + everyList
		if s.st.Meta != nil {
			params += `,"_meta":` + string(s.st.Meta)
		}
		return [][]byte{wire.Request(s.m.newID(), "subscriptions/listen", []byte(params+`}`))}
	}
	env, err := wire.Peek(s.st.Init)
	if err != nil {
		close(p.ready)
		return nil
	}
	id := s.m.newID()
	ch := make(chan []byte, 1)
	p.waits[string(id)] = ch
	s.m.wg.Go(func() {
		defer close(p.ready)
		select {
		case ans := <-ch:
			s.mu.Lock()
			p.instr = stringMember(jsonscan.Member(ans, "result"), "instructions")
			s.mu.Unlock()
		case <-s.ctx.Done():
		case <-time.After(handshakeWait):
		}
	})
	out := [][]byte{wire.Request(id, "initialize", env.Params)}
	if s.st.Initialized {
		out = append(out, wire.Request(nil, "notifications/initialized", nil))
	}
	if s.st.Level != nil {
		out = append(out, wire.Request(s.m.newID(), "logging/setLevel", s.st.Level))
	}
	return out
}

// ask sends a request of the mux's own on the port and waits for its
// answer.
func (p *port) ask(ctx context.Context, method string, params []byte) ([]byte, error) {
	s := p.s
	id := s.m.newID()
	ch := make(chan []byte, 1)
	s.mu.Lock()
	p.waits[string(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(p.waits, string(id))
		s.mu.Unlock()
	}()
	p.open().Send(wire.Request(id, method, params))
	select {
	case msg := <-ch:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// askAll sends a request of the mux's own on each port at once and
// returns their answers, in order (nil: none by ctx's end or deadline).
func askAll(ctx context.Context, deadline <-chan struct{}, ports []*port, method string, params []byte) [][]byte {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-deadline:
			cancel()
		case <-ctx.Done():
		}
	}()
	out := make([][]byte, len(ports))
	var wg sync.WaitGroup
	for i, p := range ports {
		wg.Go(func() { out[i], _ = p.ask(ctx, method, params) })
	}
	wg.Wait()
	return out
}

// stale marks the port's lists as no longer current (the server said they
// changed, or it came up) and reads them again (read).
func (p *port) stale() chan struct{} {
	p.s.mu.Lock()
	p.fresh = false
	p.asked++
	p.s.mu.Unlock()
	return p.read()
}

// relist reads the lists again and waits until they are in, at most
// listWait: after an add_server or a reload, whose answer tells the tools.
func (p *port) relist(ctx context.Context) {
	p.stale()
	p.s.await(ctx, []string{p.srv.spec.Name}, nil, true)
}

// read starts reading the server's lists into the catalog, once the port
// is opened, unless they are current; it returns a channel closed once
// they are in (nil: nothing to read).
func (p *port) read() chan struct{} {
	s, name := p.s, p.srv.spec.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if !p.opened || p.reading != nil || p.fresh {
		return p.reading
	}
	done := make(chan struct{})
	p.reading, p.fresh = done, true
	s.m.wg.Go(func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(s.ctx, readTimeout)
		defer cancel()
		select {
		case <-p.ready:
		case <-ctx.Done():
		}
		for ctx.Err() == nil {
			s.mu.Lock()
			asked := p.asked
			s.mu.Unlock()
			l, err := p.lists(ctx)
			s.mu.Lock()
			again := p.asked != asked // marked stale while it was read
			changed := err == nil && s.ports[name] == p && s.cat.publish(name, l)
			if !again {
				p.reading, p.fresh = nil, err == nil
			}
			s.mu.Unlock()
			if err != nil {
				s.m.log.Debug("reading a server's lists", "server", name, "err", err)
			}
			if changed {
				s.listsChanged()
			}
			if !again {
				return
			}
		}
		s.mu.Lock()
		p.reading, p.fresh = nil, false
		s.mu.Unlock()
	})
	return done
}

// lists reads every page of each of the server's lists.
func (p *port) lists(ctx context.Context) (Lists, error) {
	var l Lists
	for _, k := range []struct {
		method, field string
		into          *[]json.RawMessage
	}{{"tools/list", "tools", &l.Tools}, {"prompts/list", "prompts", &l.Prompts}, {"resources/list", "resources", &l.Resources}, {"resources/templates/list", "resourceTemplates", &l.Templates}} {
		cursor := ""
		for page := 0; page < 100; page++ {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			p.s.mu.Lock()
			if p.s.st.Era == wire.EraModern && p.s.st.Meta != nil {
				params["_meta"] = json.RawMessage(p.s.st.Meta)
			}
			p.s.mu.Unlock()
			b, _ := json.Marshal(params)
			msg, err := p.ask(ctx, k.method, b)
			if err != nil {
				return Lists{}, err
			}
			res := jsonscan.Member(msg, "result")
			if res == nil {
				if k.method == "tools/list" {
					return Lists{}, fmt.Errorf("tools/list: %s", jsonscan.Member(msg, "error"))
				}
				break // a server without that list
			}
			var items []json.RawMessage
			_ = json.Unmarshal(jsonscan.Member(res, k.field), &items)
			*k.into = append(*k.into, items...)
			if cursor = stringMember(res, "nextCursor"); cursor == "" {
				break
			}
		}
	}
	return l, nil
}
