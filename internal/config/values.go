package config

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// decodeCommand decodes a command: a string (blank: none) or an array of
// strings. got describes v as written.
func decodeCommand(v any, got func() string) (any, string) {
	switch v := v.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return Command{}, ""
		}
		return Command{Argv: []string{v}, Shell: true}, ""
	case []any:
		argv := make([]string, len(v))
		for i, e := range v {
			var ok bool
			if argv[i], ok = e.(string); !ok {
				return nil, fmt.Sprintf("expected %s, got %s as item %d", kCommand.expected(), describeValue(e), i+1)
			}
		}
		return Command{Argv: argv}, ""
	}
	return nil, fmt.Sprintf("expected %s, got %s", kCommand.expected(), got())
}

const durationForms = `write a number with a unit (ns, us, ms, s, m, h), e.g. "500ms", "2s", "1m30s"`

// decodeDuration decodes a Go duration written as a string; "" is 0 where
// emptyOK.
func decodeDuration(v any, got func() string, emptyOK bool) (any, string) {
	expected := kDuration.expected()
	switch v := v.(type) {
	case string:
		s := strings.Join(strings.Fields(v), "")
		switch {
		case s == "" && emptyOK:
			return time.Duration(0), ""
		case s == "":
			return nil, fmt.Sprintf("expected %s, got an empty string; %s", expected, durationForms)
		case isNumber(s) && s != "0":
			return nil, fmt.Sprintf("expected %s, got %s with no unit; write %q or %q", expected, got(), s+"s", s+"ms")
		}
		if d, err := time.ParseDuration(s); err == nil {
			return d, ""
		}
	case int64, float64:
		n := number(v)
		return nil, fmt.Sprintf("expected %s, got %s; durations are strings with a unit: write %q or %q", expected, got(), n+"s", n+"ms")
	}
	return nil, fmt.Sprintf("expected %s, got %s; %s", expected, got(), durationForms)
}

const sizeForms = `write a number of bytes, or a number with a unit: KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "512KiB", "64MiB", "1GB"`

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// decodeSize decodes a number of bytes: an integer, or a string with an
// optional unit.
func decodeSize(v any, got func() string) (any, string) {
	hint := sizeForms
	switch v := v.(type) {
	case int64:
		if v >= 0 {
			return v, ""
		}
		hint = "a size cannot be negative"
	case string:
		n, unit, ok := parseSize(v)
		if ok {
			return n, ""
		}
		if u := strings.ToLower(unit); u == "k" || u == "m" || u == "g" || u == "t" {
			hint = fmt.Sprintf("%q is ambiguous: write %[2]siB (powers of 1024) or %[2]sB (powers of 1000)", unit, strings.ToUpper(u))
		}
	}
	return nil, fmt.Sprintf("expected %s, got %s; %s", kSize.expected(), got(), hint)
}

// parseSize parses "64MiB", "1.5 GB", "1048576", returning the unit it saw
// for messages.
func parseSize(s string) (n int64, unit string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '_' })
	if i < 0 {
		i = len(s)
	}
	num, unit := strings.ReplaceAll(s[:i], "_", ""), strings.TrimSpace(s[i:])
	mult, known := sizeUnits[strings.ToLower(unit)]
	r, good := new(big.Rat).SetString(num)
	if !known || !isNumber(num) || !good {
		return 0, unit, false
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if !q.IsInt64() {
		return 0, unit, false
	}
	return q.Int64(), unit, true
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

// describeValue describes a decoded value for a message: "integer 2",
// "an array".
func describeValue(v any) string {
	switch v := v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case string:
		return "string " + clip(TOMLString(v))
	case int64:
		return "integer " + number(v)
	case float64:
		return "float " + number(v)
	case bool:
		return "boolean " + strconv.FormatBool(v)
	}
	return "date " + clip(fmt.Sprint(v))
}

// number writes a decoded integer or float.
func number(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// clip shortens s to one line of at most 40 characters.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:39]) + "…"
	}
	return s
}
