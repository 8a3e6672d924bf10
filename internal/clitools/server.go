package clitools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Config's zero values.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultSchemaTimeout = 30 * time.Second
	DefaultMaxOutput     = 4 << 20
	DefaultMaxParallel   = 4
	DefaultTool          = "recompile"
	maxSchemaOutput      = 16 << 20               // bounds the schema command's stdout
	progressEvery        = 100 * time.Millisecond // least time between two progress notifications of a call
)

// Config says which CLI to serve and how.
type Config struct {
	Schema        []string      // argv of the schema command; prints {"tools": [...]}
	Command       []string      // prefix of every call; empty = Schema[0]
	Append        []string      // added after every call's arguments
	Timeout       time.Duration // per call; 0 = DefaultTimeout
	SchemaTimeout time.Duration // per schema command run; 0 = DefaultSchemaTimeout
	MaxOutput     int64         // stdout bytes per call; 0 = DefaultMaxOutput
	MaxParallel   int           // calls running at once; 0 = DefaultMaxParallel
	Dir           string        // working directory; "" = the caller's
	Env           []string      // full environment; nil = the caller's
	Logger        *slog.Logger  // nil = discard
	Tool          string        // the recompile tool's name; "" = DefaultTool, "-" = none
	Name, Version string        // the server's implementation info; "" = "mcpflow-cli", "dev"

	// Recompile builds the CLI for the recompile tool (the builder's); after a
	// good build it calls Restart and reports it in Build.Restart. nil =
	// recompile only re-reads the schema.
	Recompile func(ctx context.Context, progress func(msg string)) result.Build
	Note      func() string // a note to append to each CLI tool's result; "" = none
}

// Server serves a CLI's tools over MCP. See the package documentation.
type Server struct {
	cfg      Config
	log      *slog.Logger
	srv      *mcp.Server
	sem      chan struct{}
	shutdown chan struct{}

	runMu   sync.Mutex     // guards closed against running.Add
	closed  bool           // Close has begun: no process starts any more
	running sync.WaitGroup // processes started and not yet reaped

	refreshMu sync.Mutex // one refresh at a time

	mu      sync.Mutex
	schema  *Schema // the tools served; nil before the first good refresh
	lastErr error   // the last refresh's error; nil once one succeeds
	gen     int     // good refreshes so far
}

// New returns a Server serving no CLI tools until Refresh (or Restart).
func New(cfg Config) *Server {
	if len(cfg.Command) == 0 && len(cfg.Schema) > 0 {
		cfg.Command = cfg.Schema[:1]
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.SchemaTimeout = cmp.Or(cfg.SchemaTimeout, DefaultSchemaTimeout)
	cfg.MaxOutput = cmp.Or(cfg.MaxOutput, DefaultMaxOutput)
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = DefaultMaxParallel
	}
	cfg.Tool = cmp.Or(cfg.Tool, DefaultTool)
	cfg.Name, cfg.Version = cmp.Or(cfg.Name, "mcpflow-cli"), cmp.Or(cfg.Version, "dev")
	s := &Server{
		cfg:      cfg,
		log:      cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)),
		sem:      make(chan struct{}, cfg.MaxParallel),
		shutdown: make(chan struct{}),
	}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	if cfg.Tool != "-" {
		s.srv.AddTool(&mcp.Tool{
			Name:        cfg.Tool,
			Description: "Rebuild the CLI (when a build is configured) and re-read its tool list; reports the build and which tools changed.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
		}, s.recompile)
	}
	return s
}

// Open serves one client session through the Go SDK's server (a wire.Opener).
func (s *Server) Open(c wire.Client) wire.Session {
	return wire.SDKServer{Server: s.srv, Log: s.log}.Open(c)
}

// Close kills every process group and returns once all are reaped; later calls fail.
func (s *Server) Close() {
	s.runMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.shutdown)
	}
	s.runMu.Unlock()
	s.running.Wait()
}

// run runs spec in Dir with Env, unless Close has begun, counted for Close.
func (s *Server) run(ctx context.Context, spec runSpec) outcome {
	spec.dir, spec.env, spec.shutdown = s.cfg.Dir, s.cfg.Env, s.shutdown
	s.runMu.Lock()
	if s.closed {
		s.runMu.Unlock()
		return outcome{exitCode: -1, err: errShutdown}
	}
	s.running.Add(1)
	s.runMu.Unlock()
	defer s.running.Done()
	return run(ctx, spec)
}

// Schema returns the schema served and the last refresh's error.
func (s *Server) Schema() (*Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.schema, s.lastErr
}

// Restart is Refresh as the builder's Restarter wants it (Gen: good refreshes; Pid 0).
func (s *Server) Restart(ctx context.Context) (*result.Restart, error) {
	start := time.Now()
	diff, err := s.Refresh(ctx)
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	return &result.Restart{Gen: gen, Duration: time.Since(start), Err: err, Tools: diff}, err
}

