package relay

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
)

// The lists a client can be told have changed. The relay tells it
// whenever the list it would get from */list changes, and only then: when
// a new child serves different contents (compared whole, canonical JSON),
// when no child serves (the lists are empty but for the relay's own
// tools) and when one serves again.
var listKindNames = []string{"tools", "prompts", "resources"}

// listView is what a */list answer holds, as a digest; unknown until the
// relay or the client listed it.
type listView struct {
	known bool
	sum   [sha256.Size]byte
}

func viewOf(items []json.RawMessage) listView {
	canon := make([]json.RawMessage, len(items))
	for i, it := range items {
		canon[i] = canonicalJSON(it)
	}
	return listView{known: true, sum: sha256.Sum256(mustJSON(canon))}
}

// emptyViews are the lists while no child serves.
func emptyViews() map[string]listView {
	v := map[string]listView{}
	for _, k := range listKindNames {
		v[k] = viewOf(nil)
	}
	return v
}

// clientView is what the client is served: per list kind, a digest of
// what */list returns now, and the tool list the client last fetched
// whole. It decides which lists changed for the client; announcing it is
// the switchboard's. It has no lock: its owner's lock guards it.
type clientView struct {
	served map[string]listView
	// heard holds the kinds of list the client has been given an answer
	// for, by a child, the record or mcpflow alone: of a list it never
	// got, nothing changed for it.
	heard map[string]bool
	// tools is the tool list the client last fetched whole (the child's
	// tools, without the relay's); toolsKnown once it did.
	tools      []toolInfo
	toolsKnown bool
	fetching   []json.RawMessage // the pages of a tools/list in progress
}

func newClientView() clientView {
	return clientView{served: map[string]listView{}, heard: map[string]bool{}}
}

// hear records that the client got an answer to method (a */list).
func (v *clientView) hear(method string) {
	kind, _, _ := strings.Cut(method, "/")
	v.heard[kind] = true
}

// unknown reports whether the relay does not know what some list holds.
func (v *clientView) unknown() bool {
	for _, k := range listKindNames {
		if !v.served[k].known {
			return true
		}
	}
	return false
}

// learn records lists read from the serving child where they were
// unknown.
func (v *clientView) learn(views map[string]listView) {
	for k, lv := range views {
		if !v.served[k].known {
			v.served[k] = lv
		}
	}
}

// forget marks every list unknown (a new child whose lists the relay did
// not read).
func (v *clientView) forget() { clear(v.served) }

// forgetKind marks one list unknown: the child changed it itself.
func (v *clientView) forgetKind(kind string) { delete(v.served, kind) }

// update records views as what the client is served now and returns the
// kinds whose contents changed (or were unknown) and that the client
// hears of (hears: tools always).
func (v *clientView) update(views map[string]listView, hears func(kind string) bool) []string {
	var changed []string
	for _, k := range listKindNames {
		lv, ok := views[k]
		if !ok {
			continue
		}
		old := v.served[k]
		v.served[k] = lv
		if old.known && lv.known && old.sum == lv.sum || !old.known && !v.heard[k] {
			continue
		}
		if k != "tools" && !hears(k) {
			continue
		}
		changed = append(changed, k)
	}
	return changed
}

// noteTools records a page of a tools/list answer the client gets from
// the child (firstPage: one without a cursor); the last page completes
// the list the client fetched.
func (v *clientView) noteTools(firstPage bool, result []byte) {
	var lr struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	if json.Unmarshal(result, &lr) != nil {
		return
	}
	if firstPage {
		v.fetching = nil
	}
	v.fetching = append(v.fetching, lr.Tools...)
	if lr.NextCursor != "" {
		return
	}
	v.tools, v.toolsKnown = toolInfos(v.fetching), true
	v.served["tools"] = viewOf(v.fetching)
	v.heard["tools"] = true
	v.fetching = nil
}

