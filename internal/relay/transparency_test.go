package relay

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTransparencyEverythingServer runs the Go SDK's conformance
// "everything" server directly and through the relay, asks both the same
// questions with the same client, and requires the same answers, apart
// from what the relay documents it changes (its own tool, listChanged).
func TestTransparencyEverythingServer(t *testing.T) {
	t.Parallel()
	bin := testkit.Build(t, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	testkit.EachEra(t, func(t *testing.T, era testkit.Era) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "transparency", Version: "1"}, nil)
		copts := &mcp.ClientSessionOptions{ProtocolVersion: era.Version}

		direct, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, copts)
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()

		r := New(Config{Child: Child{Command: []string{bin}}})
		c2rR, c2rW := io.Pipe()
		r2cR, r2cW := io.Pipe()
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = serve(context.Background(), r, c2rR, r2cW)
			r2cW.Close()
		}()
		defer func() { c2rW.Close(); <-served }()
		if _, err := r.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		relayed, err := client.Connect(ctx, &mcp.IOTransport{Reader: r2cR, Writer: c2rW, MaxLineLength: -1}, copts)
		if err != nil {
			t.Fatal(err)
		}
		defer relayed.Close()

		type question struct {
			name string
			ask  func(cs *mcp.ClientSession) (any, error)
		}
		call := func(name string, args map[string]any) func(cs *mcp.ClientSession) (any, error) {
			return func(cs *mcp.ClientSession) (any, error) {
				return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			}
		}
		questions := []question{
			{"tools/list", func(cs *mcp.ClientSession) (any, error) {
				res, err := cs.ListTools(ctx, nil)
				if err == nil {
					res.Tools = slices.DeleteFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "recompile" })
				}
				return res, err
			}},
			{"prompts/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListPrompts(ctx, nil) }},
			{"prompts/get", func(cs *mcp.ClientSession) (any, error) {
				return cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
			}},
			{"resources/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResources(ctx, nil) }},
			{"resources/templates/list", func(cs *mcp.ClientSession) (any, error) { return cs.ListResourceTemplates(ctx, nil) }},
			{"resources/read text", func(cs *mcp.ClientSession) (any, error) {
				return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
			}},
			{"resources/read binary", func(cs *mcp.ClientSession) (any, error) {
				return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-binary"})
			}},
			{"resources/read template", func(cs *mcp.ClientSession) (any, error) {
				return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
			}},
			{"call text", call("test_simple_text", nil)},
			{"call image", call("test_image_content", nil)},
			{"call audio", call("test_audio_content", nil)},
			{"call embedded", call("test_embedded_resource", nil)},
			{"call multiple", call("test_multiple_content_types", nil)},
			{"call error", call("test_error_handling", nil)},
			{"call unknown tool", call("no_such_tool", nil)},
		}
		for _, q := range questions {
			a, errA := q.ask(direct)
			b, errB := q.ask(relayed)
			ja, jb := normalize(t, a, errA), normalize(t, b, errB)
			if ja != jb {
				t.Errorf("%s differs:\ndirect:  %s\nrelayed: %s", q.name, ja, jb)
			}
		}
		// Capabilities: the same but for the forced listChanged flags.
		ca, cb := direct.InitializeResult().Capabilities, relayed.InitializeResult().Capabilities
		if cb.Tools == nil || !cb.Tools.ListChanged {
			t.Errorf("relayed tools.listChanged not forced: %+v", cb.Tools)
		}
		ca.Tools, cb.Tools = nil, nil
		if ca.Prompts != nil {
			ca.Prompts.ListChanged = true
		}
		if ca.Resources != nil {
			ca.Resources.ListChanged = true
		}
		if ja, jb := normalize(t, ca, nil), normalize(t, cb, nil); ja != jb {
			t.Errorf("capabilities differ beyond listChanged:\ndirect:  %s\nrelayed: %s", ja, jb)
		}
	})
}

// normalize renders a result or error for comparison.
func normalize(t *testing.T, v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, mErr := json.Marshal(v)
	if mErr != nil {
		t.Fatal(mErr)
	}
	return strings.TrimSpace(string(b))
}
