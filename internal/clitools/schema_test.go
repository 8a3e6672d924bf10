package clitools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		ptr       string
		line, col int
		msg       string
	}{
		{"syntax error", "{\"tools\": [\n  {\"name\": \"a\",,}\n]}", "", 2, 16, "invalid JSON"},
		{"no tools", `{"tool": []}`, "", 1, 1, `no "tools" array`},
		{"tools not an array", `{"tools": {}}`, "/tools", 1, 11, "want"},
		{"bad name", "{\"tools\": [\n {\"name\": \"a b\", \"cli_command\": []}]}", "/tools/0/name", 2, 11, "A-Za-z0-9_.-"},
		{"empty name", "{\"tools\": [\n {\"name\": \"\", \"cli_command\": []}]}", "/tools/0/name", 2, 11, "1-128"},
		{"long name", `{"tools": [{"name": "` + strings.Repeat("a", 129) + `", "cli_command": []}]}`, "/tools/0/name", 1, 21, "1-128"},
		{"duplicate name", "{\"tools\": [\n {\"name\": \"a\", \"cli_command\": []},\n {\"name\": \"a\", \"cli_command\": []}]}", "/tools/1/name", 3, 11, "repeats tool 0"},
		{"input schema not object type", "{\"tools\": [{\"name\": \"a\", \"cli_command\": [],\n  \"parameters\": {\"type\": \"string\"}}]}", "/tools/0/parameters/type", 2, 26, `"type": "object"`},
		{"input schema not an object", `{"tools": [{"name": "a", "cli_command": [], "inputSchema": [1]}]}`, "/tools/0/inputSchema", 1, 60, "JSON object"},
		{"both parameters and inputSchema", `{"tools": [{"name": "a", "cli_command": [], "parameters": {"type":"object"}, "inputSchema": {"type":"object"}}]}`, "/tools/0/inputSchema", 1, 93, "both"},
		{"no cli_command", `{"tools": [{"name": "a"}]}`, "/tools/0", 1, 12, "no cli_command"},
		{"bad input", `{"tools": [{"name": "a", "cli_command": [], "input": "file"}]}`, "/tools/0/input", 1, 54, `want "stdin"`},
		{"bad output schema", `{"tools": [{"name": "a", "cli_command": [], "outputSchema": {"type": "array"}}]}`, "/tools/0/outputSchema", 1, 61, "outputSchema"},
		{"unresolvable schema", `{"tools": [{"name": "a", "cli_command": [], "parameters": {"type": "object", "properties": {"x": {"$ref": "#/nope"}}}}]}`, "/tools/0/parameters", 1, 59, "input schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseSchema([]byte(c.doc))
			var se *schemaError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a schemaError", err)
			}
			if se.Pointer != c.ptr || se.Line != c.line || se.Col != c.col || !strings.Contains(se.Msg, c.msg) {
				t.Fatalf("got %q (%+v), want %s line %d col %d %q", se.Error(), se, c.ptr, c.line, c.col, c.msg)
			}
		})
	}
}

func TestParseGood(t *testing.T) {
	sch, err := parseSchema([]byte(`{"tools": [
	  {"name": "b.x-y_z", "description": "d", "title": "T", "inputSchema": {"type": "object"}, "cli_command": ["b"],
	   "annotations": {"readOnlyHint": true}, "outputSchema": {"type": "object"}},
	  {"name": "a", "input": "stdin"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sch.Names(), ","); got != "a,b.x-y_z" {
		t.Fatalf("names %s", got)
	}
	b := sch.Tool("b.x-y_z").MCPTool()
	if b.Title != "T" || b.Annotations == nil || !b.Annotations.ReadOnlyHint || b.OutputSchema == nil {
		t.Fatalf("tool %+v", b)
	}
	a := sch.Tool("a")
	if mt := a.MCPTool(); !a.Stdin || string(mt.InputSchema.(json.RawMessage)) != `{"type":"object"}` || mt.OutputSchema != nil {
		t.Fatalf("tool a %+v", mt)
	}
	a.MCPTool().Name = "changed"
	if a.MCPTool().Name != "a" {
		t.Fatal("MCPTool returned the tool's own mcp.Tool, not a copy")
	}
}

func TestParseOlderDraft(t *testing.T) {
	sch, err := parseSchema([]byte(`{"tools": [{"name": "a", "cli_command": ["{x}"], "parameters":
	  {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"x": {"type": "integer"}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tool := sch.Tools[0]
	if err := tool.resolved.Validate(map[string]any{"x": 1.0}); err != nil {
		t.Fatalf("a draft-04 schema cannot validate: %v", err)
	}
	if err := tool.resolved.Validate(map[string]any{"x": "s"}); err == nil {
		t.Fatal("a string passed as an integer")
	}
	if !strings.Contains(string(tool.MCPTool().InputSchema.(json.RawMessage)), "draft-04") {
		t.Fatal("the client should see the schema as printed")
	}
}

// FuzzParse: no panic; a bad schema is a *schemaError whose position lies
// inside the document; a good one has unique, valid tool names.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"tools": [{"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}, "cli_command": ["a", "{x}", ["--y", "{x}"]]}]}`))
	f.Add([]byte("{\"tools\": [\n  {\"name\": \"a\",,}\n]}"))
	f.Add([]byte(`{"tools": [{"name": "a", "input": "stdin", "cli_command": []}, {"name": "a", "cli_command": []}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		sch, err := parseSchema(doc)
		if err != nil {
			var se *schemaError
			if !errors.As(err, &se) {
				t.Fatalf("%T %v, want a *schemaError", err, err)
			}
			if se.Offset > int64(len(doc)) || se.Line < 0 || se.Col < 0 {
				t.Fatalf("position outside the document (%d bytes): %+v", len(doc), se)
			}
			return
		}
		seen := map[string]bool{}
		for _, tool := range sch.Tools {
			if tool.Name == "" || len(tool.Name) > 128 || seen[tool.Name] {
				t.Fatalf("bad or repeated name %q", tool.Name)
			}
			seen[tool.Name] = true
		}
	})
}
