package clitools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
	"github.com/mcpflow/mcpflow/internal/report/result"
	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// harness is a Server serving a Go SDK client on two pipes, as mcpflow
// serves its stdio.
type harness struct {
	t        *testing.T
	srv      *Server
	cs       *mcp.ClientSession
	state    string // EXAMPLE_CLI_STATE
	changed  chan struct{}
	progress chan *mcp.ProgressNotificationParams
}

// start serves cfg (Command defaults to the example CLI, Schema to its
// schema command) to a client speaking era.
func start(t *testing.T, era testkit.Era, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, state: t.TempDir(), changed: make(chan struct{}, 16), progress: make(chan *mcp.ProgressNotificationParams, 256)}
	exampleBin := testkit.ExampleCLI(t)
	if cfg.Schema == nil {
		cfg.Schema = []string{exampleBin, "schema", "--json"}
	}
	if cfg.Command == nil {
		cfg.Command = []string{exampleBin}
	}
	if cfg.Env == nil {
		cfg.Env = append(os.Environ(), "EXAMPLE_CLI_STATE="+h.state)
	}
	h.srv = New(cfg)
	t.Cleanup(h.srv.Close)
	ctx := context.Background()
	if _, err := h.srv.Refresh(ctx); err != nil && cfg.Schema[0] == exampleBin {
		t.Fatalf("first refresh: %v", err)
	}
	ct := serve(t, h.srv)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case h.progress <- r.Params:
			default:
			}
		},
	})
	h.cs = testkit.Connect(t, era.Version, client, ct)
	if got := h.cs.InitializeResult().ProtocolVersion; got != era.Protocol {
		t.Fatalf("negotiated %s, want %s", got, era.Protocol)
	}
	return h
}

// serve serves s with wire.Serve on two pipes and returns the client's transport.
func serve(t testing.TB, s *Server) mcp.Transport {
	return testkit.Pipes(t, func(in io.Reader, out io.Writer) error {
		return wire.Serve(context.Background(), wire.NewReader(in, 0), out, s, wire.ServeOptions{})
	})
}

