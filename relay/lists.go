package relay

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
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

// listsUnknown reports whether the relay does not know what some list
// holds. sw.mu is held.
func (r *switchboard) listsUnknown() bool {
	for _, k := range listKindNames {
		if !r.served[k].known {
			return true
		}
	}
	return false
}

// learnServed records lists read from the serving child where they were
// unknown. sw.mu is held.
func (r *switchboard) learnServed(views map[string]listView) {
	for k, v := range views {
		if !r.served[k].known {
			r.served[k] = v
		}
	}
}

// forgetServed marks every list unknown (a new child whose lists the
// relay did not read). sw.mu is held.
func (r *switchboard) forgetServed() {
	clear(r.served)
}

// announce records what the client is served now and sends list_changed
// for each kind whose contents changed (or were unknown), if the client's
// session existed before. sw.mu is held.
func (r *switchboard) announce(views map[string]listView) {
	var changed []string
	for _, k := range listKindNames {
		v, ok := views[k]
		if !ok {
			continue
		}
		old := r.served[k]
		r.served[k] = v
		if old.known && v.known && old.sum == v.sum {
			continue
		}
		if k != "tools" && !r.clientKnows(k) {
			continue
		}
		changed = append(changed, k)
	}
	st := r.sess.strategy()
	if len(changed) == 0 || st == nil || !st.established(&r.sess) {
		return
	}
	msgs := st.listChanged(&r.sess, changed)
	for _, m := range msgs {
		r.out.send(m)
	}
	if len(msgs) > 0 {
		r.log.Debug("told the client its lists changed", "lists", changed)
	}
}

// clientKnows reports whether the client may hear of changes to the
// prompts or resources list: in the legacy era, if the initialize result
// it got declared them; in the modern era, its listen streams say.
func (r *switchboard) clientKnows(kind string) bool {
	if r.sess.era != eraLegacy {
		return true
	}
	v := member(member(r.sess.initResult, "capabilities"), kind)
	return v != nil && string(v) != "null"
}

// down leaves the relay without a child: report says why (when override,
// or when none was said), held requests are answered, and the client is
// told its lists are now empty. sw.mu is held.
func (r *switchboard) down(report string, override bool) {
	if r.state == stateClosed {
		return
	}
	if r.child != nil && r.child.exited() {
		r.child = nil
	}
	r.state = stateDown
	if override || r.downReport == "" {
		r.downReport = report
	}
	r.flushQueue()
	r.announce(emptyViews())
}

// noteClientTools records a page of a tools/list answer the client gets
// from the child; the last page completes the list the client fetched.
// sw.mu is held.
func (r *switchboard) noteClientTools(p *pending, result []byte) {
	var lr struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	if json.Unmarshal(result, &lr) != nil {
		return
	}
	if p.firstPage {
		r.fetching = nil
	}
	r.fetching = append(r.fetching, lr.Tools...)
	if lr.NextCursor != "" {
		return
	}
	r.clientTools, r.clientToolsKnown = toolInfos(r.fetching), true
	r.served["tools"] = viewOf(r.fetching)
	r.fetching = nil
}

// noteClientToolsDown records that the client fetched the tools while no
// child serves: it has the relay's own tools only. sw.mu is held.
func (r *switchboard) noteClientToolsDown() {
	r.clientTools, r.clientToolsKnown = []toolInfo{}, true
	r.served["tools"] = viewOf(nil)
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
	}
	return views, toolInfos(tools), nil
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
		if raw := member(res, field); raw != nil && string(raw) != "null" {
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