// Refresh runs the schema command and serves its tools, updating those the
// client would see differ (the SDK sends tools/list_changed). On failure the
// previous tools stay and the error is noted in call results until one succeeds.
func (s *Server) Refresh(ctx context.Context) (result.ToolDiff, error) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	o := s.run(ctx, runSpec{argv: s.cfg.Schema, timeout: s.cfg.SchemaTimeout, maxOutput: maxSchemaOutput})
	sch, err := s.readSchema(o)
	s.mu.Lock()
	old := s.schema
	if err != nil {
		s.lastErr = err
		s.mu.Unlock()
		diff := result.ToolDiff{Known: old != nil, Current: old.Names()}
		s.log.Warn("cli schema refresh failed; previous tools kept", "err", err, "tools", len(diff.Current), "duration", result.Dur(o.duration))
		return diff, err
	}
	diff := diffSchemas(old, sch)
	s.schema = sch
	s.lastErr = nil
	s.gen++
	s.mu.Unlock()
	s.srv.RemoveTools(diff.Removed...) // none: no list_changed
	for _, name := range slices.Concat(diff.Added, diff.Changed) {
		s.srv.AddTool(sch.Tool(name).MCPTool(), s.handler(name))
	}
	s.log.Info("cli schema refreshed", "tools", len(diff.Current), "added", diff.Added, "removed", diff.Removed, "changed", diff.Changed, "duration", result.Dur(o.duration))
	return diff, nil
}

func (s *Server) readSchema(o outcome) (*Schema, error) {
	cmd := strings.Join(s.cfg.Schema, " ")
	switch {
	case errors.Is(o.err, errTimeout):
		return nil, fmt.Errorf("schema command %q timed out after %s", cmd, result.Dur(s.cfg.SchemaTimeout))
	case o.err != nil:
		return nil, fmt.Errorf("schema command %q: %v", cmd, o.err)
	case o.exitCode != 0:
		return nil, fmt.Errorf("schema command %q exited with status %d%s", cmd, o.exitCode, section("stderr", o.stderr))
	}
	sch, err := parseSchema(o.stdout)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(sch.Tools, func(t *Tool) bool { return t.Name == s.cfg.Tool }); i >= 0 && s.cfg.Tool != "-" {
		return nil, newSchemaError(o.stdout, []string{"tools", strconv.Itoa(i), "name"},
			fmt.Sprintf("tool name %q is taken by mcpflow's own recompile tool", s.cfg.Tool))
	}
	return sch, nil
}

// diffSchemas compares what the client sees of two tool lists.
func diffSchemas(old, cur *Schema) result.ToolDiff {
	d := result.ToolDiff{Known: old != nil, Current: cur.Names()}
	for _, n := range d.Current {
		switch o := old.Tool(n); {
		case o == nil:
			d.Added = append(d.Added, n)
		case !sameTool(o, cur.Tool(n)):
			d.Changed = append(d.Changed, n)
		}
	}
	for _, n := range old.Names() {
		if cur.Tool(n) == nil {
			d.Removed = append(d.Removed, n)
		}
	}
	return d
}

func sameTool(a, b *Tool) bool {
	ja, err1 := json.Marshal(a.MCPTool())
	jb, err2 := json.Marshal(b.MCPTool())
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// handler runs the CLI tool name and returns its result, notes appended.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := s.runTool(ctx, name, req.Params.Arguments, notifier(ctx, req))
		if _, lastErr := s.Schema(); lastErr != nil {
			res.Content = append(res.Content, &mcp.TextContent{Text: "mcpflow note: the CLI's tool list could not be re-read, the previous tools are still served: " + lastErr.Error()})
		}
		if s.cfg.Note != nil {
			if note := s.cfg.Note(); note != "" {
				res.Content = append(res.Content, &mcp.TextContent{Text: note})
			}
		}
		return res, nil
	}
}

// notifier notifies req's client of progress; nil without a progress token.
func notifier(ctx context.Context, req *mcp.CallToolRequest) func(n float64, msg string) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	return func(n float64, msg string) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: n, Message: msg})
	}
}

func textResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func errResult(format string, args ...any) *mcp.CallToolResult {
	return textResult(fmt.Sprintf(format, args...), true)
}

