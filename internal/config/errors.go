package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

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

// errorAt reports a problem with the value of key (a dotted path such as
// "relay.tool"), pointing at where the file sets it, or at its table, or
// just naming the file. The message is prefixed with the key unless it
// already starts with it.
func (c *Config) errorAt(key, format string, args ...any) error {
	return c.errorAtPath(strings.Split(key, "."), format, args...)
}

// errorAtItem is errorAtPath for item i of the array at path.
func (c *Config) errorAtItem(path []string, i int, format string, args ...any) error {
	e := c.errorAtPath(path, format, args...).(*configError)
	if c.src == nil {
		return e
	}
	if n := c.src.item(path, i); n != nil {
		e.pos = c.src.lineCol(n.start)
	}
	return e
}

// errorAtPath is errorAt for a key path whose parts may hold dots.
func (c *Config) errorAtPath(path []string, format string, args ...any) error {
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
