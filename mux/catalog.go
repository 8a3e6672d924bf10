package mux

import (
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalog is what the front server lists: each published tool, prompt,
// resource and template, and the server that owns it. It has no lock of
// its own: Mux.mu guards it.
type catalog struct {
	sep     string
	h       front       // makes the handlers of what is published
	srv     *mcp.Server // nil until Run makes the front server
	tools   map[string]route
	prompts map[string]route
	res     map[string]string // resource URI -> server name
	tmpls   map[string]string // URI template -> server name
}

type route struct{ server, name string }

func newCatalog(m *Mux) catalog {
	return catalog{
		sep:     m.sep,
		h:       front{m},
		tools:   map[string]route{},
		prompts: map[string]route{},
		res:     map[string]string{},
		tmpls:   map[string]string{},
	}
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

// publish replaces what the front server lists for s.
func (c *catalog) publish(s *server) {
	if c.srv == nil {
		return
	}
	name := s.spec.Name
	s.warnings = nil
	var tools, prompts, res, tmpls []string
	for _, t := range s.tools {
		full := c.h.join(name, t.Name)
		if len(full) > MaxToolName {
			s.warnings = append(s.warnings, fmt.Sprintf("tool %q left out: %q is longer than the %d characters clients accept", t.Name, full, MaxToolName))
			continue
		}
		if own := c.h.ownTool(full); own != "" {
			s.warnings = append(s.warnings, fmt.Sprintf("tool %q left out: as %q it would take the place of mcpflow's %s tool (change mux.separator, or rename the tool)", t.Name, full, own))
			continue
		}
		if !objectSchema(t.InputSchema) {
			s.warnings = append(s.warnings, fmt.Sprintf("tool %q left out: its input schema is not an object schema", t.Name))
			continue
		}
		ft := *t
		ft.Name = full
		if err := safeAdd(func() { c.srv.AddTool(&ft, c.h.toolHandler(name, t.Name)) }); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("tool %q left out: %v", t.Name, err))
			continue
		}
		c.tools[full] = route{name, t.Name}
		tools = append(tools, full)
	}
	for _, p := range s.prompts {
		full := c.h.join(name, p.Name)
		fp := *p
		fp.Name = full
		c.srv.AddPrompt(&fp, c.h.promptHandler(name, p.Name))
		c.prompts[full] = route{name, p.Name}
		prompts = append(prompts, full)
	}
	for _, r := range s.resources {
		if owner, ok := c.res[r.URI]; ok && owner != name {
			s.warnings = append(s.warnings, fmt.Sprintf("resource %q is also listed by server %q; the latest listing wins", r.URI, owner))
		}
		fr := *r
		c.srv.AddResource(&fr, c.h.resourceHandler(name))
		c.res[r.URI] = name
		res = append(res, r.URI)
	}
	for _, t := range s.templates {
		ft := *t
		if err := safeAdd(func() { c.srv.AddResourceTemplate(&ft, c.h.resourceHandler(name)) }); err != nil {
			s.warnings = append(s.warnings, fmt.Sprintf("resource template %q left out: %v", t.URITemplate, err))
			continue
		}
		c.tmpls[t.URITemplate] = name
		tmpls = append(tmpls, t.URITemplate)
	}
	drop := func(old, cur []string) []string {
		var gone []string
		for _, n := range old {
			if !slices.Contains(cur, n) {
				gone = append(gone, n)
			}
		}
		return gone
	}
	if gone := drop(s.front, tools); len(gone) > 0 {
		c.srv.RemoveTools(gone...)
		for _, n := range gone {
			delete(c.tools, n)
		}
	}
	if gone := drop(s.frontP, prompts); len(gone) > 0 {
		c.srv.RemovePrompts(gone...)
		for _, n := range gone {
			delete(c.prompts, n)
		}
	}
	if gone := drop(s.frontR, res); len(gone) > 0 {
		var mine []string
		for _, u := range gone {
			if c.res[u] == name {
				delete(c.res, u)
				mine = append(mine, u)
			}
		}
		c.srv.RemoveResources(mine...)
	}
	if gone := drop(s.frontT, tmpls); len(gone) > 0 {
		var mine []string
		for _, u := range gone {
			if c.tmpls[u] == name {
				delete(c.tmpls, u)
				mine = append(mine, u)
			}
		}
		c.srv.RemoveResourceTemplates(mine...)
	}
	s.front, s.frontP, s.frontR, s.frontT = tools, prompts, res, tmpls
}

// unpublish takes everything of s off the front server.
func (c *catalog) unpublish(s *server) {
	name := s.spec.Name
	if c.srv != nil {
		if len(s.front) > 0 {
			c.srv.RemoveTools(s.front...)
		}
		if len(s.frontP) > 0 {
			c.srv.RemovePrompts(s.frontP...)
		}
	}
	for _, n := range s.front {
		delete(c.tools, n)
	}
	for _, n := range s.frontP {
		delete(c.prompts, n)
	}
	var res, tmpls []string
	for _, u := range s.frontR {
		if c.res[u] == name {
			delete(c.res, u)
			res = append(res, u)
		}
	}
	for _, u := range s.frontT {
		if c.tmpls[u] == name {
			delete(c.tmpls, u)
			tmpls = append(tmpls, u)
		}
	}
	if c.srv != nil {
		if len(res) > 0 {
			c.srv.RemoveResources(res...)
		}
		if len(tmpls) > 0 {
			c.srv.RemoveResourceTemplates(tmpls...)
		}
	}
	s.front, s.frontP, s.frontR, s.frontT = nil, nil, nil, nil
}