// runTool runs the CLI tool name; notify, when set, gets stderr lines as progress.
func (s *Server) runTool(ctx context.Context, name string, raw json.RawMessage, notify func(n float64, msg string)) *mcp.CallToolResult {
	s.mu.Lock()
	t := s.schema.Tool(name)
	s.mu.Unlock()
	if t == nil {
		return errResult("tool %q is no longer provided by the CLI", name)
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage(`{}`)
	}
	var plain map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		return errResult("invalid arguments: want a JSON object: %v", err)
	}
	if err := t.resolved.Validate(plain); err != nil {
		return errResult("invalid arguments for %s: %v", name, err)
	}
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return errResult("invalid arguments: %v", err)
	}
	tail, err := t.Template.Expand(args)
	if err != nil {
		return errResult("invalid arguments for %s: %v", name, err)
	}
	argv := slices.Concat(s.cfg.Command, tail, s.cfg.Append)
	spec := runSpec{argv: argv, timeout: s.cfg.Timeout, maxOutput: s.cfg.MaxOutput}
	if t.Stdin {
		spec.stdin = append(bytes.TrimSpace(raw), '\n')
	}
	if notify != nil {
		spec.onStderr = progressLines(notify)
	}

	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return errResult("%s: canceled while waiting for a free slot (max_parallel %d)", name, s.cfg.MaxParallel)
	case <-s.shutdown:
		return errResult("%s: mcpflow is shutting down", name)
	}
	o := s.run(ctx, spec)
	<-s.sem

	s.log.Debug("cli call", "tool", name, "argv", argv, "exit", o.exitCode, "err", o.err, "duration", result.Dur(o.duration))
	return s.render(name, o)
}

func (s *Server) render(name string, o outcome) *mcp.CallToolResult {
	stdout := strings.ToValidUTF8(string(o.stdout), "\uFFFD")
	switch {
	case errors.Is(o.err, errTimeout):
		return errResult("%s timed out after %s; its process group was killed.%s%s", name, result.Dur(s.cfg.Timeout), section("stdout", stdout), section("stderr", o.stderr))
	case errors.Is(o.err, errOverflow):
		return errResult("%s printed more than max_output (%d bytes) on stdout; its process group was killed.%s", name, s.cfg.MaxOutput, section("stderr", o.stderr))
	case errors.Is(o.err, context.Canceled), errors.Is(o.err, context.DeadlineExceeded):
		return errResult("%s was canceled; its process group was killed", name)
	case errors.Is(o.err, errShutdown):
		return errResult("%s: mcpflow is shutting down; its process group was killed", name)
	case o.err != nil:
		return errResult("%s: %v%s%s", name, o.err, section("stdout", stdout), section("stderr", o.stderr))
	case o.exitCode != 0:
		return errResult("%s exited with status %d%s%s", name, o.exitCode, section("stdout", stdout), section("stderr", o.stderr))
	}
	if m, ok := isJSONObject(o.stdout); ok {
		text := string(bytes.TrimSpace(o.stdout))
		return &mcp.CallToolResult{StructuredContent: m, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	return textResult(stdout, false)
}

func section(label, text string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return ""
	}
	return "\n" + label + ":\n" + text
}

// progressLines passes stderr lines to notify, at most one per progressEvery.
func progressLines(notify func(n float64, msg string)) func(string) {
	var n int
	var last time.Time
	return func(line string) {
		n++
		if now := time.Now(); now.Sub(last) >= progressEvery {
			last = now
			notify(float64(n), line)
		}
	}
}

func (s *Server) recompile(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var b strings.Builder
	diff, err, refreshed := result.ToolDiff{}, error(nil), false
	if s.cfg.Recompile != nil {
		var progress func(string)
		if notify := notifier(ctx, req); notify != nil {
			n := 0
			progress = func(msg string) {
				n++
				notify(float64(n), msg)
			}
		}
		br := s.cfg.Recompile(ctx, progress)
		switch {
		case br.Skipped:
			b.WriteString("build: none configured\n")
		case br.OK:
			fmt.Fprintf(&b, "build: ok (%s)\n", result.Dur(br.Duration))
		default:
			fmt.Fprintf(&b, "build: FAILED (%s): %v\n%s\n", result.Dur(br.Duration), br.Err, strings.TrimSpace(br.Errors))
		}
		if br.Restart != nil {
			diff, err, refreshed = br.Restart.Tools, br.Restart.Err, true
		} else if !br.OK {
			sch, lastErr := s.Schema()
			fmt.Fprintf(&b, "tools: unchanged, %d served", len(sch.Names()))
			if lastErr != nil {
				fmt.Fprintf(&b, "\nschema error: %v", lastErr)
			}
			return textResult(b.String(), true), nil
		}
	}
	if !refreshed {
		diff, err = s.Refresh(ctx)
	}
	b.WriteString(describeDiff(diff))
	if err != nil {
		fmt.Fprintf(&b, "\nschema error, previous tools kept: %v", err)
	}
	return textResult(b.String(), err != nil), nil
}

// describeDiff renders a tool diff in one line for the agent.
func describeDiff(d result.ToolDiff) string {
	if d.Empty() {
		return fmt.Sprintf("tools: unchanged, %d served", len(d.Current))
	}
	var parts []string
	for i, names := range [][]string{d.Added, d.Removed, d.Changed} {
		for _, n := range names {
			parts = append(parts, "+-~"[i:i+1]+n)
		}
	}
	return fmt.Sprintf("tools: %s; %d served", strings.Join(parts, " "), len(d.Current))
}
