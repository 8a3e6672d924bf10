package mux

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// catalog is what the mux lists to its clients: each published tool,
// prompt, resource and template, and the server that owns it. Items are
// the child's own JSON, untouched but for the name the mux prefixes. It
// has no lock of its own: Mux.mu guards it.
type catalog struct {
	sep     string
	own     []string // the mux's own tool names: no child's may take them
	tools   map[string]route
	prompts map[string]route
	res     map[string]string // resource URI -> server name
	tmpls   map[string]string // URI template -> server name
}

type route struct{ server, name string }

// published is what the catalog lists of one server, as its clients get
// it, and what it left out. Mux.mu guards it.
type published struct {
	warnings []string
	tools    [][]byte // tool items, names prefixed
	prompts  [][]byte // prompt items, names prefixed
	res      [][]byte // resource items
	tmpls    [][]byte // resource template items
	names    []string // tool names as clients see them
	pnames   []string // prompt names as clients see them
	uris     []string
	tURIs    []string
}

func newCatalog(sep string) catalog {
	return catalog{sep: sep, tools: map[string]route{}, prompts: map[string]route{}, res: map[string]string{}, tmpls: map[string]string{}}
}

// owner finds the server that listed a resource URI, or whose template
// matches it.
func (c *catalog) owner(uri string) (string, bool) {
	if n, ok := c.res[uri]; ok {
		return n, true
	}
	if n, ok := c.tmpls[uri]; ok {
		return n, true
	}
	for t, n := range c.tmpls {
		if matchTemplate(t, uri) {
			return n, true
		}
	}
	return "", false
}

// publish replaces what the catalog lists for s with its lists; it
// reports whether what clients are listed changed.
func (c *catalog) publish(s *server) bool {
	old := s.published
	c.unpublish(s)
	name := s.spec.Name
	p := published{}
	for _, item := range s.lists.Tools {
		own := itemName(item)
		full := joinName(name, c.sep, own)
		switch {
		case own == "":
			p.warnings = append(p.warnings, "a tool without a name left out")
			continue
		case len(full) > MaxToolName:
			p.warnings = append(p.warnings, fmt.Sprintf("tool %q left out: %q is longer than the %d characters clients accept", own, full, MaxToolName))
			continue
		case slices.Contains(c.own, full):
			p.warnings = append(p.warnings, fmt.Sprintf("tool %q left out: as %q it would take the place of mcpflow's %s tool (change mux.separator, or rename the tool)", own, full, full))
			continue
		case !objectSchema(item):
			p.warnings = append(p.warnings, fmt.Sprintf("tool %q left out: its input schema is not an object schema", own))
			continue
		}
		if _, taken := c.tools[full]; taken {
			continue
		}
		p.tools = append(p.tools, renamed(item, full))
		p.names = append(p.names, full)
		c.tools[full] = route{name, own}
	}
	for _, item := range s.lists.Prompts {
		own := itemName(item)
		if own == "" {
			continue
		}
		full := joinName(name, c.sep, own)
		p.prompts = append(p.prompts, renamed(item, full))
		p.pnames = append(p.pnames, full)
		c.prompts[full] = route{name, own}
	}
	for _, item := range s.lists.Resources {
		uri := stringMember(item, "uri")
		if owner, ok := c.res[uri]; ok && owner != name {
			p.warnings = append(p.warnings, fmt.Sprintf("resource %q is also listed by server %q; the latest listing wins", uri, owner))
		}
		p.res = append(p.res, item)
		p.uris = append(p.uris, uri)
		c.res[uri] = name
	}
	for _, item := range s.lists.Templates {
		t := stringMember(item, "uriTemplate")
		p.tmpls = append(p.tmpls, item)
		p.tURIs = append(p.tURIs, t)
		c.tmpls[t] = name
	}
	s.published = p
	return !sameItems(old.tools, p.tools) || !sameItems(old.prompts, p.prompts) || !sameItems(old.res, p.res) || !sameItems(old.tmpls, p.tmpls)
}

// unpublish takes everything of s out of the catalog.
func (c *catalog) unpublish(s *server) {
	name := s.spec.Name
	for _, n := range s.names {
		if c.tools[n].server == name {
			delete(c.tools, n)
		}
	}
	for _, n := range s.pnames {
		if c.prompts[n].server == name {
			delete(c.prompts, n)
		}
	}
	for _, u := range s.uris {
		if c.res[u] == name {
			delete(c.res, u)
		}
	}
	for _, u := range s.tURIs {
		if c.tmpls[u] == name {
			delete(c.tmpls, u)
		}
	}
	s.published = published{warnings: s.warnings}
}

func sameItems(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

// itemName is the "name" of a tool or prompt item; "" when it has none.
func itemName(item []byte) string { return stringMember(item, "name") }

func stringMember(obj []byte, key string) string {
	v := jsonscan.Member(obj, key)
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _ := jsonscan.Unquote(v)
	return s
}

// renamed is a tool or prompt item with its name replaced by full, the
// rest as the child wrote it.
func renamed(item []byte, full string) []byte {
	vs, ve, ok := jsonscan.MemberSpan(item, "name")
	if !ok {
		return item
	}
	q, _ := json.Marshal(full)
	return wire.Splice(item, vs, ve, q)
}

// objectSchema reports whether a tool item's inputSchema is an object
// schema, which clients require.
func objectSchema(item []byte) bool {
	schema := jsonscan.Member(item, "inputSchema")
	return len(schema) > 0 && schema[0] == '{' && string(jsonscan.Member(schema, "type")) == `"object"`
}

// list is the result of a */list request over every server's items of
// field ("tools", "prompts", "resources", "resourceTemplates"), servers in
// name order, own appended (the mux's tools). m.mu is held.
func (m *Mux) list(field string, own [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"` + field + `":[`)
	n := 0
	add := func(item []byte) {
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(item)
		n++
	}
	for _, name := range m.namesLocked() {
		s := m.servers[name]
		var items [][]byte
		switch field {
		case "tools":
			items = s.published.tools
		case "prompts":
			items = s.published.prompts
		case "resources":
			items = s.published.res
		case "resourceTemplates":
			items = s.published.tmpls
		}
		for _, it := range items {
			add(it)
		}
	}
	for _, it := range own {
		add(it)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// matchTemplate reports whether uri fits an RFC 6570 template's literal
// parts, in order.
func matchTemplate(tmpl, uri string) bool {
	rest := uri
	first := true
	for tmpl != "" {
		lit, after, _ := strings.Cut(tmpl, "{")
		if first {
			if !strings.HasPrefix(rest, lit) {
				return false
			}
			rest = rest[len(lit):]
			first = false
		} else if lit != "" {
			i := strings.Index(rest, lit)
			if i < 0 {
				return false
			}
			rest = rest[i+len(lit):]
		}
		_, tmpl, _ = strings.Cut(after, "}")
		if after == "" {
			return rest == ""
		}
	}
	return true
}
