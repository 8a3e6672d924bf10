package relay

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// splitAt cuts b into pieces at the positions the seed picks.
func splitAt(b []byte, seed uint64) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		seed = seed*6364136223846793005 + 1442695040888963407
		n := int(seed>>33)%7 + 1
		if n > len(b) {
			n = len(b)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

var streamCases = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"x\"y\\u00e9\n"}`, `"é日本🎉"`, `123`, `-0.5e+10`, `true`, `false`, `null`,
	` {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}} `,
	`{"a":1,}`, `{"a" 1}`, `{"a":01}`, `[1 2]`, `{"a":tru}`, `{"a":truex}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"` + "\x01" + `"}`,
	"{\"a\":\"\xff\"}", "{\"a\":\"\xe2\x82\"}", "\"\xed\xa0\x80\"", `{"a":1}x`, `{"a":1}{}`, `{`, `[`, `"abc`, `-`, `1.`, `1e`, `{"a":-}`, `[,]`, `{,}`, `[1,]`, `{"a":1]`, `[1}`, ``, `  `,
}

func TestJSONStream(t *testing.T) {
	for _, c := range streamCases {
		want := json.Valid([]byte(c)) && utf8.ValidString(c)
		for seed := range uint64(50) {
			if got := validChunks(splitAt([]byte(c), seed)); got != want {
				t.Fatalf("%q split by seed %d: valid %v, want %v", c, seed, got, want)
			}
		}
		if got := validChunks([][]byte{[]byte(c)}); got != want {
			t.Fatalf("%q whole: valid %v, want %v", c, got, want)
		}
	}
}

// FuzzJSONStream holds validChunks, however the line is cut, to
// json.Valid && utf8.Valid.
func FuzzJSONStream(f *testing.F) {
	for _, c := range streamCases {
		f.Add([]byte(c), uint64(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		want := json.Valid(b) && utf8.Valid(b)
		if got := validChunks(splitAt(b, seed)); got != want {
			t.Fatalf("%q split by seed %d: valid %v, want %v", b, seed, got, want)
		}
	})
}
