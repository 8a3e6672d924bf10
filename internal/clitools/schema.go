package clitools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	allowDashKey = "x-cli-allow-dash" // true in a property schema: a value starting with "-" may fill a positional slot
	inputStdin   = "stdin"            // a tool's "input" that sends its arguments as JSON on stdin
)

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,128}$`)

// Tool is one validated tool of a schema.
type Tool struct {
	Name     string
	Stdin    bool      // "input": "stdin"
	Template *template // the compiled cli_command

	listed   mcp.Tool // as listed to the client; its schemas as the CLI printed them
	resolved *jsonschema.Resolved
}

// param is what the mapping needs to know of one declared parameter.
type param struct {
	typ       string // the JSON Schema "type" when a single string, else ""
	allowDash bool
}

// MCPTool is the tool as listed to the client (a copy).
func (t *Tool) MCPTool() *mcp.Tool {
	mt := t.listed
	return &mt
}

// Schema is a validated tool list.
type Schema struct {
	Tools []*Tool // in the order printed
}

// Names returns the tool names, sorted.
func (s *Schema) Names() []string {
	if s == nil {
		return nil
	}
	n := make([]string, 0, len(s.Tools))
	for _, t := range s.Tools {
		n = append(n, t.Name)
	}
	sort.Strings(n)
	return n
}

// Tool returns the tool named name, or nil.
func (s *Schema) Tool(name string) *Tool {
	if s == nil {
		return nil
	}
	for _, t := range s.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// schemaError is a schema that cannot be served, with where the problem is.
type schemaError struct {
	Pointer string // JSON pointer (RFC 6901) of the offending value; "" = the document
	Offset  int64  // byte offset in the schema output; -1 when unknown
	Line    int    // 1-based; 0 when unknown
	Col     int    // 1-based, in bytes
	Msg     string
}

func (e *schemaError) Error() string {
	s := "schema"
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d col %d", e.Line, e.Col)
	}
	if e.Pointer != "" {
		s += " at " + e.Pointer
	}
	return s + ": " + e.Msg
}

type rawTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Title        string          `json:"title"`
	Parameters   json.RawMessage `json:"parameters"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  json.RawMessage `json:"annotations"`
	CLICommand   json.RawMessage `json:"cli_command"`
	Input        string          `json:"input"`
}

// parseSchema validates a schema command's output; a problem is a *schemaError.
func parseSchema(data []byte) (*Schema, error) {
	fail := func(ptr []string, format string, args ...any) error {
		return newSchemaError(data, ptr, fmt.Sprintf(format, args...))
	}
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// se.Offset counts the bytes read, the offending one included.
			e := &schemaError{Offset: max(se.Offset-1, 0), Msg: "invalid JSON: " + se.Error()}
			e.Line, e.Col = lineCol(data, e.Offset)
			return nil, e
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			ptr := []string{}
			if te.Field != "" {
				ptr = strings.Split(te.Field, ".")
			}
			return nil, fail(ptr, "want %s, found a JSON %s", te.Type, te.Value)
		}
		return nil, fail(nil, "%v", err)
	}
	if doc.Tools == nil {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(data, &m)
		if _, ok := m["tools"]; !ok {
			return nil, fail(nil, `no "tools" array`)
		}
	}
	s := &Schema{}
	seen := map[string]int{}
	for i, raw := range doc.Tools {
		at := func(keys ...string) []string { return append([]string{"tools", strconv.Itoa(i)}, keys...) }
		var rt rawTool
		if err := json.Unmarshal(raw, &rt); err != nil {
			return nil, fail(at(), "a tool must be an object with string name and description: %v", err)
		}
		if !toolNameRE.MatchString(rt.Name) {
			return nil, fail(at("name"), "tool name %q: want 1-128 characters of A-Za-z0-9_.-", rt.Name)
		}
		if j, dup := seen[rt.Name]; dup {
			return nil, fail(at("name"), "tool name %q repeats tool %d", rt.Name, j)
		}
		seen[rt.Name] = i
		t := &Tool{Name: rt.Name, listed: mcp.Tool{Name: rt.Name, Description: rt.Description, Title: rt.Title}}
		inKey, in := "parameters", rt.Parameters
		if in == nil {
			inKey, in = "inputSchema", rt.InputSchema
		} else if rt.InputSchema != nil {
			return nil, fail(at("inputSchema"), "tool %q has both parameters and inputSchema", rt.Name)
		}
		if in == nil || string(in) == "null" {
			in = json.RawMessage(`{"type":"object"}`)
		}
		params, resolved, sptr, err := compileInput(in)
		if err != nil {
			return nil, fail(append(at(inKey), sptr...), "tool %q: %v", rt.Name, err)
		}
		t.resolved, t.listed.InputSchema = resolved, in
		if rt.OutputSchema != nil && string(rt.OutputSchema) != "null" {
			var m map[string]any
			if json.Unmarshal(rt.OutputSchema, &m) != nil || m["type"] != "object" {
				return nil, fail(at("outputSchema"), `tool %q: outputSchema must be an object schema with "type": "object"`, rt.Name)
			}
			t.listed.OutputSchema = rt.OutputSchema
		}
		if rt.Annotations != nil && string(rt.Annotations) != "null" {
			t.listed.Annotations = new(mcp.ToolAnnotations)
			if err := json.Unmarshal(rt.Annotations, t.listed.Annotations); err != nil {
				return nil, fail(at("annotations"), "tool %q: %v", rt.Name, err)
			}
		}
		switch rt.Input {
		case "", "argv":
		case inputStdin:
			t.Stdin = true
		default:
			return nil, fail(at("input"), `tool %q: input %q: want "stdin" or nothing`, rt.Name, rt.Input)
		}
		if rt.CLICommand == nil {
			if !t.Stdin {
				return nil, fail(at(), "tool %q has no cli_command", rt.Name)
			}
			rt.CLICommand = json.RawMessage(`[]`)
		}
		tpl, tptr, err := compileTemplate(rt.CLICommand, params)
		if err != nil {
			return nil, fail(append(at("cli_command"), tptr...), "tool %q: %v", rt.Name, err)
		}
		t.Template = tpl
		s.Tools = append(s.Tools, t)
	}
	return s, nil
}

