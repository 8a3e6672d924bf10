package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/ops/control"
	"github.com/mcpflow/mcpflow/internal/project"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// The person's use of the server from a terminal: mcpflow tools, mcpflow
// call. Against the instance running in this project they go through its
// control socket, where the instance opens a session of its own on the
// server it serves (sessionTools); with none running, they start one
// (mcpflow watch, this binary) for the one request and stop it.

const toolsUsage = `Usage:
  mcpflow tools [--json] [-c FILE] [--pid PID]

Lists the tools of the server mcpflow serves in this project (in a mux,
named as the mux presents them): each tool's name, description and
arguments. It asks the running instance when there is one; else it starts
the server (mcpflow watch), asks it and stops it. With --json, prints the
tools/list result as is.

Flags:
`

const callUsage = `Usage:
  mcpflow call NAME [JSON] [--json] [-c FILE] [--pid PID]

Calls the tool NAME of the server mcpflow serves in this project, with the
arguments JSON (an object; none when left out), and prints the result: its
text as text, other content summed up. It asks the running instance when
there is one; else it starts the server (mcpflow watch), calls it and
stops it. Exit status 1 when the tool reports an error (isError; its text
goes to stderr) or the call fails. With --json, prints the tools/call
result as is.

Flags:
`

// cliClient is the name mcpflow tools and call give their MCP client.
const cliClient = "mcpflow-cli"

// sessionTimeout bounds one session of mcpflow tools or call: the
// handshake, the request and the close.
const sessionTimeout = 10 * time.Minute

// sessionTools is an instance's control.Tools: each request opens a
// session of its own on o, as a client named cliClient, asks and closes.
type sessionTools struct {
	o   wire.Opener
	log *slog.Logger
}

func (t sessionTools) ListTools(ctx context.Context) (json.RawMessage, error) {
	var res json.RawMessage
	err := t.session(ctx, func(cs *mcp.ClientSession) (err error) {
		res, err = listTools(ctx, cs)
		return err
	})
	return res, err
}

func (t sessionTools) CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	var res json.RawMessage
	err := t.session(ctx, func(cs *mcp.ClientSession) (err error) {
		res, err = callTool(ctx, cs, name, args)
		return err
	})
	return res, err
}

func (t sessionTools) session(ctx context.Context, do func(*mcp.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, sessionTimeout)
	defer cancel()
	cs, err := newCLIClient().Connect(ctx, wire.SessionTransport(t.o, t.log.With("from", cliClient)), nil)
	if err != nil {
		return fmt.Errorf("opening a session: %w", err)
	}
	defer cs.Close()
	return do(cs)
}

func newCLIClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: cliClient, Version: version()}, nil)
}

// listTools is the tools/list result of every page, as one result.
func listTools(ctx context.Context, cs *mcp.ClientSession) (json.RawMessage, error) {
	all := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		all.Tools = append(all.Tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		params.Cursor = res.NextCursor
	}
	return json.Marshal(all)
}

// callTool is the tools/call result of name with args (none when empty).
func callTool(ctx context.Context, cs *mcp.ClientSession, name string, args json.RawMessage) (json.RawMessage, error) {
	p := &mcp.CallToolParams{Name: name}
	if len(bytes.TrimSpace(args)) > 0 {
		p.Arguments = args
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", name, err)
	}
	return json.Marshal(res)
}

// toolsAsker is how a command asks: list (args nil) or call.
type toolsAsker struct {
	list func(ctx context.Context) (json.RawMessage, error)
	call func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
	done func() error // stops what the asker started
}

