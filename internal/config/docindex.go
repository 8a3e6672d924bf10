package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// docIndex records where the keys and values of a document were written.
type docIndex struct {
	name  string
	data  []byte
	lines []int // offset of the start of each line
	nodes []*docNode
	paths map[string]*docNode
}

// docNode is a table header, a key-value or an element of an array.
type docNode struct {
	path     []string
	header   bool // [table] or [[array table]]
	elem     int  // index in the array for elements, else -1
	kind     unstable.Kind
	start    int    // offset of the value, or of a header's '['
	keyStart int    // offset of the first part of the key; -1 for elements
	raw      []byte // the value as written
}

// got describes the value for a message: "integer 2", `string "x"`.
func (n *docNode) got() string {
	if n.header {
		return "a table"
	}
	return cmp.Or(nodeKinds[n.kind], "date") + " " + clip(string(n.raw))
}

var nodeKinds = map[unstable.Kind]string{
	unstable.String: "string", unstable.Integer: "integer", unstable.Float: "float",
	unstable.Bool: "boolean", unstable.Array: "array", unstable.InlineTable: "table",
}

// indexDocument parses data and records where every key and value is. A
// syntax error is reported with its position.
func indexDocument(name string, data []byte) (*docIndex, error) {
	x := &docIndex{name: name, data: data, lines: []int{0}, paths: map[string]*docNode{}}
	for i, b := range data {
		if b == '\n' {
			x.lines = append(x.lines, i+1)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var keyStart int
			table, keyStart, _ = keyPath(e)
			start := len(bytes.TrimRight(data[:keyStart], " \t[")) // the '['
			x.add(&docNode{path: table, header: true, elem: -1, kind: e.Kind, start: start, keyStart: keyStart})
		case unstable.KeyValue:
			x.addKeyValue(&p, table, e)
		}
	}
	if err := p.Error(); err != nil {
		perr, ok := errors.AsType[*unstable.ParserError](err)
		if !ok {
			return nil, &configError{file: name, msg: err.Error()}
		}
		return nil, &configError{file: name, pos: x.lineCol(int(p.Range(perr.Highlight).Offset)), msg: perr.Message}
	}
	return x, nil
}

func (x *docIndex) add(n *docNode) {
	x.nodes = append(x.nodes, n)
	if n.keyStart >= 0 {
		x.paths[keyString(n.path)] = n
	}
}

// addKeyValue records a key-value under the table prefix, with the entries
// of inline tables and the elements of arrays.
func (x *docIndex) addKeyValue(p *unstable.Parser, prefix []string, e *unstable.Node) {
	parts, keyStart, i := keyPath(e)
	path := append(slices.Clip(prefix), parts...)
	v := e.Value()
	// The value runs from after the '=' to the end of the expression (the
	// parser does not record the extent of arrays and inline tables).
	for i < len(x.data) && strings.IndexByte(" \t=", x.data[i]) >= 0 {
		i++
	}
	end := int(e.Raw.Offset + e.Raw.Length)
	if end < i || end > len(x.data) {
		end = i
	}
	x.add(&docNode{path: path, elem: -1, kind: v.Kind, start: i, keyStart: keyStart, raw: x.data[i:end]})
	switch v.Kind {
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			x.addKeyValue(p, path, it.Node())
		}
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			el := it.Node()
			if el.Raw.Length == 0 {
				continue // nested arrays: extent unknown
			}
			raw := p.Raw(el.Raw)
			if el.Kind == unstable.InlineTable {
				raw = raw[:0]
			}
			x.add(&docNode{path: path, elem: i, kind: el.Kind, start: int(el.Raw.Offset), keyStart: -1, raw: raw})
		}
	}
}

// keyPath returns the parts of a node's key and the offsets of its ends.
func keyPath(e *unstable.Node) (parts []string, start, end int) {
	start = -1
	for it := e.Key(); it.Next(); {
		k := it.Node()
		if start < 0 {
			start = int(k.Raw.Offset)
		}
		parts, end = append(parts, string(k.Data)), int(k.Raw.Offset+k.Raw.Length)
	}
	return parts, start, end
}

func (x *docIndex) lineCol(off int) pos {
	off = min(max(off, 0), len(x.data))
	line, _ := slices.BinarySearch(x.lines, off+1) // lines[line-1] <= off
	return pos{line, off - x.lines[line-1] + 1}
}

