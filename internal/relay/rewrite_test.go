package relay

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

func testRelay(cfg Config) *Relay {
	cfg.Logger = nil
	return New(cfg)
}

func TestInjectToolsPagination(t *testing.T) {
	t.Parallel()
	r := testRelay(Config{Tools: Tools{Recompile: "recompile"}})
	cases := []struct {
		name   string
		in     string
		inject bool
	}{
		{"last page", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}`, true},
		{"empty list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[ ]}}`, true},
		{"null cursor", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":null}}`, true},
		{"middle page", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"p2"}}`, false},
	}
	for _, c := range cases {
		env, err := wire.Peek([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		out := r.ownTools.inject([]byte(c.in), env)
		var m struct {
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s: invalid JSON out: %s", c.name, out)
		}
		has := false
		for _, tl := range m.Result.Tools {
			if tl.Name == "recompile" {
				has = true
			}
		}
		if has != c.inject {
			t.Errorf("%s: injected=%v, want %v: %s", c.name, has, c.inject, out)
		}
		if !c.inject && !bytes.Equal(out, []byte(c.in)) {
			t.Errorf("%s: bytes changed without injection", c.name)
		}
	}
}

func TestForcedResult(t *testing.T) {
	t.Parallel()
	in := `{"protocolVersion":"2025-11-25","capabilities":{"prompts":{},"logging":{},"x-custom":{"a":1}},"serverInfo":{"name":"s","version":"1.0"},"instructions":"hi","extra":[1]}`
	out, err := forcedResult([]byte(in), true, "-dev")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(out, &m)
	caps := m["capabilities"].(map[string]any)
	if caps["tools"].(map[string]any)["listChanged"] != true {
		t.Errorf("tools not added: %s", out)
	}
	if caps["prompts"].(map[string]any)["listChanged"] != true {
		t.Errorf("prompts not forced: %s", out)
	}
	if _, ok := caps["resources"]; ok {
		t.Errorf("resources invented: %s", out)
	}
	if caps["x-custom"].(map[string]any)["a"] != float64(1) || m["instructions"] != "hi" || m["extra"] == nil {
		t.Errorf("unknown fields lost: %s", out)
	}
	if m["serverInfo"].(map[string]any)["name"] != "s-dev" || m["serverInfo"].(map[string]any)["version"] != "1.0-dev" {
		t.Errorf("suffix: %s", out)
	}
}

func TestDiffTools(t *testing.T) {
	t.Parallel()
	old := []toolInfo{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "old"}}
	cur := []toolInfo{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{}}}`)}, {Name: "reverse"}}
	d := diffTools(old, cur, true)
	if line := d.String(); line != "~echo (input schema changed) +reverse -old" {
		t.Fatalf("diff = %q", line)
	}
	if len(d.Details) != 2 || !d.Details["echo"].SchemaChanged || d.Details["reverse"].SchemaChanged {
		t.Fatalf("details = %v", d.Details)
	}
	if !slices.Equal(d.Added, []string{"reverse"}) || !slices.Equal(d.Removed, []string{"old"}) ||
		!slices.Equal(d.Changed, []string{"echo"}) || !slices.Equal(d.Current, []string{"echo", "reverse"}) {
		t.Fatalf("diff = %+v", d)
	}
	if d := diffTools(nil, cur, false); d.Known || d.String() != "" || len(d.Current) != 2 {
		t.Fatalf("unknown baseline: %+v", d)
	}
}
