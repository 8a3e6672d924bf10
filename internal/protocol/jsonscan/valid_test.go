package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValid: Valid is exactly json.Valid && utf8.Valid.
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`[1,-2.5e+3,true,false,null,"\u00e9\n",{}]`, ` {"a" : [ ] } `, `{"a":1,}`, `[01]`, `"\ud800"`, `-`, `1.`, `1e`,
		`"abcdefghijklmnop\"qrstuvwxyz"`, "\"abcdefgh\x01ijklmnop\"", `"abcdefghijklmnopqrstuvwx\\yz"`, "\"abcdefghéijklmnop\x7f\"", `"abcdefghijklmnop`,
		"\"\xff\"", "\"é\"", `{"a":"b"}x`, `{"a"}`, `[1 2]`, "\"\x01\"", `{"a":[}`, `{"a":{]}`, ``, ` `, `nul`, `[,]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b) && utf8.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid && utf8.Valid = %v", b, got, want)
		}
	})
}

func TestValidDepth(t *testing.T) {
	for _, depth := range []int{maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closeTo := map[string]string{"[": "]", `{"a":`: "}"}[open]
			for _, inner := range []string{"1", "[]", "{}"} {
				d := depth
				if inner != "1" {
					d-- // an empty container is a level too
				}
				b := []byte(strings.Repeat(open, d) + inner + strings.Repeat(closeTo, d))
				if got, want := Valid(b), json.Valid(b); got != want {
					t.Fatalf("depth %d, %s…%s…: Valid %v, json.Valid %v", depth, open, inner, got, want)
				}
			}
		}
	}
}
