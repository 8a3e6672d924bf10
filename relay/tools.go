package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// toolDefs is the JSON of the relay's own tools, comma-separated, ready to
// be spliced into a tools array.
func (r *Relay) toolDefs() []byte {
	props := map[string]any{}
	if len(r.cfg.EnvOverridable) > 0 {
		props["env"] = map[string]any{
			"type":                 "object",
			"additionalProperties": map[string]string{"type": "string"},
			"description": "Optional environment overrides for the restarted server; they persist for later restarts. Allowed keys: " +
				strings.Join(r.cfg.EnvOverridable, ", ") + ".",
		}
	}
	defs := []map[string]any{{
		"name": r.cfg.Tool,
		"description": "Rebuild and restart this MCP server (mcpflow hot reload). Call it after you edit the server's source code so that your changes take effect; " +
			"your conversation continues and the tool list refreshes. If the build fails, the previous server keeps running and the result shows the compiler errors with file:line. " +
			"Also call it when a tool reports that the server crashed.",
		"inputSchema": map[string]any{"type": "object", "properties": props},
	}}
	if r.cfg.CallTool != "" {
		defs = append(defs, map[string]any{
			"name": r.cfg.CallTool,
			"description": "Call a tool of this MCP server by name. Use it for tools added after the session began, when your client does not refresh its tool list: " +
				"the " + r.cfg.Tool + " result lists new tools and their input schemas.",
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
	var b []byte
	for i, d := range defs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, mustJSON(d)...)
	}
	return b
}

// startRecompile runs the recompile tool in the background and answers
// the call when it is done. r.mu is held.
func (r *Relay) startRecompile(env envelope) {
	id := clone(env.id)
	key := string(id)
	if err := r.acceptEnv(member(member(env.params, "arguments"), "env")); err != nil {
		r.reply(resultResponse(id, r.toolResult(err.Error(), true)))
		return
	}
	token := clone(member(member(env.params, "_meta"), "progressToken"))
	ctx, cancel := context.WithCancel(r.ctx)
	r.recompiles[key] = cancel
	go func() {
		defer cancel()
		var progress func(string)
		if token != nil {
			n := 0
			progress = func(msg string) {
				n++
				p := map[string]any{"progressToken": json.RawMessage(token), "progress": n, "message": msg}
				r.out.send(request(nil, "notifications/progress", mustJSON(p)))
			}
		}
		text, isErr := r.runRecompile(ctx, progress)
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.recompiles[key]; !ok {
			return // canceled by the client: no answer
		}
		delete(r.recompiles, key)
		r.notices = nil // the result says it all
		r.reply(resultResponse(id, r.toolResult(text, isErr)))
	}()
}

// runRecompile builds and restarts, and describes the outcome.
func (r *Relay) runRecompile(ctx context.Context, progress func(string)) (string, bool) {
	if r.cfg.Recompiler == nil {
		start := time.Now()
		sum, err := r.Restart(ctx)
		if err != nil {
			return "Restart failed: " + err.Error(), true
		}
		return fmt.Sprintf("Restarted in %s.\n%s", round(time.Since(start)), sum), false
	}
	o := r.cfg.Recompiler.Recompile(ctx, progress)
	return formatOutcome(o, r.cfg.Tool)
}

// formatOutcome is the text the agent reads after recompile.
func formatOutcome(o BuildOutcome, tool string) (string, bool) {
	var b strings.Builder
	switch {
	case !o.OK:
		fmt.Fprintf(&b, "Build failed after %s (%v). The previous server is still running, unchanged.\n", round(o.BuildTime), o.Err)
		if o.Errors != "" {
			b.WriteString("\n")
			b.WriteString(strings.TrimRight(o.Errors, "\n"))
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\nFix these errors, then call %s again.", tool)
		return b.String(), true
	case o.RestartErr != nil:
		fmt.Fprintf(&b, "Build succeeded")
		if !o.Skipped {
			fmt.Fprintf(&b, " in %s", round(o.BuildTime))
		}
		fmt.Fprintf(&b, ", but the server did not start: %v\n", o.RestartErr)
		fmt.Fprintf(&b, "\nFix the problem, then call %s again.", tool)
		return b.String(), true
	}
	if o.Skipped {
		fmt.Fprintf(&b, "Restarted in %s (no build step).\n", round(o.RestartTime))
	} else {
		fmt.Fprintf(&b, "Rebuilt and restarted: build %s, restart %s.\n", round(o.BuildTime), round(o.RestartTime))
	}
	b.WriteString(o.Summary)
	return strings.TrimRight(b.String(), "\n"), false
}

// toolResult is a CallToolResult with one text item.
func (r *Relay) toolResult(text string, isErr bool) []byte {
	res := map[string]any{
		"content": []json.RawMessage{textContent(text)},
		"isError": isErr,
	}
	if r.era == eraModern {
		res["resultType"] = "complete"
	}
	return mustJSON(res)
}

// acceptEnv validates and stores the recompile tool's env overrides.
// r.mu is held.
func (r *Relay) acceptEnv(raw []byte) error {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	var env map[string]string
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("env must be an object of strings: %v", err)
	}
	var refused []string
	for k := range env {
		if !slices.Contains(r.cfg.EnvOverridable, k) {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		allowed := "none (set run.env_overridable in mcpflow.toml)"
		if len(r.cfg.EnvOverridable) > 0 {
			allowed = strings.Join(r.cfg.EnvOverridable, ", ")
		}
		return fmt.Errorf("env keys not allowed: %s. Allowed keys: %s", strings.Join(refused, ", "), allowed)
	}
	for k, v := range env {
		r.envOver[k] = v
	}
	return nil
}

// toolInfo is what the diff compares.
type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// fetchTools lists all of the child's tools under relay ids.
func (r *Relay) fetchTools(ctx context.Context, c *child) ([]toolInfo, error) {
	var all []toolInfo
	cursor := ""
	for page := 0; page < 100; page++ {
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		r.mu.Lock()
		p := r.withMeta(params)
		r.mu.Unlock()
		res, err := r.call(ctx, c, "tools/list", p)
		if err != nil {
			return nil, err
		}
		var lr struct {
			Tools      []toolInfo `json:"tools"`
			NextCursor string     `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &lr); err != nil {
			return nil, fmt.Errorf("tools/list result: %w", err)
		}
		all = append(all, lr.Tools...)
		if lr.NextCursor == "" {
			break
		}
		cursor = lr.NextCursor
	}
	return all, nil
}

// diffTools describes how the tool list changed: +added -removed ~changed.
func diffTools(old, cur []toolInfo) (line string, details []string) {
	om := map[string]toolInfo{}
	for _, t := range old {
		om[t.Name] = t
	}
	var parts []string
	seen := map[string]bool{}
	for _, t := range cur {
		seen[t.Name] = true
		o, ok := om[t.Name]
		switch {
		case !ok:
			parts = append(parts, "+"+t.Name)
			details = append(details, fmt.Sprintf("%s (new): %s\n  input schema: %s", t.Name, t.Description, compactJSON(t.InputSchema)))
		case !sameJSON(o.InputSchema, t.InputSchema):
			parts = append(parts, "~"+t.Name+" (input schema changed)")
			details = append(details, fmt.Sprintf("%s (changed): input schema: %s", t.Name, compactJSON(t.InputSchema)))
		case o.Description != t.Description:
			parts = append(parts, "~"+t.Name+" (description changed)")
		}
	}
	for _, t := range old {
		if !seen[t.Name] {
			parts = append(parts, "-"+t.Name)
		}
	}
	return strings.Join(parts, " "), details
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

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
