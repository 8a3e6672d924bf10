package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// CLIClient is the name mcpflow tools and call give their MCP client.
const CLIClient = wire.OneShotClient

// SessionTimeout bounds one session of mcpflow tools or call.
const SessionTimeout = 10 * time.Minute

// SessionTools is an instance's Tools: each request opens a session of
// its own as CLIClient, asks and closes.
type SessionTools struct {
	Opener  wire.Opener
	Log     *slog.Logger
	Version string // the client's version
}

func (t SessionTools) ListTools(ctx context.Context) (json.RawMessage, error) {
	return t.session(ctx, ListToolsOn)
}

func (t SessionTools) CallTool(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return t.session(ctx, func(ctx context.Context, cs *mcp.ClientSession) (json.RawMessage, error) {
		return CallToolOn(ctx, cs, name, args)
	})
}

func (t SessionTools) session(ctx context.Context, do func(context.Context, *mcp.ClientSession) (json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, SessionTimeout)
	defer cancel()
	cs, err := NewCLIClient(t.Version).Connect(ctx, wire.SessionTransport(t.Opener, t.Log.With("from", CLIClient)), nil)
	if err != nil {
		return nil, fmt.Errorf("opening a session: %w", err)
	}
	defer cs.Close()
	return do(ctx, cs)
}

// NewCLIClient is the MCP client of mcpflow tools and call.
func NewCLIClient(version string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: CLIClient, Version: version}, nil)
}

// ListToolsOn is the tools/list result of every page, as one result; an
// error saying why when mcpflow answered for a server that does not run
// (wire.DownMeta): a failed build, a missing program, a build still running.
func ListToolsOn(ctx context.Context, cs *mcp.ClientSession) (json.RawMessage, error) {
	all := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	p := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if down, _ := res.Meta[wire.DownMeta].(string); down != "" {
			return nil, errors.New(down)
		}
		all.Tools = append(all.Tools, res.Tools...)
		if p.Cursor = res.NextCursor; p.Cursor == "" {
			return json.Marshal(all)
		}
	}
}

// CallToolOn is the tools/call result of name with args (none when empty).
func CallToolOn(ctx context.Context, cs *mcp.ClientSession, name string, args json.RawMessage) (json.RawMessage, error) {
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

// WriteTools writes one block per tool: its name, description and
// arguments, the required ones first.
func WriteTools(w io.Writer, tools []*mcp.Tool) {
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
		req := func(n string) bool { return slices.Contains(schema.Required, n) }
		names := slices.Sorted(maps.Keys(schema.Properties))
		optional := slices.DeleteFunc(slices.Clone(names), req)
		names = append(slices.DeleteFunc(names, func(n string) bool { return !req(n) }), optional...)
		for _, n := range names {
			p := schema.Properties[n]
			kind := "any"
			switch ty := p.Type.(type) {
			case string:
				kind = ty
			case []any:
				kind = strings.Trim(strings.ReplaceAll(fmt.Sprint(ty), " ", "|"), "[]")
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

// WriteResult writes a tool's result: text as text, other content as a
// line saying what it is; with no content, the structured content.
func WriteResult(w io.Writer, res *mcp.CallToolResult) {
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