// noteToolsDown records that the client fetched the tools while no child
// serves: it has the relay's own tools only.
func (v *clientView) noteToolsDown() {
	v.tools, v.toolsKnown = []toolInfo{}, true
	v.served["tools"] = viewOf(nil)
	v.heard["tools"] = true
}

// beginEmpty records a session that begins with no child: no list but
// the relay's tools.
func (v *clientView) beginEmpty() {
	for k, lv := range emptyViews() {
		v.served[k] = lv
		v.heard[k] = true
	}
	v.tools, v.toolsKnown = []toolInfo{}, true
}

// announce records what the clients are served now and sends each
// list_changed for each kind whose contents changed for it (or were
// unknown), if its session existed before. sw.mu is held.
func (r *switchboard) announce(views map[string]listView) {
	r.eachPort(func(p *Port) {
		changed := p.view.update(views, r.sess.hearsOf)
		st := strategyOf(p.era)
		if len(changed) == 0 || st == nil || !st.established(&r.sess, p) {
			return
		}
		msgs := st.listChanged(&r.sess, p, changed)
		for _, m := range msgs {
			p.deliver(m.msg, m.rel)
		}
		if len(msgs) > 0 {
			r.log.Debug("told a client its lists changed", "lists", changed)
		}
	})
}

// down leaves the relay without a child: report says why (when override,
// or when none was said), held requests are answered, and the clients are
// told their lists are now empty. sw.mu is held.
func (r *switchboard) down(report string, override bool) {
	if r.state == stateClosed {
		return
	}
	if r.child != nil && r.child.exited() {
		r.child = nil
	}
	r.state = stateDown
	r.health.setReport(report, override)
	r.flushQueue()
	r.announce(emptyViews())
}

func toolInfos(raw []json.RawMessage) []toolInfo {
	out := make([]toolInfo, 0, len(raw))
	for _, t := range raw {
		var ti toolInfo
		if json.Unmarshal(t, &ti) == nil {
			out = append(out, ti)
		}
	}
	return out
}

// fetchLists reads the child's lists under relay ids: the tools always,
// prompts and resources when the child declared them (legacy) or may have
// them (modern; an error counts as an empty list).
func (r *Relay) fetchLists(ctx context.Context, c *child) (map[string]listView, []toolInfo, error) {
	views := map[string]listView{}
	tools, err := r.fetchList(ctx, c, "tools/list", "tools")
	if err != nil {
		return nil, nil, err
	}
	views["tools"] = viewOf(tools)
	r.sw.mu.Lock()
	caps, modern := r.sw.sess.childCaps, r.sw.sess.era == eraModern
	keepInRecord(r.sw, "tools/list", true, listResult("tools", tools))
	r.sw.mu.Unlock()
	for _, k := range []struct {
		kind     string
		declared bool
	}{{"prompts", caps.prompts}, {"resources", caps.resources}} {
		if !k.declared && !modern {
			views[k.kind] = viewOf(nil)
			continue
		}
		items, err := r.fetchList(ctx, c, k.kind+"/list", k.kind)
		if err != nil {
			if c.exited() {
				return nil, nil, err
			}
			items = nil
		}
		views[k.kind] = viewOf(items)
		r.sw.mu.Lock()
		keepInRecord(r.sw, k.kind+"/list", true, listResult(k.kind, items))
		r.sw.mu.Unlock()
	}
	return views, toolInfos(tools), nil
}

// listResult is a */list result holding items.
func listResult(field string, items []json.RawMessage) []byte {
	if items == nil {
		items = []json.RawMessage{}
	}
	return mustJSON(map[string]any{field: items})
}

