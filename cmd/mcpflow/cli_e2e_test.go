//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The CLI-tools end-to-end tests run the real mcpflow binary on a copy of
// examples/cli (built by the [build] step, as a user's project is) and
// talk to it with the Go SDK client, in both eras. The example records
// each call's pid in state/pids and a grandchild's in state/child.pid.

const cliTOML = `[build]
command = "go build -o .mcpflow/tool ."

[cli]
schema = %s
timeout = "%s"
max_output = "64KiB"
max_parallel = 4
env = { EXAMPLE_CLI_STATE = %q }

[watch]
paths = ["."]
include = ["**/*.go", "schema.json"]
debounce = "50ms"

[relay]
# The first list must hold the CLI's tools however long the build takes.
startup_grace = "10m"

[log]
level = "debug"
`

// cliProject copies examples/cli into a temp dir with its own go.mod and
// a config; schema is the TOML of cli.schema ("" = the example's).
func cliProject(t *testing.T, schema, timeout string) (dir, state string) {
	t.Helper()
	dir = t.TempDir()
	state = filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"main.go", "schema.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "cli", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if schema == "" {
		schema = `[".mcpflow/tool", "schema", "--json"]`
	}
	files := map[string]string{
		"go.mod":       "module clidemo\n\ngo 1.22\n",
		"mcpflow.toml": fmt.Sprintf(cliTOML, schema, timeout, state),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { testkit.Procs{Dir: dir}.Kill() })
	return dir, state
}

// callRaw calls a tool and returns the whole result.
func (h *e2e) callRaw(ctx context.Context, name string, args map[string]any) *mcp.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("call %s: %v\nstderr:\n%s", name, err, h.stderr.String())
	}
	return res
}

