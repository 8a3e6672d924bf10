package relay

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/jsonscan"
)

func TestPeekEnvelope(t *testing.T) {
	cases := []struct {
		in       string
		id       string
		method   string
		resp     bool
		notif    bool
		hasError bool
		wantErr  bool
	}{
		{in: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`, id: "0", method: "initialize"},
		{in: `{"jsonrpc":"2.0","id":"a\"b","result":{"x":[1,2,{"y":"}"}]}}`, id: `"a\"b"`, resp: true},
		{in: ` {"method":"notifications/initialized","jsonrpc":"2.0"} `, method: "notifications/initialized", notif: true},
		{in: `{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}`, id: "3", resp: true, hasError: true},
		{in: `{"id":1,"me\u0074hod":"ping"}`, id: "1", method: "ping"},
		{in: `{"result":"\\\\","id":-7}`, id: "-7", resp: true},
		{in: `{"id":1,"method":"x"`, wantErr: true},
		{in: `{"id":1,"method":"x"} trailing`, wantErr: true},
		{in: `{"id":1,"method":7}`, wantErr: true},
		{in: `"string"`, wantErr: true},
		{in: `{"a":"unterminated}`, wantErr: true},
	}
	for _, c := range cases {
		e, err := peekEnvelope([]byte(c.in))
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err = %v", c.in, err)
			continue
		}
		if err != nil {
			continue
		}
		if string(e.id) != c.id || e.method != c.method || e.isResponse() != c.resp || e.isNotification() != c.notif || e.hasError != c.hasError {
			t.Errorf("%s: got id=%s method=%q resp=%v notif=%v err=%v", c.in, e.id, e.method, e.isResponse(), e.isNotification(), e.hasError)
		}
		if e.id != nil && string([]byte(c.in)[e.idStart:e.idEnd]) != c.id {
			t.Errorf("%s: id span wrong", c.in)
		}
	}
	if e, err := peekEnvelope([]byte(`[{"id":1,"method":"a"}]`)); err != nil || !e.isArray {
		t.Errorf("batch: %v %v", e, err)
	}
}

func TestPartialID(t *testing.T) {
	head := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"arguments":{"text":"xxxxxxx`)
	if got := string(partialID(head)); got != `"abc"` {
		t.Fatalf("partialID = %s", got)
	}
	if got := partialID([]byte(`{"params":{"text":"xxxx`)); got != nil {
		t.Fatalf("partialID without id = %s", got)
	}
}

func TestLineReaderLimits(t *testing.T) {
	big := strings.Repeat("y", 300<<10) // larger than the bufio buffer
	in := "a\n\n  \n" + `{"id":1,"x":"` + big + `"}` + "\n" + strings.Repeat("z", 5000) + "\nlast"
	lr := newLineReader(strings.NewReader(in), 400<<10)
	want := []string{"a", `{"id":1,"x":"` + big + `"}`, strings.Repeat("z", 5000), "last"}
	for _, w := range want {
		got, err := lr.next()
		if err != nil || string(got) != w {
			t.Fatalf("got %d bytes, err %v; want %d bytes", len(got), err, len(w))
		}
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}

	// Over the limit: an error with the head, then the stream goes on.
	lr = newLineReader(strings.NewReader(`{"id":42,"x":"`+big+`"}`+"\nnext\n"), 100<<10)
	_, err := lr.next()
	tl, ok := err.(*errTooLarge)
	if !ok || string(partialID(tl.Head)) != "42" {
		t.Fatalf("want errTooLarge with id 42, got %v", err)
	}
	if got, err := lr.next(); err != nil || string(got) != "next" {
		t.Fatalf("after an over-long line: %q %v", got, err)
	}
}

func testRelay(cfg Config) *Relay {
	cfg.Logger = nil
	return New(cfg)
}

func TestInjectToolsPagination(t *testing.T) {
	r := testRelay(Config{Tool: "recompile"})
	cases := []struct {
		name   string
		in     string
		inject bool
	}{
		{"last page", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}`, true},
		{"empty list", `{"jsonrpc":"2.0","id":1,"result":{"tools":[ ]}}`, true},
		{"null cursor", `{"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":null}}`, true},
		{"middle page", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"p2"}}`, false},
	}
	for _, c := range cases {
		env, err := peekEnvelope([]byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		out := r.sw.tools.inject([]byte(c.in), env)
		var m struct {
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s: invalid JSON out: %s", c.name, out)
		}
		has := false
		for _, tl := range m.Result.Tools {
			if tl.Name == "recompile" {
				has = true
			}
		}
		if has != c.inject {
			t.Errorf("%s: injected=%v, want %v: %s", c.name, has, c.inject, out)
		}
		if !c.inject && !bytes.Equal(out, []byte(c.in)) {
			t.Errorf("%s: bytes changed without injection", c.name)
		}
	}
}

func TestForcedResult(t *testing.T) {
	in := `{"protocolVersion":"2025-11-25","capabilities":{"prompts":{},"logging":{},"x-custom":{"a":1}},"serverInfo":{"name":"s","version":"1.0"},"instructions":"hi","extra":[1]}`
	out, err := forcedResult([]byte(in), true, "-dev")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(out, &m)
	caps := m["capabilities"].(map[string]any)
	if caps["tools"].(map[string]any)["listChanged"] != true {
		t.Errorf("tools not added: %s", out)
	}
	if caps["prompts"].(map[string]any)["listChanged"] != true {
		t.Errorf("prompts not forced: %s", out)
	}
	if _, ok := caps["resources"]; ok {
		t.Errorf("resources invented: %s", out)
	}
	if caps["x-custom"].(map[string]any)["a"] != float64(1) || m["instructions"] != "hi" || m["extra"] == nil {
		t.Errorf("unknown fields lost: %s", out)
	}
	if m["serverInfo"].(map[string]any)["name"] != "s-dev" || m["serverInfo"].(map[string]any)["version"] != "1.0-dev" {
		t.Errorf("suffix: %s", out)
	}
}

func TestDiffTools(t *testing.T) {
	old := []toolInfo{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, {Name: "old"}}
	cur := []toolInfo{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{}}}`)}, {Name: "reverse"}}
	d := diffTools(old, cur, true)
	if line := d.String(); line != "~echo (input schema changed) +reverse -old" {
		t.Fatalf("diff = %q", line)
	}
	if len(d.Details) != 2 || !d.Details["echo"].SchemaChanged || d.Details["reverse"].SchemaChanged {
		t.Fatalf("details = %v", d.Details)
	}
	if !slices.Equal(d.Added, []string{"reverse"}) || !slices.Equal(d.Removed, []string{"old"}) ||
		!slices.Equal(d.Changed, []string{"echo"}) || !slices.Equal(d.Current, []string{"echo", "reverse"}) {
		t.Fatalf("diff = %+v", d)
	}
	if d := diffTools(nil, cur, false); d.Known || d.String() != "" || len(d.Current) != 2 {
		t.Fatalf("unknown baseline: %+v", d)
	}
}

func FuzzPeekEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`,
		`{"id":"x","result":{"tools":[]}}`,
		`[{"id":1,"method":"a"}]`,
		`{"a":"\\\"","b":[1,{"c":null}]}`,
		`{"id":1e3,"method":"\u0070ing"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := peekEnvelope(b)
		if err != nil || e.isArray {
			return
		}
		// Whatever the scanner accepts as an object, encoding/json must
		// agree on its id and method when it is valid JSON. (The relay
		// checks UTF-8 first; encoding/json would replace bad bytes.)
		if !json.Valid(b) || !utf8.Valid(b) {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method any             `json:"method"`
		}
		if json.Unmarshal(b, &m) != nil {
			return
		}
		if e.id != nil && !bytes.Equal(bytes.TrimSpace(m.ID), e.id) {
			// encoding/json keeps the last duplicate key; the scanner too.
			t.Fatalf("id: scanner %s, json %s", e.id, m.ID)
		}
		if s, ok := m.Method.(string); ok && s != e.method {
			t.Fatalf("method: scanner %q, json %q", e.method, s)
		}
		// Splicing a new id keeps the message valid.
		if e.id != nil {
			out := splice(b, e.idStart, e.idEnd, []byte(`"mcpflow:1"`))
			if !json.Valid(out) {
				t.Fatalf("splice made invalid JSON: %s", out)
			}
		}
	})
}

// FuzzLineReader checks the line reader against a plain split of the
// same bytes, with tiny buffers and chunks and reads of every size, so
// every path is taken: lines in the buffer, long lines read into chunks,
// bytes past a line's end put back, lines over the limit, a last line at
// EOF. A long line's scan, fed as it was read, must match a scan of the
// whole line.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\n\n{\"id\":1}\n"), 8, uint8(4), uint8(3), uint8(2), false)
	f.Add([]byte(strings.Repeat("x", 100)+"\nshort\r\n  \nlast"), 10, uint8(7), uint8(5), uint8(3), true)
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"t":"a\"b\\"}}`+"\r\r\n"+`{"id":2}`), 1000, uint8(5), uint8(6), uint8(1), true)
	f.Add([]byte(strings.Repeat(" ", 50)+"\n"+strings.Repeat("y", 30)+"\r\n"), 40, uint8(3), uint8(4), uint8(9), true)
	f.Fuzz(func(t *testing.T, b []byte, max int, bufSize, chunk, readSize uint8, keep bool) {
		if max < 1 || max > 1<<20 {
			return
		}
		bs, cs, rs := int(bufSize)%64+1, int(chunk)%64+1, int(readSize)%16+1
		lr := newLineReaderSize(&pieceReader{b: b, n: rs}, max, bs, func() ([]byte, bool) { return make([]byte, 0, cs), true })
		lr.scan = new(chunkScanner)
		for i, w := range splitLines(b, max) {
			var line []byte
			var err error
			if keep {
				var chunks [][]byte
				line, chunks, err = lr.nextChunks()
				if chunks != nil {
					line = bytes.Join(chunks, nil)
					got, gerr := lr.scan.result()
					want, werr := scanChunks([][]byte{line})
					if (gerr == nil) != (werr == nil) || gerr == nil && (string(got.id) != string(want.id) || got.method != want.method || got.isResponse() != want.isResponse()) {
						t.Fatalf("line %d: scan while reading = %+v, %v; scan of the line = %+v, %v", i, got, gerr, want, werr)
					}
				}
			} else {
				line, err = lr.next()
			}
			if w.tooLarge > 0 {
				tl, ok := err.(*errTooLarge)
				if !ok || tl.Size != w.tooLarge || tl.Max != max || len(tl.Head) == 0 || len(tl.Head) > headSize || !bytes.HasPrefix(w.raw, tl.Head) {
					t.Fatalf("line %d: want errTooLarge of %d bytes with a prefix of %q, got %q, %v", i, w.tooLarge, w.raw, line, err)
				}
				continue
			}
			if err != nil || string(line) != string(w.line) {
				t.Fatalf("line %d: want %q, got %q, %v", i, w.line, line, err)
			}
		}
		if line, err := lr.next(); err != io.EOF {
			t.Fatalf("after the last line: want EOF, got %q, %v", line, err)
		}
	})
}

