package clitools

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

const testParams = `{"type":"object","properties":{
  "s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},
  "list":{"type":"array","items":{"type":"string"}},"nums":{"type":"array","items":{"type":"integer"}},
  "opt":{"type":"string"},"free":{"type":"string","x-cli-allow-dash":true},"obj":{"type":"object"}}}`

// compileT parses a one-tool schema with testParams and template tpl.
func compileT(t testing.TB, tpl string) (*Tool, error) {
	t.Helper()
	sch, err := parseSchema([]byte(`{"tools":[{"name":"t","parameters":` + testParams + `,"cli_command":` + tpl + `}]}`))
	if err != nil {
		return nil, err
	}
	return sch.Tools[0], nil
}

func expand(t testing.TB, tool *Tool, args string) ([]string, error) {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("bad test args %s: %v", args, err)
	}
	return tool.Template.Expand(m)
}

func TestMapping(t *testing.T) {
	for _, c := range []struct {
		name, tpl, args string
		want            []string
		err             string // substring of the expected error
	}{
		{"literal", `["greet"]`, `{}`, []string{"greet"}, ""},
		{"whole element with spaces", `["x","{s}"]`, `{"s":"a b  c"}`, []string{"x", "a b  c"}, ""},
		{"whole element with quotes", `["x","{s}"]`, `{"s":"it's \"q\""}`, []string{"x", `it's "q"`}, ""},
		{"whole element with command substitution", `["x","{s}"]`, `{"s":"$(rm -rf /); ` + "`id`" + `"}`, []string{"x", "$(rm -rf /); `id`"}, ""},
		{"whole element with newlines", `["x","{s}"]`, `{"s":"a\nb\r\nc"}`, []string{"x", "a\nb\r\nc"}, ""},
		{"whole element with glob and semicolon", `["x","{s}"]`, `{"s":"*; ls | cat > f"}`, []string{"x", "*; ls | cat > f"}, ""},
		{"empty string stays one element", `["x","{s}"]`, `{"s":""}`, []string{"x", ""}, ""},
		{"integer in JSON text", `["x","--i","{i}"]`, `{"i":42}`, []string{"x", "--i", "42"}, ""},
		{"big integer keeps its digits", `["x","--i","{i}"]`, `{"i":12345678901234567890}`, []string{"x", "--i", "12345678901234567890"}, ""},
		{"number in JSON text", `["x","--n","{n}"]`, `{"n":1.5e3}`, []string{"x", "--n", "1.5e3"}, ""},
		{"negative number after a flag", `["x","--n","{n}"]`, `{"n":-2.5}`, []string{"x", "--n", "-2.5"}, ""},
		{"boolean true", `["x","--b","{b}"]`, `{"b":true}`, []string{"x", "--b", "true"}, ""},
		{"boolean false", `["x","--b={b}"]`, `{"b":false}`, []string{"x", "--b=false"}, ""},
		{"array one element per item", `["x","{list}"]`, `{"list":["a b","c"]}`, []string{"x", "a b", "c"}, ""},
		{"empty array no element", `["x","{list}"]`, `{"list":[]}`, []string{"x"}, ""},
		{"integer array", `["x","{nums}"]`, `{"nums":[1,2,3]}`, []string{"x", "1", "2", "3"}, ""},
		{"group repeats per array item", `["x",["--tag","{list}"]]`, `{"list":["a","b"]}`, []string{"x", "--tag", "a", "--tag", "b"}, ""},
		{"group over empty array vanishes", `["x",["--tag","{list}"]]`, `{"list":[]}`, []string{"x"}, ""},
		{"text substitution", `["x","--name={s}"]`, `{"s":"Bob Smith"}`, []string{"x", "--name=Bob Smith"}, ""},
		{"text substitution two params", `["x","{s}:{i}"]`, `{"s":"host","i":80}`, []string{"x", "host:80"}, ""},
		{"literal braces", `["x","{{s}}","a}}b{{"]`, `{}`, []string{"x", "{s}", "a}b{"}, ""},
		{"absent optional drops its group", `["x",["--opt","{opt}"],"end"]`, `{}`, []string{"x", "end"}, ""},
		{"present optional keeps its group", `["x",["--opt","{opt}"]]`, `{"opt":"v"}`, []string{"x", "--opt", "v"}, ""},
		{"null is absent", `["x",["--opt","{opt}"]]`, `{"opt":null}`, []string{"x"}, ""},
		{"absent whole element at top level", `["x","{opt}"]`, `{}`, []string{"x"}, ""},
		{"absent in text drops the element", `["x","--opt={opt}"]`, `{}`, []string{"x"}, ""},
		{"nested group: outer kept, inner dropped", `["x",["--s","{s}",["--opt","{opt}"]]]`, `{"s":"a"}`, []string{"x", "--s", "a"}, ""},
		{"guard on", `["x",["{?b}","--loud"]]`, `{"b":true}`, []string{"x", "--loud"}, ""},
		{"guard off", `["x",["{?b}","--loud"]]`, `{"b":false}`, []string{"x"}, ""},
		{"guard absent", `["x",["{?b}","--loud"]]`, `{}`, []string{"x"}, ""},
		{"negated guard", `["x",["{!b}","--quiet"]]`, `{"b":false}`, []string{"x", "--quiet"}, ""},
		{"negated guard absent", `["x",["{!b}","--quiet"]]`, `{}`, []string{"x", "--quiet"}, ""},
		{"negated guard true", `["x",["{!b}","--quiet"]]`, `{"b":true}`, []string{"x"}, ""},
		{"object as JSON text", `["x","--obj","{obj}"]`, `{"obj":{"k":[1,"v"]}}`, []string{"x", "--obj", `{"k":[1,"v"]}`}, ""},
		{"dash value in positional refused", `["x","{s}"]`, `{"s":"-rf"}`, nil, `starts with "-"`},
		{"dash value at element start refused", `["x","{s}.txt"]`, `{"s":"--all"}`, nil, "x-cli-allow-dash"},
		{"dash array item refused", `["x","{list}"]`, `{"list":["a","-b"]}`, nil, `"-b"`},
		{"negative number positional refused", `["x","{n}"]`, `{"n":-1}`, nil, `starts with "-"`},
		{"dash value after flag allowed", `["x","--s","{s}"]`, `{"s":"-rf"}`, []string{"x", "--s", "-rf"}, ""},
		{"dash value after -- allowed", `["x","--","{s}"]`, `{"s":"-rf"}`, []string{"x", "--", "-rf"}, ""},
		{"dash value with schema extension allowed", `["x","{free}"]`, `{"free":"-rf"}`, []string{"x", "-rf"}, ""},
		{"dash in text after literal allowed", `["x","--s={s}"]`, `{"s":"-rf"}`, []string{"x", "--s=-rf"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool, err := compileT(t, c.tpl)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			got, err := expand(t, tool, c.args)
			if c.err != "" {
				var ae *argError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %q, %v; want an argError containing %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	for _, c := range []struct{ name, tpl, ptr, err, at string }{
		{"undeclared placeholder", `["x","{nope}"]`, "/tools/0/cli_command/1", "names no declared parameter", `"{nope}"`},
		{"undeclared in nested group", `["x",["--a","{nope}"]]`, "/tools/0/cli_command/1/1", "names no declared parameter", `"{nope}"`},
		{"undeclared in text", `["x","--a={nope}"]`, "/tools/0/cli_command/1", "names no declared parameter", `"--a={nope}"`},
		{"unclosed brace", `["x","{s"]`, "/tools/0/cli_command/1", "unclosed", `"{s"`},
		{"lone closing brace", `["x","a}"]`, "/tools/0/cli_command/1", "lone", `"a}"`},
		{"bad placeholder", `["x","{a b}"]`, "/tools/0/cli_command/1", "bad placeholder", `"{a b}"`},
		{"guard at top level", `["x","{?b}"]`, "/tools/0/cli_command/1", "inside a group", `"{?b}"`},
		{"guard inside text", `["x",["--b{?b}"]]`, "/tools/0/cli_command/1/0", "whole element", `"--b{?b}"`},
		{"array in text", `["x","--l={list}"]`, "/tools/0/cli_command/1", "whole element", `"--l={list}"`},
		{"two arrays in a group", `["x",["{list}","{nums}"]]`, "/tools/0/cli_command/1", "one array", `["{list}"`},
		{"number element", `["x",3]`, "/tools/0/cli_command/1", "string or an array", `3]`},
		{"not an array", `"x {s}"`, "/tools/0/cli_command", "must be an array", `"x {s}"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileT(t, c.tpl)
			var se *schemaError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a schemaError", err)
			}
			doc := `{"tools":[{"name":"t","parameters":` + testParams + `,"cli_command":` + c.tpl + `}]}`
			if se.Pointer != c.ptr || !strings.Contains(se.Msg, c.err) || se.Offset < 0 || !strings.HasPrefix(doc[se.Offset:], c.at) {
				t.Fatalf("got %+v, want pointer %s, %q, at %s", se, c.ptr, c.err, c.at)
			}
			if l, col := lineCol([]byte(doc), se.Offset); se.Line != 4 || l != se.Line || col != se.Col {
				t.Fatalf("got line %d col %d, want line 4 and (%d, %d)", se.Line, se.Col, l, col)
			}
		})
	}
}

// FuzzExpand: no panic, and a placeholder that is a whole element makes
// exactly one element unless its value is an array.
func FuzzExpand(f *testing.F) {
	f.Add(`["x","{s}",["--opt","{opt}"],["{?b}","--b"],"--i={i}"]`, "a b", int64(3), true)
	f.Add(`["{s}"]`, "-x", int64(-1), false)
	f.Add(`[["{list}"],"{{"]`, "$(id)\n", int64(0), true)
	f.Fuzz(func(t *testing.T, tpl, s string, i int64, b bool) {
		tool, err := compileT(t, tpl)
		if err != nil {
			return
		}
		args := map[string]any{"s": s, "opt": s, "free": s, "i": json.Number(json.Number(strings.TrimSpace(string(mustJSON(i))))), "b": b, "n": json.Number("1.5")}
		out, err := tool.Template.Expand(args)
		if err != nil {
			return
		}
		// Without array values, no template element makes more than one argv element.
		if max := countElems(tool.Template.root); len(out) > max {
			t.Fatalf("%d elements from a template of %d: %q", len(out), max, out)
		}
		// "{s}" alone makes exactly s, one element.
		single, err := compileT(t, `["{s}"]`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := single.Template.Expand(map[string]any{"s": s})
		if err == nil && (len(got) != 1 || got[0] != s) {
			t.Fatalf("{s} with %q gave %q", s, got)
		}
		if err != nil && !strings.HasPrefix(s, "-") {
			t.Fatalf("{s} with %q: %v", s, err)
		}
	})
}

func countElems(nodes []node) int {
	n := 0
	for _, c := range nodes {
		switch c.kind {
		case groupNode:
			n += countElems(c.group)
		case guardNode:
		default:
			n++
		}
	}
	return n
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return bytes.TrimSpace(b)
}
