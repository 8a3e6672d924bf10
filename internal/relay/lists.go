package relay

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"sync"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// The lists a client is told have changed (compared as canonical JSON).
var listKindNames = []string{"tools", "prompts", "resources"}

// listView is a digest of a list; unknown until someone listed it.
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

// clientView is what a session's client is served, per list kind.
type clientView struct {
	served map[string]listView
	// heard: kinds of list the client got (of others, nothing changed for it)
	heard      map[string]bool
	tools      []toolInfo // the child's tools the client last fetched whole
	toolsKnown bool
	fetching   []json.RawMessage // the pages of a tools/list in progress
}

func newClientView() clientView {
	return clientView{served: map[string]listView{}, heard: map[string]bool{}}
}

func (v *clientView) hear(method string) {
	kind, _, _ := strings.Cut(method, "/")
	v.heard[kind] = true
}

func (v *clientView) unknown() bool {
	for _, k := range listKindNames {
		if !v.served[k].known {
			return true
		}
	}
	return false
}

// learn records the lists read from the serving child where unknown.
func (v *clientView) learn(views map[string]listView) {
	for k, lv := range views {
		if !v.served[k].known {
			v.served[k] = lv
		}
	}
}

func (v *clientView) forget()                { clear(v.served) }
func (v *clientView) forgetKind(kind string) { delete(v.served, kind) }

// update records views and returns the kinds that changed for the client.
func (v *clientView) update(views map[string]listView, hears func(kind string) bool) []string {
	var changed []string
	for _, k := range listKindNames {
		lv, ok := views[k]
		if !ok {
			continue
		}
		old := v.served[k]
		v.served[k] = lv
		if old.known && lv.known && old.sum == lv.sum || !old.known && !v.heard[k] || k != "tools" && !hears(k) {
			continue
		}
		changed = append(changed, k)
	}
	return changed
}

// noteTools records a page of a tools/list answer; true on the last.
func (v *clientView) noteTools(firstPage bool, result []byte) bool {
	var lr struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	if json.Unmarshal(result, &lr) != nil {
		return false
	}
	if firstPage {
		v.fetching = nil
	}
	v.fetching = append(v.fetching, lr.Tools...)
	if lr.NextCursor != "" {
		return false
	}
	v.tools, v.toolsKnown = toolInfos(v.fetching), true
	v.served["tools"], v.heard["tools"] = viewOf(v.fetching), true
	v.fetching = nil
	return true
}

// beginEmpty records a session that begins with no child.
func (v *clientView) beginEmpty() {
	for k, lv := range emptyViews() {
		v.served[k], v.heard[k] = lv, true
	}
	v.tools, v.toolsKnown = []toolInfo{}, true
}

// announce records views and tells the client what changed. s.mu is held.
func (s *Session) announce(views map[string]listView) {
	changed := s.view.update(views, func(kind string) bool {
		return s.st.Era != wire.EraLegacy || declares(jsonscan.Member(s.hs.initResult, "capabilities"), kind)
	})
	if len(changed) == 0 || !s.st.Established() {
		return
	}
	for _, m := range s.st.ListChanged(changed...) {
		s.deliver(m.Msg, m.Rel)
	}
	s.r.log.Debug("told a client its lists changed", "lists", changed)
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

// knownTools: the first tools the server listed, and how many it lists.
type knownTools struct {
	mu    sync.Mutex
	first []toolInfo // nil until a list was read
	count int
}

func (k *knownTools) note(tools []toolInfo) {
	if tools == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.first == nil {
		k.first = tools
	}
	k.count = len(tools)
}

func (k *knownTools) baseline() ([]toolInfo, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.first, k.first != nil
}