// asker is the instance of this project (-c FILE's, --pid's), or, with
// none running, a server started for the command.
func (s selectFlags) asker(ctx context.Context, e env) (toolsAsker, error) {
	var f control.Filter
	switch {
	case *s.pid > 0:
	case *s.cfg != "":
		f.Config = project.AbsFrom(mustGetwd(e), *s.cfg)
	default:
		f.Project = mustGetwd(e)
	}
	insts, err := control.Instances(f)
	if err != nil && !errors.Is(err, control.ErrUnsupported) {
		return toolsAsker{}, err
	}
	if len(insts) > 0 || *s.pid > 0 {
		inst, err := control.Pick(insts, *s.pid)
		if err != nil {
			return toolsAsker{}, err
		}
		c, err := control.Dial(ctx, inst)
		if err != nil {
			return toolsAsker{}, err
		}
		return toolsAsker{list: c.Tools, call: c.Call, done: c.Close}, nil
	}
	return s.startServer(ctx, e)
}

// startServer runs mcpflow watch (this binary, with -c FILE when given)
// in the working folder and connects to it over stdio; done closes its
// stdin, on which it stops its server and exits. What it logs is shown
// only when it does not start.
func (s selectFlags) startServer(ctx context.Context, e env) (toolsAsker, error) {
	self, err := os.Executable()
	if err != nil {
		return toolsAsker{}, fmt.Errorf("starting the server: %w", err)
	}
	args := []string{"watch"}
	if *s.cfg != "" {
		args = append(args, "-c", *s.cfg)
	}
	cmd := exec.Command(self, args...)
	cmd.Dir = mustGetwd(e)
	var logs bytes.Buffer
	cmd.Stderr = &logs
	fail := func(err error) error {
		if l := strings.TrimSpace(logs.String()); l != "" {
			return fmt.Errorf("%w\nmcpflow watch said:\n%s", err, l)
		}
		return err
	}
	cs, err := newCLIClient().Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return toolsAsker{}, fail(fmt.Errorf("starting the server (mcpflow %s): %w", strings.Join(args, " "), err))
	}
	return toolsAsker{
		list: func(ctx context.Context) (json.RawMessage, error) { return listTools(ctx, cs) },
		call: func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			return callTool(ctx, cs, name, args)
		},
		done: cs.Close,
	}, nil
}

func cmdTools(e env, args []string) int {
	fs := newFlagSet(e, "tools", toolsUsage)
	asJSON := fs.Bool("json", false, "print the tools/list result as JSON, as the server sent it")
	sel := addSelectFlags(fs, true)
	rest, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(rest) > 0 {
		fmt.Fprintf(e.stderr, "mcpflow tools: unexpected argument %q\n", rest[0])
		return exitUsage
	}
	return askTools(e, sel, func(ctx context.Context, a toolsAsker) int {
		raw, err := a.list(ctx)
		if err != nil {
			fmt.Fprintln(e.stderr, "mcpflow:", err)
			return exitFailure
		}
		if *asJSON {
			return printJSON(e, raw)
		}
		var res mcp.ListToolsResult
		if err := json.Unmarshal(raw, &res); err != nil {
			fmt.Fprintln(e.stderr, "mcpflow: the tools/list result:", err)
			return exitFailure
		}
		writeTools(e.stdout, res.Tools)
		return exitOK
	})
}

func cmdCall(e env, args []string) int {
	fs := newFlagSet(e, "call", callUsage)
	asJSON := fs.Bool("json", false, "print the tools/call result as JSON, as the server sent it")
	sel := addSelectFlags(fs, true)
	rest, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(rest) < 1 || len(rest) > 2 {
		fmt.Fprintln(e.stderr, "mcpflow call: takes a tool name and, optionally, its arguments as one JSON object")
		return exitUsage
	}
	name, callArgs := rest[0], json.RawMessage(nil)
	if len(rest) == 2 {
		callArgs = json.RawMessage(rest[1])
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(callArgs, &obj); err != nil || obj == nil {
			fmt.Fprintf(e.stderr, "mcpflow call: the arguments must be a JSON object, e.g. '{\"text\":\"hi\"}': %.60q\n", rest[1])
			return exitUsage
		}
	}
	return askTools(e, sel, func(ctx context.Context, a toolsAsker) int {
		raw, err := a.call(ctx, name, callArgs)
		if err != nil {
			fmt.Fprintln(e.stderr, "mcpflow:", err)
			return exitFailure
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			fmt.Fprintln(e.stderr, "mcpflow: the tools/call result:", err)
			return exitFailure
		}
		switch {
		case *asJSON:
			if code := printJSON(e, raw); code != exitOK {
				return code
			}
		case res.IsError:
			fmt.Fprintf(e.stderr, "mcpflow: tool %s failed:\n", name)
			writeResult(e.stderr, &res)
		default:
			writeResult(e.stdout, &res)
		}
		if res.IsError {
			return exitFailure
		}
		return exitOK
	})
}