func (h *harness) call(name string, args any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func structured(t *testing.T, r *mcp.CallToolResult) map[string]any {
	t.Helper()
	if r.IsError {
		t.Fatalf("tool error: %s", testkit.Text(r))
	}
	b, err := json.Marshal(r.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return m
}

func (h *harness) toolNames() []string {
	h.t.Helper()
	var names []string
	for tool, err := range h.cs.Tools(context.Background(), nil) {
		if err != nil {
			h.t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func (h *harness) waitChanged() {
	h.t.Helper()
	select {
	case <-h.changed:
	case <-time.After(10 * time.Second):
		h.t.Fatal("no tools/list_changed")
	}
}

// statePids returns the pids the example CLI recorded, its left-behind
// child included.
func (h *harness) statePids() []int {
	var pids []int
	b, _ := os.ReadFile(filepath.Join(h.state, "pids"))
	if c, err := os.ReadFile(filepath.Join(h.state, "child.pid")); err == nil {
		b = append(append(b, '\n'), c...)
	}
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

func (h *harness) assertNoProcessLeft() {
	h.t.Helper()
	pids := h.statePids()
	if len(pids) == 0 {
		h.t.Fatal("the CLI recorded no process")
	}
	testkit.NoLeftovers(h.t, testkit.Procs{Pids: pids})
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func TestCallParameterTypes(t *testing.T) {
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		h := start(t, era, Config{})
		if got, want := h.toolNames(), []string{"add", "args", "big", "count", "fail", "greet", "recompile", "slow"}; !slices.Equal(got, want) {
			t.Fatalf("tools %v, want %v", got, want)
		}
		g := structured(t, h.call("greet", map[string]any{"name": "Bob $(id)", "times": 2, "loud": true, "tags": []string{"a b", "c"}}))
		if g["greeting"] != "HELLO, BOB $(ID)! HELLO, BOB $(ID)!" || fmt.Sprint(g["tags"]) != "[a b c]" {
			t.Fatalf("greet: %v", g)
		}
		g = structured(t, h.call("greet", map[string]any{"name": "Ann"}))
		if g["greeting"] != "Hello, Ann!" || g["tags"] != nil {
			t.Fatalf("greet with optionals absent: %v", g)
		}
		a := structured(t, h.call("args", map[string]any{
			"s": "two words\n'\"", "i": 7, "n": 2.5, "b": false, "list": []any{"x", 1, true}, "opt": "o", "dash": "-d",
		}))
		want := []any{"two words\n'\"", "--i=7", "2.5", "--b", "false", "x", "1", "true", "--opt", "o", "-d"}
		if fmt.Sprint(a["argv"]) != fmt.Sprint(want) {
			t.Fatalf("args argv %q, want %q", a["argv"], want)
		}
		a = structured(t, h.call("args", map[string]any{"s": "only"}))
		if fmt.Sprint(a["argv"]) != "[only]" {
			t.Fatalf("args with optionals absent: %q", a["argv"])
		}
		if s := structured(t, h.call("add", map[string]any{"a": -1.5, "b": 4})); s["sum"] != 2.5 {
			t.Fatalf("add: %v", s)
		}
		if c := structured(t, h.call("count", map[string]any{"text": "one two  three"})); c["words"] != 3.0 {
			t.Fatalf("count (stdin): %v", c)
		}
		r := h.call("big", map[string]any{"bytes": 5})
		if r.IsError || r.StructuredContent != nil || len(r.Content) != 1 || testkit.Text(r) != "xxxxx" {
			t.Fatalf("plain text output: %+v %q", r, testkit.Text(r))
		}
		// The JSON object also comes as a text block.
		if r := h.call("add", map[string]any{"a": 1, "b": 2}); !strings.Contains(testkit.Text(r), `{"sum":3}`) {
			t.Fatalf("add text %q", testkit.Text(r))
		}
	})
}

func TestBadArgumentsRunNothing(t *testing.T) {
	h := start(t, testkit.Modern, Config{})
	for _, c := range []struct {
		args any
		want string
	}{
		{map[string]any{}, "name"},                              // required missing
		{map[string]any{"name": 3}, "name"},                     // wrong type
		{map[string]any{"name": "a", "times": 99}, "maximum"},   // out of range
		{map[string]any{"name": "a", "times": "2"}, "times"},    // string for integer
		{map[string]any{"name": "a", "tags": []any{1}}, "tags"}, // wrong item type
		{map[string]any{"name": "a", "loud": "yes"}, "loud"},    // string for boolean
	} {
		r := h.call("greet", c.args)
		if !r.IsError || !strings.Contains(testkit.Text(r), "invalid arguments") || !strings.Contains(testkit.Text(r), c.want) {
			t.Errorf("%v: got %q", c.args, testkit.Text(r))
		}
	}
	r := h.call("args", map[string]any{"s": "-rf"})
	if !r.IsError || !strings.Contains(testkit.Text(r), `starts with "-"`) || !strings.Contains(testkit.Text(r), allowDashKey) {
		t.Errorf("dash positional: %q", testkit.Text(r))
	}
	if pids := h.statePids(); len(pids) != 0 {
		t.Fatalf("a bad call started processes %v", pids)
	}
}

func TestNonZeroExit(t *testing.T) {
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		h := start(t, era, Config{})
		r := h.call("fail", map[string]any{"status": 3})
		s := testkit.Text(r)
		if !r.IsError || !strings.Contains(s, "exited with status 3") || !strings.Contains(s, "partial output") || !strings.Contains(s, "something went wrong") {
			t.Fatalf("got %v %q", r.IsError, s)
		}
	})
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	testkit.UnixOnly(t, "Windows: a child the CLI starts at once escapes the Job Object, which it joins just after its start (README, Platforms: known gap)")
	h := start(t, testkit.Modern, Config{Timeout: 500 * time.Millisecond})
	r := h.call("slow", map[string]any{"seconds": 60, "child": true})
	if !r.IsError || !strings.Contains(testkit.Text(r), "timed out after 500ms") {
		t.Fatalf("got %q", testkit.Text(r))
	}
	h.assertNoProcessLeft()
}

func TestCancelKillsTheGroup(t *testing.T) {
	testkit.UnixOnly(t, "Windows: a child the CLI starts at once escapes the Job Object, which it joins just after its start (README, Platforms: known gap)")
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		h := start(t, era, Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60, "child": true}})
			done <- err
		}()
		waitFile(t, filepath.Join(h.state, "child.pid"))
		cancel()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("a canceled call returned no error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the canceled call never returned")
		}
		h.assertNoProcessLeft()
		// The server still serves.
		if s := structured(t, h.call("add", map[string]any{"a": 1, "b": 1})); s["sum"] != 2.0 {
			t.Fatal(s)
		}
	})
}

func TestCloseKillsRunningCalls(t *testing.T) {
	h := start(t, testkit.Legacy, Config{})
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- h.call("slow", map[string]any{"seconds": 60, "child": true}) }()
	waitFile(t, filepath.Join(h.state, "child.pid"))
	h.srv.Close()
	r := <-done
	if !r.IsError || !strings.Contains(testkit.Text(r), "shutting down") {
		t.Fatalf("got %q", testkit.Text(r))
	}
	h.assertNoProcessLeft()
}