// compileInput resolves the object schema in and returns its parameters.
func compileInput(in json.RawMessage) (map[string]param, *jsonschema.Resolved, []string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(in, &m); err != nil {
		return nil, nil, nil, fmt.Errorf("the input schema must be a JSON object")
	}
	var typ string
	if json.Unmarshal(m["type"], &typ) != nil || typ != "object" {
		return nil, nil, []string{"type"}, fmt.Errorf(`the input schema must have "type": "object"`)
	}
	var props map[string]json.RawMessage
	if p, ok := m["properties"]; ok && json.Unmarshal(p, &props) != nil {
		return nil, nil, []string{"properties"}, fmt.Errorf("properties must be an object")
	}
	params := map[string]param{}
	for name, raw := range props {
		var pm map[string]json.RawMessage
		if err := json.Unmarshal(raw, &pm); err != nil {
			return nil, nil, []string{"properties", name}, fmt.Errorf("property %q must be a schema object", name)
		}
		var p param
		_ = json.Unmarshal(pm["type"], &p.typ)
		_ = json.Unmarshal(pm[allowDashKey], &p.allowDash)
		params[name] = p
	}
	// Arguments are validated with draft 2020-12 rules whatever "$schema"
	// says: CLIs print older drafts that the validator would refuse.
	delete(m, "$schema")
	forValidation, _ := json.Marshal(m)
	var js jsonschema.Schema
	if err := json.Unmarshal(forValidation, &js); err != nil {
		return nil, nil, nil, fmt.Errorf("input schema: %v", err)
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("input schema: %v", err)
	}
	return params, rs, nil, nil
}

func newSchemaError(data []byte, ptr []string, msg string) *schemaError {
	e := &schemaError{Pointer: pointer(ptr), Offset: -1, Msg: msg}
	if off, ok := locate(data, ptr); ok {
		e.Offset = off
		e.Line, e.Col = lineCol(data, off)
	}
	return e
}

func pointer(ptr []string) string {
	var b strings.Builder
	for _, p := range ptr {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	pre := data[:off]
	line = bytes.Count(pre, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(pre, '\n') + 1) + 1
	return line, col
}

// locate returns the byte offset in data where the value at ptr starts.
func locate(data []byte, ptr []string) (int64, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := dec.InputOffset()
		for start < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[start]) >= 0 {
			start++
		}
		if len(ptr) == 0 {
			return start, true
		}
		tok, err := dec.Token()
		d, ok := tok.(json.Delim)
		if err != nil || !ok {
			return 0, false
		}
		for i := 0; ; i++ {
			if !dec.More() {
				return 0, false
			}
			key := strconv.Itoa(i)
			if d == '{' {
				kt, err := dec.Token()
				if err != nil {
					return 0, false
				}
				key, _ = kt.(string)
			}
			if key == ptr[0] {
				break
			}
			if dec.Decode(new(json.RawMessage)) != nil { // skip the value
				return 0, false
			}
		}
		ptr = ptr[1:]
	}
}
