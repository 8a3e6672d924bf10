package clitools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// template is a compiled cli_command (rules: the package documentation).
type template struct {
	root   []node
	params map[string]param
}

type nodeKind int

const (
	litNode   nodeKind = iota // a literal element
	wholeNode                 // "{name}": the value, one element (an array: one per item)
	textNode                  // "a{name}b": text substitution into one element
	guardNode                 // "{?name}" / "{!name}": keeps or drops its group, emits nothing
	groupNode                 // a nested array: all or nothing
)

type node struct {
	kind   nodeKind
	lit    string // litNode
	name   string // wholeNode, guardNode
	neg    bool   // guardNode: "{!name}"
	parts  []part // textNode
	group  []node // groupNode
	repeat string // groupNode: the array parameter the group repeats over
	flag   bool   // litNode: starts with "-" and is not "--"
	posPos bool   // wholeNode/textNode: begins with the value (a positional slot)
}

type part struct {
	lit  string
	name string // "" = literal
}

// compileTemplate compiles cli_command; an error comes with its element's path.
func compileTemplate(raw json.RawMessage, params map[string]param) (*template, []string, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, nil, fmt.Errorf("cli_command must be an array of strings and nested arrays")
	}
	t := &template{params: params}
	nodes, ptr, err := t.compileGroup(elems, nil, true)
	if err != nil {
		return nil, ptr, err
	}
	t.root = nodes
	return t, nil, nil
}

func (t *template) compileGroup(elems []json.RawMessage, at []string, top bool) ([]node, []string, error) {
	var nodes []node
	prevFlag := false // a value slot right after a flag literal is the flag's value, not a positional argument
	for i, raw := range elems {
		p := append(append([]string(nil), at...), strconv.Itoa(i))
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '[' {
			var sub []json.RawMessage
			if err := json.Unmarshal(raw, &sub); err != nil {
				return nil, p, fmt.Errorf("invalid group: %v", err)
			}
			g, ptr, err := t.compileGroup(sub, p, false)
			if err != nil {
				return nil, ptr, err
			}
			n := node{kind: groupNode, group: g}
			for _, c := range g {
				if c.kind == wholeNode && t.params[c.name].typ == "array" {
					if n.repeat != "" && n.repeat != c.name {
						return nil, p, fmt.Errorf("a group may repeat over one array parameter only, found %q and %q", n.repeat, c.name)
					}
					n.repeat = c.name
				}
			}
			nodes = append(nodes, n)
			prevFlag = false
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, p, fmt.Errorf("element must be a string or an array, found %s", raw)
		}
		n, err := t.compileString(s)
		if err != nil {
			return nil, p, err
		}
		if n.kind == guardNode && top {
			return nil, p, fmt.Errorf("guard %q must be inside a group, e.g. [%q, \"--flag\"]", s, s)
		}
		if n.kind != guardNode {
			n.posPos = n.posPos && !prevFlag
			prevFlag = n.kind == litNode && n.flag
		}
		nodes = append(nodes, n)
	}
	return nodes, nil, nil
}

// braceRE finds the braces of an element: escaped ones, placeholders and
// lone ones; the text between them is literal.
var braceRE = regexp.MustCompile(`\{\{|\}\}|\{[^}]*\}|[{}]`)

func (t *template) compileString(s string) (node, error) {
	var parts []part
	lit, last := "", 0
	for _, m := range braceRE.FindAllStringIndex(s, -1) {
		lit += s[last:m[0]]
		last = m[1]
		switch tok := s[m[0]:m[1]]; tok {
		case "{{", "}}":
			lit += tok[:1]
			continue
		case "}":
			return node{}, fmt.Errorf("%q: a lone '}' (write }} for a literal brace)", s)
		case "{":
			return node{}, fmt.Errorf("%q: unclosed '{' (write {{ for a literal brace)", s)
		}
		body, prefix := s[m[0]+1:m[1]-1], ""
		if strings.HasPrefix(body, "?") || strings.HasPrefix(body, "!") {
			prefix, body = body[:1], body[1:]
		}
		if !paramNameRE.MatchString(body) {
			return node{}, fmt.Errorf("%q: bad placeholder {%s%s} (write {{ for a literal brace)", s, prefix, body)
		}
		if _, ok := t.params[body]; !ok {
			return node{}, fmt.Errorf("%q: placeholder {%s} names no declared parameter", s, body)
		}
		if prefix != "" {
			if m[0] != 0 || m[1] != len(s) {
				return node{}, fmt.Errorf("%q: a guard {%s%s} must be a whole element", s, prefix, body)
			}
			return node{kind: guardNode, name: body, neg: prefix == "!"}, nil
		}
		if lit != "" {
			parts = append(parts, part{lit: lit})
		}
		parts, lit = append(parts, part{name: body}), ""
	}
	if lit += s[last:]; lit != "" {
		parts = append(parts, part{lit: lit})
	}
	switch {
	case len(parts) == 0:
		return node{kind: litNode}, nil
	case len(parts) == 1 && parts[0].name == "":
		l := parts[0].lit
		return node{kind: litNode, lit: l, flag: strings.HasPrefix(l, "-") && l != "--"}, nil
	case len(parts) == 1:
		return node{kind: wholeNode, name: parts[0].name, posPos: true}, nil
	}
	for _, p := range parts {
		if p.name != "" && t.params[p.name].typ == "array" {
			return node{}, fmt.Errorf("%q: array parameter %q must be a whole element", s, p.name)
		}
	}
	return node{kind: textNode, parts: parts, posPos: parts[0].name != ""}, nil
}

var paramNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// argError is a call whose arguments cannot be mapped to an argv.
type argError struct {
	Param string
	Msg   string
}

func (e *argError) Error() string {
	return fmt.Sprintf("parameter %q: %s", e.Param, e.Msg)
}

// Expand builds the argv tail for args (decoded with json.Decoder.UseNumber,
// so numbers keep their JSON text). A missing or null parameter is absent.
func (t *template) Expand(args map[string]any) ([]string, error) {
	x := expander{t: t, args: args}
	out := []string{}
	if err := x.group(&out, t.root, "", nil); err != nil {
		return nil, err
	}
	return out, nil
}

type expander struct {
	t      *template
	args   map[string]any
	dashed bool // a literal "--" was emitted: later values are operands
}

func (x *expander) value(name, bound string, item any) (any, bool) {
	if name == bound {
		return item, true
	}
	v := x.args[name] // nil when missing
	return v, v != nil
}

// keep reports whether a group's own placeholders and guards hold.
func (x *expander) keep(nodes []node, bound string, item any) bool {
	for _, n := range nodes {
		switch n.kind {
		case wholeNode:
			if _, ok := x.value(n.name, bound, item); !ok {
				return false
			}
		case textNode:
			if _, ok := x.text(n, bound, item); !ok {
				return false
			}
		case guardNode:
			v, ok := x.value(n.name, bound, item)
			on := ok && v != false
			if a, isArr := v.([]any); isArr && len(a) == 0 {
				on = false
			}
			if on == n.neg {
				return false
			}
		}
	}
	return true
}

func (x *expander) group(out *[]string, nodes []node, bound string, item any) error {
	for _, n := range nodes {
		switch n.kind {
		case litNode:
			*out = append(*out, n.lit)
			if n.lit == "--" {
				x.dashed = true
			}
		case guardNode:
		case wholeNode:
			v, ok := x.value(n.name, bound, item)
			if !ok {
				continue
			}
			vals, isArr := v.([]any)
			if !isArr {
				vals = []any{v}
			}
			for _, it := range vals {
				if err := x.emit(out, n, render(it)); err != nil {
					return err
				}
			}
		case textNode:
			if s, ok := x.text(n, bound, item); ok {
				if err := x.emit(out, n, s); err != nil {
					return err
				}
			}
		case groupNode:
			name, items := bound, []any{item}
			if n.repeat != "" && n.repeat != bound {
				v, ok := x.value(n.repeat, bound, item)
				if !ok {
					continue
				}
				a, _ := v.([]any)
				if a == nil {
					a = []any{v}
				}
				name, items = n.repeat, a
			}
			for _, it := range items {
				if !x.keep(n.group, name, it) {
					continue
				}
				if err := x.group(out, n.group, name, it); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// text is a textNode's element, false when a placeholder in it is absent.
func (x *expander) text(n node, bound string, item any) (string, bool) {
	var b strings.Builder
	for _, p := range n.parts {
		v, ok := any(p.lit), true
		if p.name != "" {
			v, ok = x.value(p.name, bound, item)
		}
		if !ok {
			return "", false
		}
		b.WriteString(render(v))
	}
	return b.String(), true
}

// emit appends s, n's value, unless it starts with "-" in a positional
// slot whose parameter does not allow it.
func (x *expander) emit(out *[]string, n node, s string) error {
	name := n.name
	if n.kind == textNode {
		name = n.parts[0].name
	}
	if n.posPos && !x.dashed && strings.HasPrefix(s, "-") && !x.t.params[name].allowDash {
		return &argError{Param: name, Msg: fmt.Sprintf("value %q starts with \"-\" and fills a positional slot, where the program could read it as an option; "+
			"the tool's schema must set %q: true on this parameter, or put a \"--\" before it in cli_command, to allow it", s, allowDashKey)}
	}
	*out = append(*out, s)
	return nil
}

// render gives a value's argv text: a string as is, anything else (a
// json.Number, true, null, an object) as its compact JSON.
func render(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