func TestOversizeOutput(t *testing.T) {
	h := start(t, testkit.Modern, Config{MaxOutput: 1000})
	r := h.call("big", map[string]any{"bytes": 1 << 20})
	if !r.IsError || !strings.Contains(testkit.Text(r), "more than max_output (1000 bytes)") {
		t.Fatalf("got %q", testkit.Text(r))
	}
	if r := h.call("big", map[string]any{"bytes": 1000}); r.IsError {
		t.Fatalf("exactly max_output: %q", testkit.Text(r))
	}
	h.assertNoProcessLeft()
}

func TestParallelCallsWait(t *testing.T) {
	h := start(t, testkit.Modern, Config{MaxParallel: 4})
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 20 {
		wg.Go(func() {
			res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.2}})
			if err == nil && !res.IsError {
				ok.Add(1)
			} else if err == nil {
				t.Errorf("call failed: %s", testkit.Text(res))
			} else {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 20 {
		t.Fatalf("%d of 20 calls succeeded", ok.Load())
	}
	b, err := os.ReadFile(filepath.Join(h.state, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 20 {
		t.Fatalf("%d calls recorded", len(lines))
	}
	for _, l := range lines {
		if n, _ := strconv.Atoi(l); n > 4 || n < 1 {
			t.Fatalf("%d calls ran at once (max_parallel 4): %v", n, lines)
		}
	}
}

func TestProgressFromStderr(t *testing.T) {
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		h := start(t, era, Config{})
		p := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.6}}
		p.SetProgressToken("tok")
		res, err := h.cs.CallTool(context.Background(), p)
		if err != nil || res.IsError {
			t.Fatal(err, testkit.Text(res))
		}
		var got []*mcp.ProgressNotificationParams
		for len(h.progress) > 0 {
			got = append(got, <-h.progress)
		}
		// About 12 stderr lines over 0.6s; at most one per 100ms passes.
		if len(got) < 1 || len(got) > 8 {
			t.Fatalf("%d progress notifications", len(got))
		}
		if got[0].ProgressToken != "tok" || !strings.HasPrefix(got[0].Message, "step ") {
			t.Fatalf("progress %+v", got[0])
		}
	})
}

// writeSchema writes the example's schema, plus extra tools, to path.
func writeSchema(t *testing.T, path string, extra ...string) {
	t.Helper()
	b, err := os.ReadFile("../../examples/cli/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	s = strings.TrimSuffix(s, "]}")
	for _, e := range extra {
		s += ",\n" + e
	}
	if err := os.WriteFile(path, []byte(s+"\n]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSchemaEditAddsTool(t *testing.T) {
	testkit.UnixOnly(t, "its schema command is cat")
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		path := filepath.Join(t.TempDir(), "schema.json")
		writeSchema(t, path)
		h := start(t, era, Config{Schema: []string{"cat", path}})
		if slices.Contains(h.toolNames(), "hi") {
			t.Fatal("hi listed before the edit")
		}
		diff, err := h.srv.Refresh(context.Background())
		if err != nil || !diff.Empty() {
			t.Fatalf("unchanged schema: %+v %v", diff, err)
		}
		writeSchema(t, path, `{"name": "hi", "description": "Say hi", "parameters": {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}, "cli_command": ["greet", "--name={who}"]}`)
		diff, err = h.srv.Refresh(context.Background())
		if err != nil || !slices.Equal(diff.Added, []string{"hi"}) || !diff.Known || len(diff.Removed)+len(diff.Changed) != 0 {
			t.Fatalf("diff %+v %v", diff, err)
		}
		h.waitChanged()
		if !slices.Contains(h.toolNames(), "hi") {
			t.Fatal("hi not listed")
		}
		if g := structured(t, h.call("hi", map[string]any{"who": "Zoe"})); g["greeting"] != "Hello, Zoe!" {
			t.Fatal(g)
		}
		// A removal and a description change.
		b, _ := os.ReadFile(path)
		s := strings.Replace(string(b), `"Add two numbers"`, `"Add numbers"`, 1)
		s = strings.Replace(s, `"name": "big"`, `"name": "huge"`, 1)
		os.WriteFile(path, []byte(s), 0o644)
		diff, err = h.srv.Refresh(context.Background())
		if err != nil || fmt.Sprint(diff.Added, diff.Removed, diff.Changed) != "[huge] [big] [add]" {
			t.Fatalf("diff %+v %v", diff, err)
		}
		h.waitChanged()
		if _, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"bytes": 1}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Fatalf("a removed tool: %v", err)
		}
	})
}

