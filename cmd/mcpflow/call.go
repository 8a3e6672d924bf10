package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/config"
	"github.com/mcpflow/mcpflow/internal/ops/control"
)

// mcpflow tools and call ask the instance running in this project, on a
// session of its own (control.SessionTools); with none running, a server
// started for the one request (mcpflow watch, this binary).

const toolsUsage = `  mcpflow tools [--json] [-c FILE] [--pid PID]

Lists the tools of the server mcpflow serves in this project (in a mux,
named as the mux presents them): each tool's name, description and
arguments. It asks the running instance when there is one; else it starts
the server (mcpflow watch), asks it and stops it. With --json, prints the
tools/list result as is.
`

const callUsage = `  mcpflow call NAME [JSON] [--json] [-c FILE] [--pid PID]

Calls the tool NAME of the server mcpflow serves in this project, with the
arguments JSON (an object; none when left out), and prints the result: its
text as text, other content summed up. It asks the running instance when
there is one; else it starts the server (mcpflow watch), calls it and
stops it. Exit status 1 when the tool reports an error (isError; its text
goes to stderr) or the call fails. With --json, prints the tools/call
result as is.
`

// toolsAsker is how a command asks: list (args nil) or call.
type toolsAsker struct {
	list func(ctx context.Context) (json.RawMessage, error)
	call func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
	done func() error // stops what the asker started
}

// asker is this project's instance (-c FILE's, --pid's), else a server started for it.
func (s selectFlags) asker(ctx context.Context, e env) (toolsAsker, error) {
	var f control.Filter
	switch {
	case *s.pid > 0:
	case *s.cfg != "":
		f.Config = config.AbsFrom(mustGetwd(e), *s.cfg)
	default:
		f.Project = mustGetwd(e)
	}
	insts, err := control.Instances(f)
	if err != nil {
		return toolsAsker{}, err
	}
	if len(insts) > 0 || *s.pid > 0 {
		inst, err := control.Pick(insts, *s.pid)
		if err != nil {
			return toolsAsker{}, err
		}
		c := control.Dial(inst)
		return toolsAsker{list: c.Tools, call: c.Call, done: c.Close}, nil
	}
	return s.startServer(ctx, e)
}

// startServer runs mcpflow watch (this binary, -c FILE when given) and
// connects over stdio; its log is shown only when it does not start.
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
	cs, err := control.NewCLIClient(version()).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		err = fmt.Errorf("starting the server (mcpflow %s): %w", strings.Join(args, " "), err)
		if l := strings.TrimSpace(logs.String()); l != "" {
			err = fmt.Errorf("%w\nmcpflow watch said:\n%s", err, l)
		}
		return toolsAsker{}, err
	}
	return toolsAsker{
		list: func(ctx context.Context) (json.RawMessage, error) { return control.ListToolsOn(ctx, cs) },
		call: func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			return control.CallToolOn(ctx, cs, name, args)
		},
		done: cs.Close,
	}, nil
}

func cmdTools(e env, args []string) int {
	fs := newFlagSet(e, "tools", toolsUsage)
	asJSON := fs.Bool("json", false, "print the tools/list result as JSON, as the server sent it")
	sel := addSelectFlags(fs, true)
	return fs.parse(args, func(rest []string) int {
		if len(rest) > 0 {
			return e.fail(exitUsage, "mcpflow tools: unexpected argument %q", rest[0])
		}
		return askTools(e, sel, func(ctx context.Context, a toolsAsker) int {
			raw, err := a.list(ctx)
			if err != nil {
				return e.fail(exitFailure, "mcpflow: %v", err)
			}
			if *asJSON {
				return printJSON(e, raw)
			}
			var res mcp.ListToolsResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return e.fail(exitFailure, "mcpflow: the tools/list result: %v", err)
			}
			control.WriteTools(e.stdout, res.Tools)
			return exitOK
		})
	})
}

func cmdCall(e env, args []string) int {
	fs := newFlagSet(e, "call", callUsage)
	asJSON := fs.Bool("json", false, "print the tools/call result as JSON, as the server sent it")
	sel := addSelectFlags(fs, true)
	return fs.parse(args, func(rest []string) int {
		if len(rest) < 1 || len(rest) > 2 {
			return e.fail(exitUsage, "mcpflow call: takes a tool name and, optionally, its arguments as one JSON object")
		}
		name, callArgs := rest[0], json.RawMessage(nil)
		if len(rest) == 2 {
			callArgs = json.RawMessage(rest[1])
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(callArgs, &obj); err != nil || obj == nil {
				return e.fail(exitUsage, "mcpflow call: the arguments must be a JSON object, e.g. '{\"text\":\"hi\"}': %.60q", rest[1])
			}
		}
		return askTools(e, sel, func(ctx context.Context, a toolsAsker) int {
			raw, err := a.call(ctx, name, callArgs)
			if err != nil {
				return e.fail(exitFailure, "mcpflow: %v", err)
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return e.fail(exitFailure, "mcpflow: the tools/call result: %v", err)
			}
			switch {
			case *asJSON:
				if code := printJSON(e, raw); code != exitOK {
					return code
				}
			case res.IsError:
				fmt.Fprintf(e.stderr, "mcpflow: tool %s failed:\n", name)
				control.WriteResult(e.stderr, &res)
			default:
				control.WriteResult(e.stdout, &res)
			}
			if res.IsError {
				return exitFailure
			}
			return exitOK
		})
	})
}

// askTools runs do with the asker sel selects, until Ctrl-C or control.SessionTimeout.
func askTools(e env, sel selectFlags, do func(context.Context, toolsAsker) int) int {
	ctx, cancel := signal.NotifyContext(context.Background(), stopSignals...) // Ctrl-C
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, control.SessionTimeout)
	defer cancelT()
	a, err := sel.asker(ctx, e)
	if err != nil {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	code := do(ctx, a)
	if err := a.done(); err != nil && code == exitOK {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	return code
}

// printJSON prints raw indented, for a person reading a script's input.
func printJSON(e env, raw json.RawMessage) int {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	b.WriteByte('\n')
	if _, err := e.stdout.Write(b.Bytes()); err != nil {
		return e.fail(exitFailure, "mcpflow: %v", err)
	}
	return exitOK
}