func (x *docIndex) item(path []string, i int) *docNode {
	for _, n := range slices.Backward(x.nodes) {
		if n.elem == i && slices.Equal(n.path, path) {
			return n
		}
	}
	return nil
}

// firstUnder returns the first node the document writes at path or under
// it, or nil.
func (x *docIndex) firstUnder(path []string) *docNode {
	for _, n := range x.nodes {
		if len(n.path) >= len(path) && slices.Equal(n.path[:len(path)], path) {
			return n
		}
	}
	return nil
}

// position returns where the document sets path: its value, else the
// header of the nearest enclosing table it writes, else 0, 0.
func (x *docIndex) position(path []string) pos {
	for n := len(path); n > 0; n-- {
		if node, ok := x.paths[keyString(path[:n])]; ok {
			return x.lineCol(node.start)
		}
		if node := x.firstUnder(path[:n]); node != nil && n > 1 {
			if !node.header && node.keyStart >= 0 {
				return x.lineCol(node.keyStart)
			}
			return x.lineCol(node.start)
		}
	}
	return pos{}
}

// configError is one problem in a config: "file:line:col: msg", without
// what is not known.
type configError struct {
	file string
	pos
	msg string
}

// pos is a 1-based line and byte column, as go-toml counts them; 0, 0 when
// not known.
type pos struct{ line, col int }

func (e *configError) Error() string {
	switch {
	case e.file == "":
		return e.msg
	case e.line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.file, e.line, e.col, e.msg)
	}
	return e.file + ": " + e.msg
}

// joinErrors returns nil, the only error, or all of them one per line in
// the order of the document; it skips nils.
func joinErrors(errs []error) error {
	errs = slices.DeleteFunc(errs, func(err error) bool { return err == nil })
	if len(errs) == 1 {
		return errs[0]
	}
	at := func(err error) pos {
		if ce, ok := errors.AsType[*configError](err); ok {
			return ce.pos
		}
		return pos{}
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		pa, pb := at(a), at(b)
		return cmp.Or(cmp.Compare(pa.line, pb.line), cmp.Compare(pa.col, pb.col))
	})
	return errors.Join(errs...)
}

// errorAtItem is errorAt for item i of the array at path.
func (c *Config) errorAtItem(path []string, i int, format string, args ...any) error {
	e := c.errorAt(path, format, args...).(*configError)
	if c.src == nil {
		return e
	}
	if n := c.src.item(path, i); n != nil {
		e.pos = c.src.lineCol(n.start)
	}
	return e
}

// errorAt reports a problem with the value of the key at path, pointing at
// where the file sets it, or at its table, or just naming the file. The
// message is prefixed with the key unless it already starts with it.
func (c *Config) errorAt(path []string, format string, args ...any) error {
	key := keyString(path)
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, key+" ") {
		msg = key + ": " + msg
	}
	e := &configError{file: c.name, msg: msg}
	if c.src != nil {
		e.pos = c.src.position(path)
	}
	return e
}

// decodeError locates an error of go-toml's decoder (a key defined twice,
// a number too large) and names the key.
func (x *docIndex) decodeError(err error) error {
	e := &configError{file: x.name, msg: strings.TrimPrefix(err.Error(), "toml: ")}
	if de, ok := errors.AsType[*toml.DecodeError](err); ok {
		e.line, e.col = de.Position()
		// The node whose value, or key, is there (one at most).
		at := func(off int) bool { return off >= 0 && x.lineCol(off) == e.pos }
		if i := slices.IndexFunc(x.nodes, func(n *docNode) bool { return !n.header && at(n.start) || at(n.keyStart) }); i >= 0 {
			n := x.nodes[i]
			e.msg = fmt.Sprintf("%s%s: %s", keyString(n.path), when(n.elem >= 0, "[%d]", n.elem), e.msg)
		}
	}
	return e
}

// At words a message about the value of key (a dotted path such as
// "run.command") as Parse words its errors: "mcpflow.toml:4:11: run.command:
// msg", located at the key, else its table, else naming only the file.
func (c *Config) At(key, format string, args ...any) string {
	return c.errorAt(strings.Split(key, "."), format, args...).Error()
}
