package main

// The mux part of the demo (-mux): mcpflow serving examples/mux (a Go
// server built from examples/echo and a Python server) to one client,
// the agent adding a server with add_server, and an edit to echo's source
// rebuilding echo alone.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// muxServer is what list_servers reports of one server (mux.ServerInfo).
type muxServer struct {
	Name     string   `json:"name"`
	Source   string   `json:"source"`
	Status   string   `json:"status"`
	Pid      int      `json:"pid"`
	Tools    []string `json:"tools"`
	Restarts int      `json:"restarts"`
}

// muxSteps runs the mux part's steps in order and returns the first
// failure.
func (d *demo) muxSteps(ctx context.Context) error {
	d.begin("Start mcpflow on examples/mux (echo in Go, notes in Python) and connect a Go SDK client")
	if err := d.muxConnect(ctx); err != nil {
		return err
	}
	if err := d.waitTools(ctx, "echo__echo", "notes__add_note"); err != nil {
		return err
	}
	names, err := d.toolNames(ctx)
	if err != nil {
		return err
	}
	d.ok("tools/list → %s", strings.Join(names, ", "))
	d.note("each server's tools as NAME__tool; add_server, remove_server, reload_server and list_servers are mcpflow's")

	d.begin("Call a tool of each server")
	if err := d.expectCall(ctx, "echo__echo", "hello through the mux", "hello through the mux"); err != nil {
		return err
	}
	if _, texts, err := d.mustCallMux(ctx, "notes__add_note", map[string]any{"text": "buy milk"}); err != nil {
		return err
	} else {
		d.ok("tools/call notes__add_note {\"text\": \"buy milk\"} → %q", strings.Join(texts, " "))
	}
	before, err := d.listServers(ctx)
	if err != nil {
		return err
	}

	d.begin("The agent adds a server: add_server")
	script := filepath.Join(d.root, "mux", "notes_server.py")
	_, texts, err := d.mustCallMux(ctx, "add_server", map[string]any{"name": "scratch", "command": "python3", "args": []string{script}})
	if err != nil {
		return err
	}
	d.ok("tools/call add_server {\"name\": \"scratch\", \"command\": \"python3\", \"args\": [\"notes_server.py\"]}")
	d.quote(strings.Join(texts, "\n"))
	if err := d.waitTools(ctx, "scratch__add_note"); err != nil {
		return err
	}
	if _, _, err := d.mustCallMux(ctx, "scratch__add_note", map[string]any{"text": "a note in the new server"}); err != nil {
		return err
	}
	d.ok("tools/call scratch__add_note → ok: the new server serves, beside the others")
	withScratch, err := d.listServers(ctx)
	if err != nil {
		return err
	}

	d.begin("Edit echo's main.go: add a reverse tool; only echo is rebuilt")
	src, err := os.ReadFile(filepath.Join(d.dir, "main.go"))
	if err != nil {
		return err
	}
	for len(d.changed) > 0 {
		<-d.changed
	}
	if _, line, err := d.save(src, reverseTool); err != nil {
		return err
	} else {
		d.ok("saved echo/main.go:")
		d.diff(line, strings.Split(strings.TrimSuffix(reverseTool, "\n"), "\n"))
	}
	savedAt := time.Now()
	if err := d.waitTools(ctx, "echo__reverse"); err != nil {
		return err
	}
	d.ok("notifications/tools/list_changed, and echo__reverse listed, %s after the save", d.style(bold, time.Since(savedAt).Round(time.Millisecond).String()))
	if err := d.expectCall(ctx, "echo__reverse", "mcpflow", "wolfpcm"); err != nil {
		return err
	}
	after, err := d.listServers(ctx)
	if err != nil {
		return err
	}
	echoB, echoA := before["echo"], after["echo"]
	if echoA.Pid == echoB.Pid || echoA.Restarts != echoB.Restarts+1 {
		return fmt.Errorf("echo was not restarted: before %+v, after %+v", echoB, echoA)
	}
	d.fact("echo", fmt.Sprintf("rebuilt and restarted: pid %d → %d", echoB.Pid, echoA.Pid))
	for _, n := range []string{"notes", "scratch"} {
		b, a := withScratch[n], after[n]
		if a.Pid != b.Pid || a.Restarts != b.Restarts || a.Status != "running" {
			return fmt.Errorf("%s was touched by echo's rebuild: before %+v, after %+v", n, b, a)
		}
		d.fact(n, fmt.Sprintf("untouched: pid %d, %s", a.Pid, a.Status))
	}

	d.begin("Shut down")
	return d.shutdown()
}

// muxConnect copies examples/mux and examples/echo side by side, starts
// mcpflow on the mux's config and connects a client.
func (d *demo) muxConnect(ctx context.Context) error {
	for _, ex := range []string{"mux", "echo"} {
		dst := filepath.Join(d.root, ex)
		err := os.CopyFS(dst, os.DirFS(filepath.Join("examples", ex)))
		if err == nil {
			err = os.RemoveAll(filepath.Join(dst, ".mcpflow"))
		}
		if err != nil {
			return fmt.Errorf("copy examples/%s: %w", ex, err)
		}
	}
	d.ok("copied examples/mux and examples/echo to %s", d.root)
	toml := filepath.Join(d.root, "mux", "mcpflow.toml")
	t0 := time.Now()
	if err := d.startAndConnect(ctx, toml); err != nil {
		return err
	}
	d.ok("connected in %s, protocol %s", time.Since(t0).Round(time.Millisecond), d.session.InitializeResult().ProtocolVersion)
	return nil
}

// waitTools waits, through list_changed, until every name in want is
// listed.
func (d *demo) waitTools(ctx context.Context, want ...string) error {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	for {
		names, err := d.toolNames(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(want, func(n string) bool { return !slices.Contains(names, n) }) {
			return nil
		}
		select {
		case <-d.changed:
		case <-time.After(500 * time.Millisecond):
		case <-d.exited:
			return errors.New("mcpflow exited")
		case <-ctx.Done():
			return fmt.Errorf("waiting for %v in tools/list (have %v): %w", want, names, ctx.Err())
		}
	}
}

// mustCallMux calls a tool that must succeed.
func (d *demo) mustCallMux(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, []string, error) {
	res, texts, err := d.call(ctx, buildTimeout, name, args)
	if err == nil && res.IsError {
		err = fmt.Errorf("%s failed: %s", name, strings.Join(texts, "\n"))
	}
	return res, texts, err
}

// listServers calls list_servers and returns its structuredContent by
// server name.
func (d *demo) listServers(ctx context.Context) (map[string]muxServer, error) {
	res, _, err := d.mustCallMux(ctx, "list_servers", map[string]any{})
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct{ Servers []muxServer }
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("list_servers' structuredContent %s: %w", b, err)
	}
	m := map[string]muxServer{}
	var line []string
	for _, s := range out.Servers {
		m[s.Name] = s
		line = append(line, fmt.Sprintf("%s (%s, %s, pid %d)", s.Name, s.Source, s.Status, s.Pid))
	}
	d.ok("list_servers → %s", strings.Join(line, "; "))
	return m, nil
}
