package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// configError is one problem in a config, located when the position is
// known: "name:line:col: msg".
type configError struct {
	file      string
	line, col int
	msg       string
}

func (e *configError) Error() string {
	var b strings.Builder
	if e.file != "" {
		b.WriteString(e.file)
		if e.line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.line, e.col)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.msg)
	return b.String()
}

// joinErrors returns nil, the only error, or all of them one per line in
// the order of the document.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	pos := func(err error) [2]int {
		var ce *configError
		if errors.As(err, &ce) {
			return [2]int{ce.line, ce.col}
		}
		return [2]int{}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := pos(errs[i]), pos(errs[j])
		return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
	})
	return errors.Join(errs...)
}

// errorAt reports a problem with the value of key (a dotted path such as
// "relay.tool"), pointing at where the file sets it, or at its table, or
// just naming the file. The message is prefixed with the key unless it
// already starts with it.
func (c *Config) errorAt(key, format string, args ...any) error {
	return c.errorAtPath(splitKey(key), format, args...)
}

// errorAtItem is errorAt for item i of the array at key.
func (c *Config) errorAtItem(key string, i int, format string, args ...any) error {
	e := c.errorAt(key, format, args...).(*configError)
	if c.src != nil {
		e.line, e.col = c.src.itemPosition(splitKey(key), i)
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
		e.line, e.col = c.src.position(path)
	}
	return e
}

// checkShapes reports keys the document uses as tables where the schema
// has a single value ([run.command], run.command.x = 1), and arrays of
// tables where the schema has a table ([[run]]). go-toml cannot locate
// those errors itself.
func (x *docIndex) checkShapes() []error {
	var errs []error
	seen := map[string]bool{}
	for _, n := range x.nodes {
		if n.elem >= 0 {
			continue
		}
		t, depth := lookupSchema(n.path)
		line, col := x.lineCol(n.start)
		if !n.header {
			line, col = x.lineCol(n.keyStart)
		}
		switch {
		case depth < len(n.path) && t.Kind() == reflect.Struct && !isLeaf(t):
			// go-toml matches keys to fields ignoring case; the strict
			// decoder reports every other unknown key.
			word := n.path[depth]
			if f, ok := fieldByKeyFold(t, word); ok && !seen[keyString(n.path[:depth+1])] {
				seen[keyString(n.path[:depth+1])] = true
				errs = append(errs, &configError{file: x.name, line: line, col: col,
					msg: fmt.Sprintf("unknown key %s (keys are case-sensitive: write %q)", TOMLString(word), tomlTag(f))})
			}
		case depth > 0 && isLeaf(t) && (depth < len(n.path) || n.header):
			key := keyString(n.path[:depth])
			if seen[key] {
				continue
			}
			seen[key] = true
			msg := fmt.Sprintf("%s: expected %s, got a table", key, expectedFor(t, n.path[:depth]))
			if depth < len(n.path) {
				msg += fmt.Sprintf(" (%s)", keyString(n.path))
			}
			errs = append(errs, &configError{file: x.name, line: line, col: col, msg: msg})
		case n.array && depth == len(n.path):
			// Only tables get here: a value's header took the case above.
			key := keyString(n.path)
			errs = append(errs, &configError{file: x.name, line: line, col: col,
				msg: fmt.Sprintf("%s: [[%s]] makes an array of tables; write [%s]", key, key, key)})
		}
	}
	return errs
}

// decodeError turns an error of go-toml's decoder into messages that name
// the key, what it expects and how to fix it.
func (x *docIndex) decodeError(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		errs := make([]error, 0, len(strict.Errors))
		for i := range strict.Errors {
			errs = append(errs, x.unknownKey(&strict.Errors[i]))
		}
		return joinErrors(errs)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		off := x.offset(line, col)
		if n := x.values[off]; n != nil {
			if strings.HasPrefix(msg, "cannot decode TOML ") {
				msg = x.mismatch(n)
			}
			msg = n.label() + ": " + msg
		} else if n := x.keys[off]; n != nil {
			msg = n.label() + ": " + msg
		}
		return &configError{file: x.name, line: line, col: col, msg: msg}
	}
	var perr *unstable.ParserError
	if errors.As(err, &perr) { // raised outside the document: no position
		msg := perr.Message
		if len(perr.Key) > 0 {
			msg = keyString(perr.Key) + ": " + msg
		}
		return &configError{file: x.name, msg: msg}
	}
	return &configError{file: x.name, msg: strings.TrimPrefix(err.Error(), "toml: ")}
}

// mismatch explains a value of the wrong type.
func (x *docIndex) mismatch(n *docNode) string {
	t, _ := lookupSchema(n.path)
	if n.elem >= 0 && t.Kind() == reflect.Slice {
		t = deref(t.Elem())
	}
	msg := fmt.Sprintf("expected %s, got %s", expectedFor(t, n.path), n.got())
	raw := string(n.raw)
	switch {
	case t.Kind() == reflect.String && n.kind != unstable.InlineTable && n.kind != unstable.Array:
		msg += fmt.Sprintf("; quote it: %s", TOMLString(raw))
	case t.Kind() == reflect.Int && n.kind == unstable.String:
		if s := strings.Trim(raw, `"'`); isNumber(s) {
			msg += fmt.Sprintf("; remove the quotes: %s", s)
		}
	case t.Kind() == reflect.Bool && n.kind == unstable.String:
		if s := strings.Trim(raw, `"'`); s == "true" || s == "false" {
			msg += fmt.Sprintf("; remove the quotes: %s", s)
		}
	case t.Kind() == reflect.Slice && n.kind == unstable.String:
		msg += fmt.Sprintf("; write an array: [%s]", raw)
	}
	return msg
}

// unknownKey explains a key the schema does not have, with a suggestion.
func (x *docIndex) unknownKey(de *toml.DecodeError) error {
	line, col := de.Position()
	path := []string(de.Key())
	n := x.keys[x.offset(line, col)]
	if n != nil {
		path = n.path
		if n.header {
			line, col = x.lineCol(n.start)
		}
	}
	t, depth := lookupSchema(path)
	if depth >= len(path) { // cannot happen; keep go-toml's words
		return &configError{file: x.name, line: line, col: col, msg: strings.TrimPrefix(de.Error(), "toml: ")}
	}
	return &configError{file: x.name, line: line, col: col, msg: unknownKeyMessage(path[depth], path[:depth], t)}
}