func TestBrokenSchemaKeepsTools(t *testing.T) {
	testkit.UnixOnly(t, "its schema command is cat")
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		path := filepath.Join(t.TempDir(), "schema.json")
		writeSchema(t, path)
		h := start(t, era, Config{Schema: []string{"cat", path}})
		before := h.toolNames()
		// A template naming an undeclared parameter, on line 2.
		os.WriteFile(path, []byte("{\"tools\": [\n  {\"name\": \"greet\", \"parameters\": {\"type\": \"object\"}, \"cli_command\": [\"greet\", \"{nme}\"]}]}\n"), 0o644)
		_, err := h.srv.Refresh(context.Background())
		se, ok := err.(*schemaError)
		if !ok || se.Line != 2 || se.Col != 80 || se.Pointer != "/tools/0/cli_command/1" {
			t.Fatalf("got %#v", err)
		}
		if got := h.toolNames(); !slices.Equal(got, before) {
			t.Fatalf("tools %v after a broken schema, want %v", got, before)
		}
		r := h.call("greet", map[string]any{"name": "Bob"})
		if g := structured(t, r); g["greeting"] != "Hello, Bob!" {
			t.Fatal(g)
		}
		if !strings.Contains(testkit.Text(r), "could not be re-read") || !strings.Contains(testkit.Text(r), "line 2 col 80") {
			t.Fatalf("the agent is not told: %q", testkit.Text(r))
		}
		rc := h.call("recompile", nil)
		if !rc.IsError || !strings.Contains(testkit.Text(rc), "line 2 col 80 at /tools/0/cli_command/1") || !strings.Contains(testkit.Text(rc), "nme") {
			t.Fatalf("recompile: %q", testkit.Text(rc))
		}
		// Invalid JSON, a failing and a hanging schema command keep them too.
		os.WriteFile(path, []byte(`{"tools": [`), 0o644)
		if _, err := h.srv.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "invalid JSON") {
			t.Fatalf("truncated: %v", err)
		}
		os.Remove(path)
		if _, err := h.srv.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "exited with status 1") {
			t.Fatalf("failing command: %v", err)
		}
		// Fixed: the note goes away, no list change was needed.
		writeSchema(t, path)
		diff, err := h.srv.Refresh(context.Background())
		if err != nil || !diff.Empty() {
			t.Fatalf("fixed: %+v %v", diff, err)
		}
		if r := h.call("greet", map[string]any{"name": "Bob"}); strings.Contains(testkit.Text(r), "could not be re-read") {
			t.Fatalf("stale note: %q", testkit.Text(r))
		}
		select {
		case <-h.changed:
			t.Fatal("list_changed with no change")
		case <-time.After(100 * time.Millisecond):
		}
	})
}

func TestSchemaCommandTimeout(t *testing.T) {
	s := New(Config{Schema: []string{testkit.ExampleCLI(t), "slow", "--seconds", "60", "--child"}, SchemaTimeout: 300 * time.Millisecond})
	defer s.Close()
	diff, err := s.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") || diff.Known {
		t.Fatalf("%+v %v", diff, err)
	}
}