// wantLine is what the line reader must return for one line.
type wantLine struct {
	line     []byte // the line, \r trimmed
	raw      []byte
	tooLarge int // the line's size, if over the limit
}

// splitLines is the line reader's contract, written the simple way.
func splitLines(b []byte, max int) []wantLine {
	var out []wantLine
	parts := bytes.Split(b, []byte("\n"))
	if len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1] // the stream ended with a newline
	}
	for _, raw := range parts {
		if len(raw) > max {
			out = append(out, wantLine{raw: raw, tooLarge: len(raw)})
			continue
		}
		line := bytes.TrimRight(raw, "\r")
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, wantLine{line: line, raw: raw})
		}
	}
	return out
}

// pieceReader returns at most n bytes per Read, and nothing every third
// call (which a reader may do).
type pieceReader struct {
	b     []byte
	n     int
	calls int
}

func (r *pieceReader) Read(p []byte) (int, error) {
	r.calls++
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.calls%3 == 0 {
		return 0, nil
	}
	n := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[n:]
	return n, nil
}

// FuzzScanChunks: on any message the contiguous scanner accepts, the
// chunked scanner, fed the same bytes cut anywhere, finds the same id,
// method and kind.
func FuzzScanChunks(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"b\\"}]}}`,
		`{"result":{"x":"}{]["},"jsonrpc":"2.0","id":"s\"1"}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":[1,2,3]}}`,
	} {
		f.Add([]byte(s), uint8(5), uint8(17))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut1, cut2 uint8) {
		want, err := peekEnvelope(b)
		if err != nil || want.isArray || !jsonscan.Valid(b) {
			return
		}
		// Cut into up to three chunks.
		c1, c2 := int(cut1)%(len(b)+1), int(cut2)%(len(b)+1)
		if c1 > c2 {
			c1, c2 = c2, c1
		}
		got, err := scanChunks([][]byte{b[:c1], b[c1:c2], b[c2:]})
		if err != nil {
			t.Fatalf("scanChunks rejects what peekEnvelope accepts: %v", err)
		}
		if string(bytes.TrimSpace(got.id)) != string(want.id) || got.method != want.method || got.isResponse() != want.isResponse() {
			t.Fatalf("got id=%s method=%q resp=%v, want id=%s method=%q resp=%v", got.id, got.method, got.isResponse(), want.id, want.method, want.isResponse())
		}
	})
}

func TestScanChunksRejects(t *testing.T) {
	for _, s := range []string{`{"id":1,"result":{"a":"b"}`, `{"id":1,"result":"x}`, `{"id":1,"result":[}}`, `[1]`, `{"id":1} x`, `{"id":1,"result":{"x":tru}}`, "{\"id\":1,\"result\":\"\xff\"}"} {
		if _, err := scanChunks([][]byte{[]byte(s[:len(s)/2]), []byte(s[len(s)/2:])}); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}
