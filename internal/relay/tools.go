package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/mcpflow/mcpflow/internal/report/texts"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
)

// ownTools are mcpflow's own tools, spliced into the child's tools/list:
// comma-separated JSON; nil when Config.Tools.None.
type ownTools []byte

// noticeKind is what a notice is about: one of each at most is pending.
type noticeKind int

const (
	noticeBuild  noticeKind = iota // an automatic rebuild failed
	noticeCrash                    // the server crashed between calls and was restarted
	noticeConfig                   // the config file no longer loads
	numNotices
)

// notices are notes for the agent, on its next tools/call result.
type notices [numNotices]string

// set sets the note of kind k when on ("" withdraws it).
func (n *notices) set(k noticeKind, text string, on bool) {
	if on || text == "" {
		n[k] = text
	}
}

func (n *notices) clear() { *n = notices{} }

// toolDefs is mcpflow's tools as comma-separated JSON.
func toolDefs(cfg *Config) []byte {
	props := map[string]any{}
	if len(cfg.Child.EnvOverridable) > 0 {
		props["env"] = map[string]any{
			"type":                 "object",
			"additionalProperties": map[string]string{"type": "string"},
			"description":          texts.EnvDescription(cfg.Child.EnvOverridable),
		}
	}
	defs := []map[string]any{{
		"name":        cfg.Tools.Recompile,
		"description": texts.RecompileDescription,
		"inputSchema": map[string]any{"type": "object", "properties": props},
	}}
	if cfg.Tools.Call != "" {
		defs = append(defs, map[string]any{
			"name":        cfg.Tools.Call,
			"description": texts.CallToolDescription(cfg.Tools.Recompile),
			"inputSchema": map[string]any{
				"type":     "object",
				"required": []string{"name"},
				"properties": map[string]any{
					"name":      map[string]string{"type": "string", "description": "The tool to call."},
					"arguments": map[string]string{"type": "object", "description": "The tool's arguments."},
				},
			},
		})
	}
	b := mustJSON(defs)
	return b[1 : len(b)-1]
}

// recompiles are the recompile calls a session runs.
type recompiles struct {
	s       *Session
	running map[string]context.CancelFunc // by the client's raw id
}

// start runs the recompile tool in the background, then answers the call.
func (rc *recompiles) start(env wire.Envelope) {
	s, r := rc.s, rc.s.r
	id := bytes.Clone(env.ID)
	modern := s.modern()
	if err := r.env.accept(jsonscan.Member(jsonscan.Member(env.Params, "arguments"), "env")); err != nil {
		s.reply(id, wire.ResultResponse(id, toolResult(err.Error(), true, nil, modern)))
		return
	}
	token := bytes.Clone(jsonscan.Member(jsonscan.Member(env.Params, "_meta"), "progressToken"))
	ctx, cancel := context.WithCancel(context.WithValue(r.ctx, sessionKey{}, s))
	rc.running[string(id)] = cancel
	r.wg.Go(func() {
		defer cancel()
		var progress func(string)
		if token != nil {
			n := 0
			progress = func(msg string) {
				n++
				params := map[string]any{"progressToken": json.RawMessage(token), "progress": n, "message": msg}
				s.mu.Lock()
				if _, ok := rc.running[string(id)]; ok {
					s.deliver(wire.Request(nil, "notifications/progress", mustJSON(params)), id)
				}
				s.mu.Unlock()
			}
		}
		o := r.runRecompile(ctx, progress)
		h := r.now()
		s.mu.Lock()
		defer s.mu.Unlock()
		text, isErr := texts.Outcome(o, r.cfg.Tools.Rebuild, h.state == stateUp && s.child != nil)
		if h.configProblem != "" {
			text += "\n\n" + h.configProblem
		}
		if _, ok := rc.running[string(id)]; !ok {
			return // canceled by the client: no answer
		}
		r.stats.served.Add(1)
		delete(rc.running, string(id))
		s.notices.clear() // the result says it all
		s.reply(id, wire.ResultResponse(id, toolResult(text, isErr, o.Structured(), modern)))
	})
}

// cancel cancels the call the client knows as id, if there is one.
func (rc *recompiles) cancel(id []byte) bool {
	cancel, ok := rc.running[string(id)]
	if ok {
		cancel()
	}
	return ok
}

// toolResult is a CallToolResult of text (and structured, if not nil).
func toolResult(text string, isErr bool, structured any, modern bool) []byte {
	res := map[string]any{"content": []json.RawMessage{textContent(text)}, "isError": isErr}
	if structured != nil {
		res["structuredContent"] = structured
	}
	return wire.Complete(mustJSON(res), modern)
}

type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// diffTools compares tools by name, schema and description.
func diffTools(old, cur []toolInfo, known bool) result.ToolDiff {
	d := result.ToolDiff{Known: known, Details: map[string]result.ToolDetail{}}
	om := map[string]toolInfo{}
	for _, t := range old {
		om[t.Name] = t
	}
	seen := map[string]bool{}
	for _, t := range cur {
		seen[t.Name] = true
		d.Current = append(d.Current, t.Name)
		if !known {
			continue
		}
		o, was := om[t.Name]
		schema := was && !sameJSON(o.InputSchema, t.InputSchema)
		switch {
		case !was:
			d.Added = append(d.Added, t.Name)
		case schema || o.Description != t.Description:
			d.Changed = append(d.Changed, t.Name)
		default:
			continue
		}
		d.Details[t.Name] = result.ToolDetail{Description: t.Description, InputSchema: compactJSON(t.InputSchema), SchemaChanged: schema}
	}
	if known {
		for _, t := range old {
			if !seen[t.Name] {
				d.Removed = append(d.Removed, t.Name)
			}
		}
	}
	for _, l := range [][]string{d.Current, d.Added, d.Changed, d.Removed} {
		slices.Sort(l)
	}
	return d
}

func sameJSON(a, b json.RawMessage) bool {
	return bytes.Equal(canonicalJSON(a), canonicalJSON(b))
}

func canonicalJSON(b json.RawMessage) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	return mustJSON(v)
}

func compactJSON(b json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// ConfigProblem tells the relay why its config file no longer loads
// (text, from texts.ConfigProblem), or that it loads again (""): the next
// recompile answers and each session's next tools/call result carry it.
func (r *Relay) ConfigProblem(text string) {
	r.mu.Lock()
	r.health.configProblem = text
	r.mu.Unlock()
	for _, s := range r.openSessions() {
		s.mu.Lock()
		s.notices.set(noticeConfig, text, true)
		s.mu.Unlock()
	}
}

// SetEnv sets env overrides for the next starts, as recompile's env
// argument does: only keys of Child.EnvOverridable, else none.
func (r *Relay) SetEnv(env map[string]string) error {
	if len(env) == 0 {
		return nil
	}
	return r.env.accept(mustJSON(env))
}