// TestImplementationEdit: the CLI rebuilt between two calls serves the new
// code on the second call, with no refresh and no restart.
func TestImplementationEdit(t *testing.T) {
	testkit.SkipUnderWine(t, "no Go toolchain under Wine: the edit rebuilds the CLI with go")
	dir := t.TempDir()
	for _, f := range []string{"main.go", "schema.json"} {
		b, err := os.ReadFile(filepath.Join("../../examples/cli", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/cli\n\ngo 1.22\n"), 0o644)
	bin := filepath.Join(dir, "tool")
	build := func() {
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	build()
	h := start(t, testkit.Modern, Config{Schema: []string{bin, "schema", "--json"}, Command: []string{bin}})
	if g := structured(t, h.call("greet", map[string]any{"name": "Bob"})); g["greeting"] != "Hello, Bob!" {
		t.Fatal(g)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(strings.Replace(string(b), `"Hello, "`, `"Howdy, "`, 1)), 0o644)
	build()
	if g := structured(t, h.call("greet", map[string]any{"name": "Bob"})); g["greeting"] != "Howdy, Bob!" {
		t.Fatalf("after the edit: %v", g)
	}
}

type fakeRecompiler struct {
	srv   *Server
	ok    bool
	calls atomic.Int32
}

func (f *fakeRecompiler) Recompile(ctx context.Context, _ func(string)) result.Build {
	f.calls.Add(1)
	b := result.Build{OK: f.ok, Duration: time.Millisecond, Trigger: "recompile"}
	if !f.ok {
		b.Errors = "main.go:3: syntax error"
		b.Err = fmt.Errorf("exit status 1")
		return b
	}
	b.Restart, _ = f.srv.Restart(ctx)
	return b
}

func TestRecompileTool(t *testing.T) {
	testkit.UnixOnly(t, "its schema command is cat")
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		path := filepath.Join(t.TempDir(), "schema.json")
		writeSchema(t, path)
		rc := &fakeRecompiler{ok: true}
		h := start(t, era, Config{Schema: []string{"cat", path}, Recompile: rc.Recompile})
		rc.srv = h.srv
		writeSchema(t, path, `{"name": "hi", "parameters": {"type": "object"}, "cli_command": ["greet", "--name", "x"]}`)
		r := h.call("recompile", nil)
		if r.IsError || !strings.Contains(testkit.Text(r), "build: ok") || !strings.Contains(testkit.Text(r), "+hi") || rc.calls.Load() != 1 {
			t.Fatalf("recompile: %q", testkit.Text(r))
		}
		h.waitChanged()
		rc.ok = false
		r = h.call("recompile", nil)
		if !r.IsError || !strings.Contains(testkit.Text(r), "build: FAILED") || !strings.Contains(testkit.Text(r), "syntax error") || !strings.Contains(testkit.Text(r), "unchanged") {
			t.Fatalf("failed build: %q", testkit.Text(r))
		}
		restart, err := h.srv.Restart(context.Background())
		if err != nil || restart.Gen != 3 || !restart.OK() || !restart.Tools.Empty() {
			t.Fatalf("Restart %+v %v", restart, err)
		}
	})
}

func TestRecompileNameTaken(t *testing.T) {
	testkit.UnixOnly(t, "its schema command is cat")
	path := filepath.Join(t.TempDir(), "schema.json")
	writeSchema(t, path, `{"name": "recompile", "parameters": {"type": "object"}, "cli_command": ["x"]}`)
	s := New(Config{Schema: []string{"cat", path}})
	defer s.Close()
	_, err := s.Refresh(context.Background())
	if se, ok := err.(*schemaError); !ok || !strings.Contains(se.Msg, "taken") || se.Line == 0 {
		t.Fatalf("%v", err)
	}
}

// TestClientGoneKillsTheGroup: the client's end of stdio closes (the
// client died) while a call runs; the call's process group is killed and
// Serve returns.
func TestClientGoneKillsTheGroup(t *testing.T) {
	testkit.UnixOnly(t, "Windows: a child the CLI starts at once escapes the Job Object, which it joins just after its start (README, Platforms: known gap)")
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		state := t.TempDir()
		s := New(Config{Schema: []string{testkit.ExampleCLI(t), "schema", "--json"}, Env: append(os.Environ(), "EXAMPLE_CLI_STATE="+state)})
		if _, err := s.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- wire.Serve(context.Background(), wire.NewReader(sr, 0), sw, s, wire.ServeOptions{}) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: era.Version})
		if err != nil {
			t.Fatal(err)
		}
		go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 60, "child": true}})
		waitFile(t, filepath.Join(state, "child.pid"))
		cw.Close()
		cr.Close()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return when the client went")
		}
		h := &harness{t: t, state: state}
		h.assertNoProcessLeft()
	})
}

func TestLogs(t *testing.T) {
	var buf testkit.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := start(t, testkit.Modern, Config{Logger: log})
	h.call("fail", map[string]any{"status": 4})
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="cli schema refreshed" tools=7 added="[add args big count fail greet slow]"`,
		`level=DEBUG msg="cli call" tool=fail argv="[` + strings.ReplaceAll(testkit.ExampleCLI(t), `\`, `\\`) + ` fail 4]" exit=4 err=<nil> duration=`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

func TestKilledBySignal(t *testing.T) {
	testkit.UnixOnly(t, "sh and kill -KILL")
	h := start(t, testkit.Legacy, Config{Command: []string{"sh", "-c", "echo out; echo err >&2; kill -KILL $$", "sh"}})
	r := h.call("fail", map[string]any{"status": 1})
	if s := testkit.Text(r); !r.IsError || !strings.Contains(s, "signal: killed") || !strings.Contains(s, "out") || !strings.Contains(s, "err") {
		t.Fatalf("got %v %q", r.IsError, s)
	}
}
