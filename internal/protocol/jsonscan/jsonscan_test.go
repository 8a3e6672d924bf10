package jsonscan

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestMembers(t *testing.T) {
	msg := []byte(` {"a" : 1, "b\u0022c":"x\"}", "d":{"e":[1,{"f":"]"}]}, "g":null} `)
	got := map[string]string{}
	err := Members(msg, SkipSpace(msg, 0), func(key []byte, vs, ve int) error {
		got[string(key)] = string(msg[vs:ve])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", `b"c`: `"x\"}"`, "d": `{"e":[1,{"f":"]"}]}`, "g": "null"}
	if len(got) != len(want) {
		t.Fatalf("members = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("member %q = %s, want %s", k, got[k], v)
		}
	}
	if v := Member(msg, "d"); string(v) != want["d"] {
		t.Errorf(`Member(msg, "d") = %s`, v)
	}
	if v := Member(msg, "zz"); v != nil {
		t.Errorf(`Member(msg, "zz") = %s, want nil`, v)
	}
	if s, err := Unquote([]byte(`"a\u00e9\n"`)); err != nil || s != "aé\n" {
		t.Errorf("Unquote = %q, %v", s, err)
	}
}

func TestMembersRejects(t *testing.T) {
	for _, bad := range []string{`{"a":1`, `{"a" 1}`, `{"a":1,}`, `{"a":"x}`, `{"a":[1,2}`, `{"a":1} x`, `{a:1}`, `{"a":tru}`} {
		b := []byte(bad)
		if err := Members(b, 0, nil); err == nil {
			t.Errorf("Members(%s) = nil, want an error", bad)
		}
	}
	// A callback's error stops the walk and is returned.
	b := []byte(`{"a":1,"b":2}`)
	n := 0
	err := Members(b, 0, func([]byte, int, int) error { n++; return ErrFound })
	if !errors.Is(err, ErrFound) || n != 1 {
		t.Errorf("Members with a stopping callback: %v after %d members", err, n)
	}
}

// TestSkipValueAgreesWithEncodingJSON: on valid JSON, skipValue ends each
// value where encoding/json's decoder does.
func TestSkipValueAgreesWithEncodingJSON(t *testing.T) {
	for _, v := range []string{`"a\\"`, `"\\\""`, `-1.5e+3`, `[]`, `[ [ ], { } ]`, `{"k":[true,false,null]}`, `"é"`} {
		b := []byte(v + ` ,`)
		end, err := skipValue(b, 0)
		if err != nil || end != len(v) {
			t.Errorf("skipValue(%s) = %d, %v; want %d", v, end, err, len(v))
		}
		if !json.Valid(b[:end]) {
			t.Errorf("%s: the span is not one JSON value", v)
		}
	}
}

func TestFirstKey(t *testing.T) {
	for _, c := range []struct {
		obj  string
		want string
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"x":[1,2]}}`, "result"},
		{`{"jsonrpc":"2.0","method":"m","params":{"result":1}}`, "method"},
		{` { "id" : "a" , "error" : {} } `, "error"},
		{`{"id":1,"res\u0075lt":{}}`, "result"},
		{`{"id":1,"params":{"method":"x"}}`, ""},
		{`{"id":1,"result":{"unterminated`, "result"}, // its value is never walked
		{`[1]`, ""},
		{`{"id":{"broken`, ""},
	} {
		if got := FirstKey([]byte(c.obj), "method", "result", "error"); got != c.want {
			t.Errorf("FirstKey(%s) = %q, want %q", c.obj, got, c.want)
		}
	}
}
