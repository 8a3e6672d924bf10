package mux

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/relay"
	"github.com/mcpflow/mcpflow/internal/report/texts"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startDeadline is closed when the session's requests stop waiting for
// the servers still starting: Config.StartWait (else as long as the
// client waits, by its name) after the session's first request that waits
// (one deadline for the handshake and the lists read with it), or, when
// the client's input ended by then, InputWait after it.
func (s *session) startDeadline(env wire.Envelope) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startBy != nil {
		return s.startBy
	}
	wait := s.m.cfg.StartWait
	if wait <= 0 {
		wait = relay.ClientWait(cmp.Or(env.ClientName(), s.st.Client.Name))
	}
	ch := make(chan struct{})
	s.startBy = ch
	start := time.Now()
	s.m.wg.Go(func() {
		defer close(ch)
		if wire.WaitClosed(s.ctx.Done(), wait) {
			return
		}
		select {
		case <-s.m.ended:
			wire.WaitClosed(s.ctx.Done(), s.m.cfg.InputWait-time.Since(start))
		default:
		}
	})
	return ch
}

// await opens the session's ports on the servers named and waits, at most
// until deadline (nil: listWait), for each server's first start to end
// (but for one whose record answers at once), for its answer to the
// client's handshake, and, with lists, for its lists to be read. It
// returns the ports opened, sorted by server.
func (s *session) await(ctx context.Context, names []string, deadline <-chan struct{}, lists bool) []*port {
	if deadline == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, listWait)
		defer cancel()
	}
	wait := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-deadline:
		case <-ctx.Done():
		}
		return false
	}
	var ports []*port
	for _, n := range names {
		srv := s.m.server(n)
		if srv == nil {
			continue
		}
		if !wait(srv.made) {
			return ports
		}
		if p := s.port(n); p != nil {
			ports = append(ports, p)
		}
	}
	var waits []chan struct{}
	for _, p := range ports {
		// A relay with the record of its last good start answers at once.
		if r, ok := p.srv.b.(interface{ HasRecord() bool }); !ok || !r.HasRecord() {
			waits = append(waits, p.srv.up)
		}
		s.mu.Lock()
		opened := p.opened
		s.mu.Unlock()
		if opened {
			waits = append(waits, p.ready)
		}
		if lists {
			if ch := p.read(); ch != nil {
				waits = append(waits, ch)
			}
		}
	}
	for _, ch := range waits {
		if !wait(ch) {
			break
		}
	}
	return ports
}

// handshake answers a legacy client's initialize, or a 2026-07-28
// client's server/discover (see Eras in the package doc: each server is
// asked through the client's own session with it, by the deadline), with
// the mux's capabilities and the instructions of the servers that
// answered by then.
func (s *session) handshake(ctx context.Context, env wire.Envelope) {
	deadline := s.startDeadline(env)
	ports := s.await(ctx, s.m.names(), deadline, false)
	res := map[string]any{"capabilities": json.RawMessage(capabilities)}
	// mcpflow and its version, each followed by Config.ServerSuffix
	info := map[string]string{"name": "mcpflow" + s.m.cfg.ServerSuffix, "version": s.m.cfg.Version + s.m.cfg.ServerSuffix}
	if env.Method == "initialize" {
		res["protocolVersion"] = legacyVersion(stringMember(env.Params, "protocolVersion"))
		res["serverInfo"] = info
	} else {
		for i, ans := range askAll(ctx, deadline, ports, "server/discover", env.Params) {
			var d struct {
				SupportedVersions []string `json:"supportedVersions"`
				Instructions      string   `json:"instructions"`
			}
			if r := jsonscan.Member(ans, "result"); r == nil || json.Unmarshal(r, &d) != nil || !slices.ContainsFunc(d.SupportedVersions, wire.IsModern) {
				ports = nil
				break
			}
			s.mu.Lock()
			ports[i].instr = d.Instructions
			s.mu.Unlock()
		}
		if len(ports) == 0 {
			s.fail(env.ID, wire.CodeMethodNotFound, "Method not found: a server behind mcpflow speaks only the legacy protocol; use initialize")
			return
		}
		res["supportedVersions"] = mcp.SupportedProtocolVersions()
		res["_meta"] = map[string]any{mcp.MetaKeyServerInfo: info}
	}
	var in strings.Builder
	in.WriteString(texts.MuxInstructions(s.m.sep))
	s.mu.Lock()
	for _, p := range ports {
		if text := strings.TrimSpace(p.instr); text != "" {
			fmt.Fprintf(&in, "\n\n## %s\n%s", p.srv.spec.Name, text)
		}
	}
	s.mu.Unlock()
	res["instructions"] = in.String()
	b, _ := json.Marshal(res)
	s.reply(env.ID, b)
}

// capabilities are the mux's: every list, changes announced, resource
// subscriptions, logging and completion routed to the servers.
const capabilities = `{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"logging":{},"completions":{}}`

// everyList is a listen's notifications member: every list_changed.
const everyList = `"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`

// legacyVersion is the protocol version the mux answers a legacy
// initialize asking for asked with: asked when supported, else the newest
// of the legacy era.
func legacyVersion(asked string) string {
	legacy := slices.DeleteFunc(slices.Clone(mcp.SupportedProtocolVersions()), wire.IsModern)
	if slices.Contains(legacy, asked) {
		return asked
	}
	return slices.Max(legacy)
}

// answerList answers a */list from the session's catalog, once the lists
// of every server are read (at most until the deadline: one that answers
// later is published then, and the client told); the mux lists
// everything on one page.
func (s *session) answerList(ctx context.Context, env wire.Envelope) {
	names := s.m.names()
	s.await(ctx, names, s.startDeadline(env), true)
	field := map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}[env.Method]
	var own [][]byte
	if field == "tools" {
		own = s.m.tools.list()
	}
	s.mu.Lock()
	res := s.cat.list(field, names, own)
	s.mu.Unlock()
	s.reply(env.ID, res)
}

// listen answers a 2026-07-28 client's subscriptions/listen: the mux
// sends its list_changed there (the listen is in the session's State).
func (s *session) listen(env wire.Envelope) {
	ack := `{"_meta":{"` + mcp.MetaKeySubscriptionID + `":` + string(env.ID) + `},` + everyList + `}`
	s.deliver(wire.Request(nil, "notifications/subscriptions/acknowledged", []byte(ack)), env.ID)
	for _, n := range s.m.names() {
		if p := s.port(n); p != nil {
			p.read()
		}
	}
}
