package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
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

// decodeError locates an error of go-toml's decoder (a key defined twice,
// a number too large) and names the key.
func (x *docIndex) decodeError(err error) error {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return &configError{file: x.name, msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	line, col := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	off := x.offset(line, col)
	if n := x.values[off]; n != nil {
		msg = n.label() + ": " + msg
	} else if n := x.keys[off]; n != nil {
		msg = n.label() + ": " + msg
	}
	return &configError{file: x.name, line: line, col: col, msg: msg}
}
