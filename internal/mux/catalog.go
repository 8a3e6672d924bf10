package mux

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/mcpflow/mcpflow/internal/protocol/wire"
)

// Lists is what a server lists, each item as the server wrote it.
type Lists struct{ Tools, Prompts, Resources, Templates []json.RawMessage }

// catalog is what one session lists to its client, read through its ports,
// and who owns each item: the server's own JSON but for the name the mux
// prefixes. Its session's lock guards it.
type catalog struct {
	sep     string
	own     []string // the mux's own tool names: no server's may take them
	tools   map[string]route
	prompts map[string]route
	res     map[string]string     // resource URI -> server name
	tmpls   map[string]string     // URI template -> server name
	pub     map[string]*published // by server name
}

type route struct{ server, name string }

// published is what the catalog lists of one server, and what it left
// out.
type published struct {
	warnings []string
	tools    [][]byte // tool items, names prefixed
	prompts  [][]byte // prompt items, names prefixed
	res      [][]byte // resource items
	tmpls    [][]byte // resource template items
	names    []string // tool names as clients see them
	pnames   []string // prompt names as clients see them
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

// publish replaces what the catalog lists of server name with l; it
// reports whether what the client is listed changed.
func (c *catalog) publish(name string, l Lists) bool {
	old := c.pub[name]
	c.unpublish(name)
	p := &published{}
	for _, item := range l.Tools {
		own := stringMember(item, "name")
		full := joinName(name, c.sep, own)
		why := ""
		switch {
		case own == "":
			why = "a tool without a name left out"
		case len(full) > MaxToolName:
			why = fmt.Sprintf("tool %q left out: %q is longer than the %d characters clients accept", own, full, MaxToolName)
		case slices.Contains(c.own, full):
			why = fmt.Sprintf("tool %q left out: as %q it would take the place of mcpflow's %s tool (change mux.separator, or rename the tool)", own, full, full)
		case !objectSchema(item):
			why = fmt.Sprintf("tool %q left out: its input schema is not an object schema", own)
		}
		if why != "" {
			p.warnings = append(p.warnings, why)
			continue
		}
		if _, taken := c.tools[full]; taken {
			continue
		}
		p.tools = append(p.tools, renamed(item, full))
		p.names = append(p.names, full)
		c.tools[full] = route{name, own}
	}
	for _, item := range l.Prompts {
		own := stringMember(item, "name")
		if own == "" {
			continue
		}
		full := joinName(name, c.sep, own)
		p.prompts = append(p.prompts, renamed(item, full))
		p.pnames = append(p.pnames, full)
		c.prompts[full] = route{name, own}
	}
	for _, item := range l.Resources {
		uri := stringMember(item, "uri")
		if owner, ok := c.res[uri]; ok && owner != name {
			p.warnings = append(p.warnings, fmt.Sprintf("resource %q is also listed by server %q; the latest listing wins", uri, owner))
		}
		p.res = append(p.res, item)
		c.res[uri] = name
	}
	for _, item := range l.Templates {
		p.tmpls = append(p.tmpls, item)
		c.tmpls[stringMember(item, "uriTemplate")] = name
	}
	c.pub[name] = p
	if old == nil {
		old = &published{}
	}
	same := func(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }
	return !same(old.tools, p.tools) || !same(old.prompts, p.prompts) || !same(old.res, p.res) || !same(old.tmpls, p.tmpls)
}

// unpublish takes everything of server name out of the catalog.
func (c *catalog) unpublish(name string) {
	ofRoute := func(_ string, r route) bool { return r.server == name }
	ofName := func(_, server string) bool { return server == name }
	maps.DeleteFunc(c.tools, ofRoute)
	maps.DeleteFunc(c.prompts, ofRoute)
	maps.DeleteFunc(c.res, ofName)
	maps.DeleteFunc(c.tmpls, ofName)
	delete(c.pub, name)
}

// list is the result of a */list over every server's items of field
// ("tools", "prompts", "resources", "resourceTemplates"), servers in the
// order of names, own appended (the mux's tools).
func (c *catalog) list(field string, names []string, own [][]byte) []byte {
	var items [][]byte
	for _, name := range names {
		if p := c.pub[name]; p != nil {
			items = append(items, map[string][][]byte{"tools": p.tools, "prompts": p.prompts, "resources": p.res, "resourceTemplates": p.tmpls}[field]...)
		}
	}
	items = append(items, own...)
	return slices.Concat([]byte(`{"`+field+`":[`), bytes.Join(items, []byte(",")), []byte("]}"))
}

func stringMember(obj []byte, key string) string {
	v := jsonscan.Member(obj, key)
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	s, _ := jsonscan.Unquote(v)
	return s
}

// renamed is a tool or prompt item with its name replaced by full, the
// rest as the server wrote it.
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