// callPids are the pids of the CLI's calls so far, and the grandchild's.
func callPids(t *testing.T, state string) []int {
	t.Helper()
	var pids []int
	for _, name := range []string{"pids", "child.pid"} {
		b, _ := os.ReadFile(filepath.Join(state, name))
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s: %q", name, b)
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

// noLeftovers fails unless, within a few seconds, none of pids lives and
// no process but mcpflow (h.cmd, until it has exited) works in dir or
// descends from it.
func noLeftovers(t *testing.T, h *e2e, pids []int) {
	t.Helper()
	var self []int
	select {
	case err := <-h.exited:
		h.exited <- err
	default:
		self = []int{h.cmd.Process.Pid}
	}
	testkit.NoLeftovers(t, testkit.Procs{Pids: pids, Dir: h.dir, Tag: h.tag, Except: self})
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, path+" to appear", func() bool {
		b, err := os.ReadFile(path)
		return err == nil && len(b) > 0
	})
}

// TestE2ECLICalls: the tools of the schema, every parameter type, an
// absent optional, a non-zero exit, an oversize output, a timeout and a
// cancel that leave no process, 20 parallel calls with max_parallel 4.
func TestE2ECLICalls(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir, state := cliProject(t, "", "4s")
			var mu sync.Mutex
			var progress []string
			h := startE2EWith(t, dir, era.Version, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					progress = append(progress, r.Params.Message)
					mu.Unlock()
				},
			}, "watch")
			// The first list waits for the build and the schema.
			want := []string{"add", "args", "big", "count", "fail", "greet", "recompile", "slow"}
			if got := h.tools(); !slices.Equal(sortedCopy(got), want) {
				t.Fatalf("tools: %v, want %v", got, want)
			}
			ctx := h.ctx()

			res := h.callRaw(ctx, "greet", map[string]any{"name": "Bob $(rm -rf /) \"x\"", "times": 2, "loud": true, "tags": []string{"a b", "c"}})
			sc, _ := res.StructuredContent.(map[string]any)
			if res.IsError || sc["greeting"] != `HELLO, BOB $(RM -RF /) "X"! HELLO, BOB $(RM -RF /) "X"!` || fmt.Sprint(sc["tags"]) != "[a b c]" {
				t.Fatalf("greet: %v %#v %v", res.IsError, res.StructuredContent, testkit.Text(res))
			}
			// An absent optional removes its flag.
			res = h.callRaw(ctx, "args", map[string]any{"s": "x y", "i": 3, "n": 1.5, "b": false, "list": []any{"p", 2}})
			sc, _ = res.StructuredContent.(map[string]any)
			if got := fmt.Sprint(sc["argv"]); res.IsError || got != "[x y --i=3 1.5 --b false p 2]" {
				t.Fatalf("args: %v %s", res.IsError, got)
			}
			// A value starting with "-" in a positional slot is refused
			// before anything runs.
			if got, isErr := h.call("args", map[string]any{"s": "--rm"}); !isErr || !strings.Contains(got, "x-cli-allow-dash") {
				t.Fatalf("dash value: %v %q", isErr, got)
			}
			if got, isErr := h.call("add", map[string]any{"a": 2, "b": "3"}); !isErr || !strings.Contains(got, "invalid arguments") {
				t.Fatalf("bad type: %v %q", isErr, got)
			}
			if got, isErr := h.call("count", map[string]any{"text": "one two three"}); isErr || got != `{"words":3}` {
				t.Fatalf("stdin tool: %v %q", isErr, got)
			}
			got, isErr := h.call("fail", map[string]any{"status": 3})
			if !isErr || !strings.Contains(got, "exited with status 3") || !strings.Contains(got, "partial output") || !strings.Contains(got, "something went wrong") {
				t.Fatalf("non-zero exit: %v %q", isErr, got)
			}
			got, isErr = h.call("big", map[string]any{"bytes": 1 << 20})
			if !isErr || !strings.Contains(got, "more than max_output (65536 bytes)") || !strings.Contains(got, "killed") {
				t.Fatalf("oversize output: %v %q", isErr, got)
			}

			// A timeout kills the call's whole process group.
			os.Remove(filepath.Join(state, "child.pid"))
			got, isErr = h.call("slow", map[string]any{"seconds": 120, "child": true})
			if !isErr || !strings.Contains(got, "timed out after 4s") {
				t.Fatalf("timeout: %v %q", isErr, got)
			}
			noLeftovers(t, h, callPids(t, state))

			// A cancel (notifications/cancelled) kills it too.
			os.Remove(filepath.Join(state, "child.pid"))
			cctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := h.cs.CallTool(cctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 120, "child": true}})
				errc <- err
			}()
			waitForFile(t, filepath.Join(state, "child.pid"))
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("canceled call returned no error")
			}
			noLeftovers(t, h, callPids(t, state))

			// Progress from stderr, with a progress token.
			res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.5}, Meta: mcp.Meta{"progressToken": "p1"}})
			if err != nil || res.IsError {
				t.Fatalf("slow: %v %v", err, res)
			}
			// (A notification may be handled after the result.)
			first := ""
			for deadline := time.Now().Add(30 * time.Second); first == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				if len(progress) > 0 {
					first = progress[0]
				}
				mu.Unlock()
			}
			if !strings.HasPrefix(first, "step ") {
				t.Fatalf("progress: first notification %q", first)
			}

			// 20 calls at once, max_parallel 4: all answered, at most 4
			// processes at a time.
			// (The killed calls above left their running/ entries.)
			os.RemoveAll(filepath.Join(state, "running"))
			os.Remove(filepath.Join(state, "calls.log"))
			var wg sync.WaitGroup
			errs := make(chan string, 20)
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 0.2}})
					if err != nil || res.IsError {
						errs <- fmt.Sprintf("call %d: %v %v", i, err, res)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
			b, _ := os.ReadFile(filepath.Join(state, "calls.log"))
			lines := strings.Fields(string(b))
			if len(lines) != 20 {
				t.Fatalf("%d calls ran, want 20", len(lines))
			}
			for _, l := range lines {
				if n, _ := strconv.Atoi(l); n > 4 {
					t.Fatalf("%d calls ran at once (max_parallel 4): %v", n, lines)
				}
			}
			// Each call that ran a process logged it (the refused ones ran
			// none), the cancel and the progress too.
			callLines(t, h, 20+8)
		})
	}
}