// fetchList reads every page of one list.
func (r *Relay) fetchList(ctx context.Context, c *child, method, field string) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor := ""
	for page := 0; page < 100; page++ {
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		r.sw.mu.Lock()
		p := r.sw.sess.withMeta(params)
		r.sw.mu.Unlock()
		res, err := r.call(ctx, c, method, p)
		if err != nil {
			return nil, err
		}
		var lr struct {
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &lr); err != nil {
			return nil, fmt.Errorf("%s result: %w", method, err)
		}
		var items []json.RawMessage
		if raw := jsonscan.Member(res, field); raw != nil && string(raw) != "null" {
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

// Lists is what a server lists, each list its items as the child wrote
// them (JSON objects); the relay's own tools are not among them.
type Lists struct {
	Tools, Prompts, Resources, Templates []json.RawMessage
	// Instructions is the child's instructions, from its handshake.
	Instructions string
}

// Recorded is what the record of the server's last good start lists
// (First.Record), and its instructions: what a client is answered before
// the server is up. false without a usable record.
func (r *Relay) Recorded() (Lists, bool) {
	r.sw.mu.Lock()
	rec := r.sw.rec
	r.sw.mu.Unlock()
	if rec == nil || rec.Lists["tools"] == nil {
		return Lists{}, false
	}
	split := func(field string) []json.RawMessage {
		var items []json.RawMessage
		_ = json.Unmarshal(rec.Lists[field], &items)
		return items
	}
	l := Lists{Tools: split("tools"), Prompts: split("prompts"), Resources: split("resources"), Templates: split("resourceTemplates")}
	if res := rec.initializeResult(""); res != nil {
		_ = json.Unmarshal(res["instructions"], &l.Instructions)
	}
	return l, true
}

// ErrNotReady is Lists' error while no child serves or no client's
// session lets the relay ask it (a legacy session before its client's
// initialize reached the child).
var ErrNotReady = errors.New("the server is not ready to be asked for its lists")

// Lists reads what the current child lists, every page of each list:
// the tools, prompts, resources and resource templates (a list the child
// refuses is empty: it has none).
// The mux serves its catalog from it; meta, when the relay's session has
// none yet, is a 2026-07-28 client's _meta for the requests (the session
// is then of that era).
func (r *Relay) Lists(ctx context.Context, meta []byte) (Lists, error) {
	var c *child
	var instr []byte
	for {
		r.sw.mu.Lock()
		if meta != nil && r.sw.sess.era == eraUnknown {
			r.sw.sess.era = eraModern
			if r.sw.sess.lastMeta == nil {
				r.sw.sess.lastMeta = metaTriple(meta)
			}
		}
		c = r.sw.child
		ready := c != nil && r.sw.state == stateUp && r.sw.sess.ready(c)
		// A handshake on its way, or messages held behind it, will make it
		// ready: wait for them.
		soon := c != nil && !ready && (r.sw.ids.handshakePending(c.gen) || r.sw.held.len() > 0)
		moved := r.sw.movedCh()
		instr = jsonscan.Member(r.sw.sess.initResult, "instructions")
		r.sw.mu.Unlock()
		if ready {
			break
		}
		if !soon {
			return Lists{}, ErrNotReady
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return Lists{}, ctx.Err()
		}
	}
	var l Lists
	if len(instr) > 0 && instr[0] == '"' {
		l.Instructions, _ = jsonscan.Unquote(instr)
	}
	var err error
	if l.Tools, err = r.fetchList(ctx, c, "tools/list", "tools"); err != nil {
		return Lists{}, err
	}
	l.Prompts, _ = r.fetchList(ctx, c, "prompts/list", "prompts")
	l.Resources, _ = r.fetchList(ctx, c, "resources/list", "resources")
	l.Templates, _ = r.fetchList(ctx, c, "resources/templates/list", "resourceTemplates")
	if c.exited() {
		return Lists{}, ErrNotReady
	}
	// What the child lists is what the record answers at the next start.
	r.sw.mu.Lock()
	for _, k := range []struct {
		method, field string
		items         []json.RawMessage
	}{{"tools/list", "tools", l.Tools}, {"prompts/list", "prompts", l.Prompts}, {"resources/list", "resources", l.Resources}, {"resources/templates/list", "resourceTemplates", l.Templates}} {
		keepInRecord(r.sw, k.method, true, listResult(k.field, k.items))
	}
	r.sw.mu.Unlock()
	return l, nil
}