// askTools runs do with the asker the flags select, bounded by
// sessionTimeout and ended by Ctrl-C, and stops the asker.
func askTools(e env, sel selectFlags, do func(context.Context, toolsAsker) int) int {
	ctx, cancel := interruptible()
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, sessionTimeout)
	defer cancelT()
	a, err := sel.asker(ctx, e)
	if err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	code := do(ctx, a)
	if err := a.done(); err != nil && code == exitOK {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	return code
}

// printJSON prints raw indented, for a person reading a script's input.
func printJSON(e env, raw json.RawMessage) int {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	b.WriteByte('\n')
	if _, err := e.stdout.Write(b.Bytes()); err != nil {
		fmt.Fprintln(e.stderr, "mcpflow:", err)
		return exitFailure
	}
	return exitOK
}

// writeTools writes one block per tool: its name, its description, and
// each argument with its type, whether it is required, and its
// description (the required ones first).
func writeTools(w io.Writer, tools []*mcp.Tool) {
	if len(tools) == 0 {
		fmt.Fprintln(w, "no tools")
		return
	}
	for i, t := range tools {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, t.Name)
		if d := strings.TrimSpace(t.Description); d != "" {
			for _, l := range strings.Split(d, "\n") {
				fmt.Fprintln(w, "  "+l)
			}
		}
		var schema struct {
			Properties map[string]struct {
				Type        any    `json:"type"`
				Description string `json:"description"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if b, err := json.Marshal(t.InputSchema); err == nil {
			json.Unmarshal(b, &schema)
		}
		if len(schema.Properties) == 0 {
			fmt.Fprintln(w, "  arguments: none")
			continue
		}
		fmt.Fprintln(w, "  arguments:")
		names := make([]string, 0, len(schema.Properties))
		for n := range schema.Properties {
			names = append(names, n)
		}
		req := func(n string) bool { return slices.Contains(schema.Required, n) }
		slices.SortFunc(names, func(a, b string) int {
			if req(a) != req(b) {
				if req(a) {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, n := range names {
			p := schema.Properties[n]
			kind := "any"
			switch ty := p.Type.(type) {
			case string:
				kind = ty
			case []any:
				kind = strings.Trim(strings.ReplaceAll(fmt.Sprint(ty...), " ", "|"), "[]")
			}
			if req(n) {
				kind += ", required"
			}
			line := fmt.Sprintf("    %s (%s)", n, kind)
			if d := strings.TrimSpace(p.Description); d != "" {
				line += "  " + strings.ReplaceAll(d, "\n", " ")
			}
			fmt.Fprintln(w, line)
		}
	}
}

// writeResult writes a tool's result: text content as text, other
// content as a line saying what it is; with no content, the structured
// content as JSON.
func writeResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, strings.TrimSuffix(c.Text, "\n"))
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image: %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio: %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link: %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
				fmt.Fprintln(w, "[resource]")
			case r.Text != "":
				fmt.Fprintln(w, strings.TrimSuffix(r.Text, "\n"))
			default:
				fmt.Fprintf(w, "[resource: %s, %s, %d bytes]\n", r.URI, r.MIMEType, len(r.Blob))
			}
		default:
			fmt.Fprintf(w, "[%T content]\n", c)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if b, err := json.MarshalIndent(res.StructuredContent, "", "  "); err == nil {
			fmt.Fprintln(w, string(b))
		}
	}
}