// callLines waits until mcpflow's log holds at least n debug lines of
// calls that ran a process, and a line holding every string of after
// (its stderr arrives on its own time), and returns the call lines.
func callLines(t *testing.T, h *e2e, n int, after ...string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var lines []string
		seen := len(after) == 0
		log := h.stderr.String()
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "cli call") {
				lines = append(lines, line)
			}
			if !seen && !slices.ContainsFunc(after, func(s string) bool { return !strings.Contains(line, s) }) {
				seen = true
			}
		}
		if len(lines) >= n && seen {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d debug log lines of calls, want %d, then %q:\n%s", len(lines), n, after, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// editFile rewrites dir/name as an editor does (temp file, rename).
func editFile(t *testing.T, dir, name string, edit func(string) string) {
	t.Helper()
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := edit(string(b))
	if out == string(b) {
		t.Fatalf("edit of %s changed nothing", name)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const shoutTool = `
  {"name": "shout", "description": "Greet loudly",
   "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
   "cli_command": ["greet", "--loud", "--name", "{name}"]},
`

// TestE2ECLIEdits: a schema edit adds a tool (list_changed, callable), an
// edit of the implementation is seen by the next call, a broken schema
// keeps the old tools and tells the agent where, and a broken build does
// too.
func TestE2ECLIEdits(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir, _ := cliProject(t, "", "60s")
			h := startE2E(t, dir, era.Version, "watch")
			if got, isErr := h.call("greet", map[string]any{"name": "Ann"}); isErr || !strings.Contains(got, "Hello, Ann!") {
				t.Fatalf("greet: %v %q", isErr, got)
			}
			drain(h.listChanged)

			editFile(t, dir, "schema.json", func(s string) string { return strings.Replace(s, "[\n", "["+shoutTool, 1) })
			h.waitListChanged()
			h.waitTools("shout")
			if got, isErr := h.call("shout", map[string]any{"name": "Ann"}); isErr || !strings.Contains(got, "HELLO, ANN!") {
				t.Fatalf("shout: %v %q", isErr, got)
			}
			if !strings.Contains(h.stderr.String(), "tools +shout") {
				t.Errorf("no tool diff in the log:\n%s", h.stderr.String())
			}

			editFile(t, dir, "main.go", func(s string) string { return strings.Replace(s, `"Hello, "`, `"Howdy, "`, 1) })
			deadline := time.Now().Add(2 * time.Minute)
			for {
				got, isErr := h.call("greet", map[string]any{"name": "Ann"})
				if isErr {
					t.Fatalf("greet after the edit: %q", got)
				}
				if strings.Contains(got, "Howdy, Ann!") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the edit never showed: %q\nstderr:\n%s", got, h.stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}

			// A broken schema: the old tools keep serving, every call and
			// recompile say what is wrong and where.
			editFile(t, dir, "schema.json", func(s string) string {
				return strings.Replace(s, `"name": "shout"`, `"name": "sh out"`, 1)
			})
			deadline = time.Now().Add(2 * time.Minute)
			for {
				got, isErr := h.call("shout", map[string]any{"name": "Ann"})
				if isErr || !strings.Contains(got, "HOWDY, ANN!") {
					t.Fatalf("shout with a broken schema: %v %q", isErr, got)
				}
				if strings.Contains(got, "could not be re-read") {
					if !strings.Contains(got, "/tools/0/name") || !strings.Contains(got, "line ") {
						t.Fatalf("schema error without its position: %q", got)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no note about the broken schema: %q\nstderr:\n%s", got, h.stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			got, isErr := h.call("recompile", nil)
			if !isErr || !strings.Contains(got, "previous tools kept") || !strings.Contains(got, "/tools/0/name") {
				t.Fatalf("recompile with a broken schema: %v %q", isErr, got)
			}

			// Fixed: recompile reports the diff.
			editFile(t, dir, "schema.json", func(s string) string { return strings.Replace(s, `"sh out"`, `"yell"`, 1) })
			deadline = time.Now().Add(2 * time.Minute)
			for !slices.Contains(h.tools(), "yell") {
				if time.Now().After(deadline) {
					t.Fatalf("yell never appeared\nstderr:\n%s", h.stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			if slices.Contains(h.tools(), "shout") {
				t.Fatal("shout still listed after its rename")
			}

			// A broken build: the program on disk still serves, the call says so.
			editFile(t, dir, "main.go", func(s string) string {
				return strings.Replace(s, "func main() {", "func main() {\n\tundefinedThing()", 1)
			})
			deadline = time.Now().Add(2 * time.Minute)
			for {
				got, isErr := h.call("greet", map[string]any{"name": "Ann"})
				if isErr || !strings.Contains(got, "Howdy, Ann!") {
					t.Fatalf("greet with a broken build: %v %q", isErr, got)
				}
				if strings.Contains(got, "the last build (watch) failed") && strings.Contains(got, "as it is on disk") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no note about the broken build: %q\nstderr:\n%s", got, h.stderr.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			got, isErr = h.call("recompile", nil)
			if !isErr || !strings.Contains(got, "undefinedThing") {
				t.Fatalf("recompile with a broken build: %v %q", isErr, got)
			}
			callLines(t, h, 1, "build failed", "trigger=recompile")
		})
	}
}

// TestE2ECLISchemaCommandFails: the agent sees why no CLI tool is served.
func TestE2ECLISchemaCommandFails(t *testing.T) {
	t.Parallel()
	for _, era := range testkit.Eras {
		t.Run(era.Name, func(t *testing.T) {
			t.Parallel()
			dir, _ := cliProject(t, `[".mcpflow/tool", "nosuch"]`, "60s")
			h := startE2E(t, dir, era.Version, "watch")
			if got := h.tools(); !slices.Equal(got, []string{"recompile"}) {
				t.Fatalf("tools: %v", got)
			}
			got, isErr := h.call("greet", map[string]any{"name": "x"})
			if !isErr || !strings.Contains(got, `schema command ".mcpflow/tool nosuch" exited with status 2`) || !strings.Contains(got, `unknown command "nosuch"`) {
				t.Fatalf("call with a failing schema command: %v %q", isErr, got)
			}
			got, isErr = h.call("recompile", nil)
			if !isErr || !strings.Contains(got, "exited with status 2") {
				t.Fatalf("recompile with a failing schema command: %v %q", isErr, got)
			}
		})
	}
}

// TestE2ECLISlowFirstBuild: past relay.startup_grace the client gets an
// answer (only recompile listed; a call says the first build is running),
// then list_changed and the tools when the build is done. The build waits
// for the test's go-ahead.
func TestE2ECLISlowFirstBuild(t *testing.T) {
	t.Parallel()
	dir, _ := cliProject(t, "", "60s")
	path := filepath.Join(dir, "mcpflow.toml")
	toml := strings.Replace(testkit.ReadFile(t, path), `command = "go build`, `command = "while [ ! -e go-ahead ]; do sleep 0.05; done; go build`, 1)
	toml = strings.Replace(toml, `startup_grace = "10m"`, `startup_grace = "300ms"`, 1)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startE2E(t, dir, "", "watch")
	if got := h.tools(); !slices.Equal(got, []string{"recompile"}) {
		t.Fatalf("tools during a slow first build: %v", got)
	}
	got, isErr := h.call("greet", map[string]any{"name": "Ann"})
	if !isErr || !strings.Contains(got, "first build and schema read are still running") {
		t.Fatalf("call during a slow first build: %v %q", isErr, got)
	}
	if err := os.WriteFile(filepath.Join(dir, "go-ahead"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitListChanged()
	h.waitTools("greet")
	if got, isErr := h.call("greet", map[string]any{"name": "Ann"}); isErr || !strings.Contains(got, "Hello, Ann!") {
		t.Fatalf("greet after the first build: %v %q", isErr, got)
	}
	// The call during the build ran nothing.
	if lines := callLines(t, h, 1); len(lines) != 1 {
		t.Errorf("calls that ran: %q, want one", lines)
	}
}

// TestE2ECLIExitLeavesNothing: however mcpflow ends, a running call's
// process and its grandchild go with it.
func TestE2ECLIExitLeavesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		stop func(h *e2e)
	}{
		{"stdin closed", func(h *e2e) { h.cs.Close() }},
		{"SIGTERM", func(h *e2e) { h.cmd.Process.Signal(syscall.SIGTERM) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The call's timeout bounds how long mcpflow waits for it once
			// stdin is closed (as it does today): the call outlives it.
			dir, state := cliProject(t, "", "10s")
			h := startE2E(t, dir, "", "watch")
			go h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": 120, "child": true}})
			waitForFile(t, filepath.Join(state, "child.pid"))
			pids := callPids(t, state)
			if len(pids) != 2 {
				t.Fatalf("pids: %v", pids)
			}
			c.stop(h)
			select {
			case err := <-h.exited:
				if err != nil {
					t.Fatalf("mcpflow exit: %v", err)
				}
				h.exited <- nil
			case <-time.After(20 * time.Second):
				t.Fatal("mcpflow did not exit")
			}
			noLeftovers(t, h, pids)
		})
	}
}

// TestInitCLI: init --cli writes a [cli] config that loads, and check
// shows it.
func TestInitCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getwd: func() (string, error) { return dir, nil }}
	if code := cmdInit(e, []string{"--cli", `./bin/tool schema --json "two words"`}); code != exitOK {
		t.Fatalf("init --cli: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := cmdCheck(e, []string{"-c", filepath.Join(dir, "mcpflow.toml")}); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"# mode: cli", "[cli]\n", `schema = ["./bin/tool", "schema", "--json", "two words"]`, `command = ["./bin/tool"]`, "max_parallel = 4"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check output lacks %q:\n%s", want, out.String())
		}
	}
	if code := cmdInit(e, []string{"--force", "--cli", `./tool 'open`}); code != exitUsage || !strings.Contains(errOut.String(), "unclosed '") {
		t.Errorf("init --cli with a bad command line: exit %d, %q", code, errOut.String())
	}
}

// BenchmarkE2ECLI times [cli] through a mcpflow binary built without the
// race detector ($MCPFLOW_BIN; `make bench` sets it), serving examples/cli
// with no build step and no watch, against the same work done directly:
//   - call: tools/call add, against exec of the argv it runs (fork/exec in
//     both);
//   - refresh: recompile sent until tools/list_changed is read, against
//     the schema command alone (the schema flips between two versions so
//     every refresh changes the tools).
//
// Each iteration times both back to back; the overhead is the median of
// the per-iteration differences.
func BenchmarkE2ECLI(b *testing.B) {
	bin := os.Getenv("MCPFLOW_BIN")
	if bin == "" {
		b.Skip("set MCPFLOW_BIN to a mcpflow binary built without -race (make bench does)")
	}
	dir := b.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "tool"), "../../examples/cli").CombinedOutput(); err != nil {
		b.Fatalf("building examples/cli: %v\n%s", err, out)
	}
	v0, err := os.ReadFile("../../examples/cli/schema.json")
	if err != nil {
		b.Fatal(err)
	}
	v1 := []byte(strings.Replace(string(v0), "[\n", "["+shoutTool, 1))
	schema := filepath.Join(dir, "schema.json")
	os.WriteFile(schema, v0, 0o644)
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte("[cli]\nschema = [\"cat\", \"schema.json\"]\ncommand = [\"./tool\"]\n[watch]\nenabled = false\n[log]\nlevel = \"warn\"\n"), 0o644)

	for _, era := range testkit.Eras {
		changed := make(chan time.Time, 1)
		cs := benchCLI(b, bin, dir, era.Version, func() {
			select {
			case changed <- time.Now():
			default:
			}
		})
		ctx := context.Background()
		b.Run(era.Name+"/call", func(b *testing.B) {
			var base, over []time.Duration
			params := &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}
			for b.Loop() {
				direct := exec.Command("./tool", "add", "--", "1", "2")
				direct.Dir = dir
				t0 := time.Now()
				if _, err := direct.Output(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
				base = append(base, t1.Sub(t0))
				over = append(over, time.Since(t1)-t1.Sub(t0))
			}
			reportMedians(b, base, over)
		})
		b.Run(era.Name+"/refresh", func(b *testing.B) {
			var base, over []time.Duration
			i := 0
			for b.Loop() {
				i++
				os.WriteFile(schema, [][]byte{v0, v1}[i%2], 0o644)
				direct := exec.Command("cat", "schema.json")
				direct.Dir = dir
				t0 := time.Now()
				if _, err := direct.Output(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "recompile"})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
				var at time.Time
				select {
				case at = <-changed:
				case <-time.After(10 * time.Second):
					b.Fatal("no tools/list_changed")
				}
				base = append(base, t1.Sub(t0))
				over = append(over, at.Sub(t1)-t1.Sub(t0))
			}
			reportMedians(b, base, over)
		})
	}
}

// benchCLI starts bin watch in dir and connects a client speaking version.
func benchCLI(b *testing.B, bin, dir, version string, onChange func()) *mcp.ClientSession {
	b.Helper()
	cmd := exec.Command(bin, "watch")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { onChange() },
	})
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: stdout, Writer: stdin}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		cmd.Wait()
	})
	return cs
}

// reportMedians reports the medians of the direct runs and of the
// per-iteration overheads, in µs, and their ratio.
func reportMedians(b *testing.B, base, over []time.Duration) {
	med := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	if len(base) == 0 {
		return
	}
	mb, mo := med(base), med(over)
	b.ReportMetric(float64(mb.Nanoseconds())/1e3, "p50-direct-µs")
	b.ReportMetric(float64(mo.Nanoseconds())/1e3, "p50-overhead-µs")
	b.ReportMetric(float64(mb+mo)/float64(mb), "ratio")
}
