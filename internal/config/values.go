package config

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// command is a command line: a string, run with sh -c, or an array of
// strings, executed directly.
type command struct{ Command }

func (*command) expected() string {
	return `a command: a string (run by sh -c) or an array of strings, like ["./bin/server", "--stdio"]`
}

func (c *command) UnmarshalTOML(raw []byte) error {
	v, err := decodeRaw(raw)
	if err != nil {
		return valueError(raw, "expected %s, got %s", c.expected(), describeRaw(raw))
	}
	switch v := v.(type) {
	case string:
		c.Command = Command{Argv: []string{v}, Shell: true}
		if strings.TrimSpace(v) == "" {
			c.Command = Command{}
		}
	case []any:
		argv := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return valueError(raw, "expected %s, got %s as item %d", c.expected(), describeValue(e), i+1)
			}
			argv = append(argv, s)
		}
		c.Command = Command{Argv: argv}
	default:
		return valueError(raw, "expected %s, got %s", c.expected(), describeRaw(raw))
	}
	return nil
}

// duration is a Go duration written as a string: "100ms", "2s", "1m30s".
// The empty string is accepted and reported by empty; keys where it means
// "off" accept it, the others reject it.
type duration struct {
	d     time.Duration
	empty bool
}

func (*duration) expected() string { return `a duration like "2s"` }

const durationForms = `write a number with a unit (ns, us, ms, s, m, h), e.g. "500ms", "2s", "1m30s"`

func (d *duration) UnmarshalTOML(raw []byte) error {
	v, err := decodeRaw(raw)
	if err != nil {
		return valueError(raw, "expected %s, got %s", d.expected(), describeRaw(raw))
	}
	switch v := v.(type) {
	case string:
		s := strings.Join(strings.Fields(v), "")
		if s == "" {
			*d = duration{empty: true}
			return nil
		}
		if isNumber(s) && s != "0" {
			return valueError(raw, "expected %s, got %s with no unit; write %q or %q", d.expected(), describeRaw(raw), s+"s", s+"ms")
		}
		pd, err := time.ParseDuration(s)
		if err != nil {
			return valueError(raw, "expected %s, got %s; %s", d.expected(), describeRaw(raw), durationForms)
		}
		*d = duration{d: pd}
		return nil
	case int64, float64:
		n := goValueText(v)
		return valueError(raw, "expected %s, got %s; durations are strings with a unit: write %q or %q", d.expected(), describeRaw(raw), n+"s", n+"ms")
	default:
		return valueError(raw, "expected %s, got %s; %s", d.expected(), describeRaw(raw), durationForms)
	}
}

// size is a number of bytes: a TOML integer, or a string holding a number
// and an optional unit ("1048576", "512KiB", "64MiB", "1GB", "1.5MiB").
type size struct{ n int64 }

func (*size) expected() string { return `a size like "64MiB"` }

const sizeForms = `write a number of bytes, or a number with a unit: KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "512KiB", "64MiB", "1GB"`

// sizeUnits maps the lowercase size units to their multipliers.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

func (s *size) UnmarshalTOML(raw []byte) error {
	v, err := decodeRaw(raw)
	if err != nil {
		return valueError(raw, "expected %s, got %s", s.expected(), describeRaw(raw))
	}
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return valueError(raw, "expected %s, got %s; a size cannot be negative", s.expected(), describeRaw(raw))
		}
		s.n = v
		return nil
	case string:
		n, unit, ok := parseSize(v)
		if ok {
			s.n = n
			return nil
		}
		hint := sizeForms
		if u := strings.ToLower(unit); u == "k" || u == "m" || u == "g" || u == "t" {
			U := strings.ToUpper(u)
			hint = fmt.Sprintf("%q is ambiguous: write %siB (powers of 1024) or %sB (powers of 1000)", unit, U, U)
		}
		return valueError(raw, "expected %s, got %s; %s", s.expected(), describeRaw(raw), hint)
	default:
		return valueError(raw, "expected %s, got %s; %s", s.expected(), describeRaw(raw), sizeForms)
	}
}

// parseSize parses "64MiB", "1.5 GB", "1048576". It returns the unit it
// saw, for messages, and false when s is not a size or does not fit in an
// int64.
func parseSize(s string) (n int64, unit string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '_' })
	if i < 0 {
		i = len(s)
	}
	num, unit := strings.ReplaceAll(s[:i], "_", ""), strings.TrimSpace(s[i:])
	mult, known := sizeUnits[strings.ToLower(unit)]
	if !known || num == "" || strings.Count(num, ".") > 1 || num[0] == '.' || num[len(num)-1] == '.' {
		return 0, unit, false
	}
	r, good := new(big.Rat).SetString(num)
	if !good {
		return 0, unit, false
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, unit, false
	}
	return q.Int64(), unit, true
}

// decodeRaw decodes one raw TOML value.
func decodeRaw(raw []byte) (any, error) {
	var holder struct {
		V any `toml:"v"`
	}
	doc := append([]byte("v = "), raw...)
	if err := toml.Unmarshal(doc, &holder); err != nil {
		return nil, err
	}
	return holder.V, nil
}

// valueError reports a bad value. raw must be the value's bytes as go-toml
// handed them to UnmarshalTOML: a slice of the document, so that go-toml
// can turn the error into a DecodeError with a position. (go-toml hands a
// value type a buffer of its own only when the document writes it as a
// table, and checkShapes rejects those documents before decoding.)
func valueError(raw []byte, format string, args ...any) error {
	return &unstable.ParserError{Highlight: raw, Message: fmt.Sprintf(format, args...)}
}

// isNumber reports whether s is a plain decimal number: "2", "-1.5".
func isNumber(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Count(s, ".") > 1 {
		return false
	}
	return strings.Trim(s, "0123456789.") == ""
}

// kindOf names the TOML type of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	default:
		return "date"
	}
}

// goValueText renders a decoded scalar for a message.
func goValueText(v any) string {
	switch v := v.(type) {
	case string:
		return clip(TOMLString(v))
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return clip(fmt.Sprint(v))
	}
}

// describeValue describes a decoded value for a message: "integer 2",
// "an array".
func describeValue(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return kindOf(v) + " " + goValueText(v)
}

// describeRaw renders a raw value for a message: "integer 2",
// `string "yes"`, "array [1, 2]".
func describeRaw(raw []byte) string {
	v, err := decodeRaw(raw)
	if err != nil {
		return "a table"
	}
	return kindOf(v) + " " + clip(string(raw))
}

// clip shortens s to one line of at most 40 characters.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 40 {
		r := []rune(s)
		s = string(r[:39]) + "…"
	}
	return s
}
