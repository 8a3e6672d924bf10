package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
)

func TestReaderLimits(t *testing.T) {
	big := strings.Repeat("y", 300<<10) // longer than the read buffer
	in := "1\n\n  \r\n" + `{"id":1,"x":"` + big + `"}` + "\r\n" + `"` + strings.Repeat("z", 5000) + "\"\n[2] "
	rd := NewReader(strings.NewReader(in), 400<<10)
	want := []string{"1", `{"id":1,"x":"` + big + `"}`, `"` + strings.Repeat("z", 5000) + `"`, "[2]"}
	for _, w := range want {
		got, err := rd.Next()
		if err != nil || string(Expand(got)) != w {
			t.Fatalf("got %d bytes, err %v; want %d bytes", len(got), err, len(w))
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}

	// Over the limit: an error with the head, then the stream goes on;
	// the same for a line that fits in the buffer.
	for _, line := range []string{`{"id":42,"x":"` + big + `"}`, `{"id":42,"x":"` + strings.Repeat("y", 200) + `"}`} {
		rd = NewReader(strings.NewReader(line+"\n{\"next\":1}\n"), 100)
		_, err := rd.Next()
		var tl *TooLargeError
		if !errors.As(err, &tl) || string(tl.ID()) != "42" || tl.Size != len(line) || tl.Max != 100 {
			t.Fatalf("want a TooLargeError of %d bytes with id 42, got %v", len(line), err)
		}
		if got, err := rd.Next(); err != nil || string(got) != `{"next":1}` {
			t.Fatalf("after an over-long line: %q %v", got, err)
		}
	}

	// Not JSON, not UTF-8: an error each, then the stream goes on.
	rd = NewReader(strings.NewReader("{not json}\n\"\xff\"\ntrue\n"), 0)
	var bad *InvalidError
	if _, err := rd.Next(); !errors.As(err, &bad) || bad.BadUTF8 || string(bad.Line) != "{not json}" {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := rd.Next(); !errors.As(err, &bad) || !bad.BadUTF8 {
		t.Fatalf("bad UTF-8: %v", err)
	}
	if got, err := rd.Next(); err != nil || string(got) != "true" {
		t.Fatalf("after bad lines: %q %v", got, err)
	}

	// A read error cuts the line: it is no message.
	rd = NewReader(io.MultiReader(strings.NewReader(`{"a":`), iotestErr{}), 0)
	if _, err := rd.Next(); !errors.Is(err, errRead) {
		t.Fatalf("read error: %v", err)
	}
}

var errRead = errors.New("read failed")

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errRead }

// FuzzReader checks the reader against its contract written the simple
// way, over reads of every size and buffers small enough that every path
// is taken: lines in the buffer, long lines gathered, lines over the
// limit, bad lines, a last line at the end of input.
func FuzzReader(f *testing.F) {
	f.Add([]byte("1\n[2]\n\n{\"id\":1}\n"), 8, uint8(3))
	f.Add([]byte(strings.Repeat("9", 100)+"\n\"short\"\r\n  \nnull"), 10, uint8(5))
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"t":"a\"b\\"}}`+"\r\r\n"+`{"id":2}`), 1000, uint8(1))
	f.Add([]byte(strings.Repeat(" ", 50)+"\n\""+strings.Repeat("y", 30)+"\"\r\n{x}\n"), 40, uint8(9))
	f.Fuzz(func(t *testing.T, b []byte, max int, readSize uint8) {
		if max < 1 || max > 1<<20 {
			return
		}
		// bufio's smallest buffer, so that long lines are common
		rd := &Reader{br: bufio.NewReaderSize(&pieceReader{b: b, n: int(readSize)%16 + 1}, 16), max: max}
		for i, w := range splitLines(b, max) {
			got, err := rd.Next()
			var tl *TooLargeError
			var bad *InvalidError
			switch {
			case w.tooLarge > 0:
				if !errors.As(err, &tl) || tl.Size < w.tooLarge-1 || tl.Max != max || !bytes.HasPrefix(w.raw, tl.Head) || len(tl.Head) > HeadSize {
					t.Fatalf("line %d: want a TooLargeError of %d bytes with a prefix of %q, got %q, %v", i, w.tooLarge, w.raw, got, err)
				}
			case w.invalid:
				if !errors.As(err, &bad) || !bytes.Equal(bad.Line, w.line) {
					t.Fatalf("line %d: want an InvalidError for %q, got %q, %v", i, w.line, got, err)
				}
			default:
				if err != nil || !bytes.Equal(got, w.line) {
					t.Fatalf("line %d: want %q, got %q, %v", i, w.line, got, err)
				}
			}
		}
		if got, err := rd.Next(); err != io.EOF {
			t.Fatalf("after the last line: want EOF, got %q, %v", got, err)
		}
	})
}

// wantLine is what the reader must return for one line.
type wantLine struct {
	line     []byte // the line without the white space around it
	raw      []byte
	tooLarge int // the line's size, if over the limit
	invalid  bool
}

// splitLines is the reader's contract, written the simple way.
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
		line := bytes.TrimSpace(raw)
		if len(line) > 0 {
			out = append(out, wantLine{line: line, raw: raw, invalid: !json.Valid(line) || !utf8.Valid(line)})
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

// A line longer than the read buffer comes without its long strings:
// whatever came before it, it takes a slice of the size of what is left
// (its stub); WriteMsg writes the line byte for byte; no file is left in
// the temporary folder (the spool is unlinked at once). When no file can
// be made, the line comes whole, from memory.
func TestReaderLongLinesLetGo(t *testing.T) {
	for _, tmp := range []string{t.TempDir(), "/nonexistent-mcpflow-dir"} {
		t.Setenv("TMPDIR", tmp)
		t.Setenv("TMP", tmp) // Windows
		var in strings.Builder
		sizes := []int{3 << 20, 200 << 10, 5 << 20, 100 << 10}
		for i, n := range sizes {
			fmt.Fprintf(&in, "{\"id\":%d,\"x\":\"%s\",\"s\":\"short\"}\n", i, strings.Repeat("y", n))
		}
		rd := NewReader(strings.NewReader(in.String()), 8<<20)
		rd.Stub = true
		for i, n := range sizes {
			line, err := rd.Next()
			want := fmt.Sprintf(`{"id":%d,"x":"%s","s":"short"}`, i, strings.Repeat("y", n))
			var out bytes.Buffer
			size := Size(line)
			if err == nil {
				err = WriteMsg(&out, line)
			}
			if err != nil || out.String() != want || size != len(want) {
				t.Fatalf("TMPDIR=%s: line %d: %v, %d bytes (Size %d), want %d", tmp, i, err, out.Len(), size, len(want))
			}
			if env, err := Peek(line); err != nil || string(env.ID) != fmt.Sprint(i) {
				t.Fatalf("TMPDIR=%s: line %d: the stub's id: %v %s", tmp, i, err, env.ID)
			}
			if stub := tmp != "/nonexistent-mcpflow-dir"; stub && cap(line) > 200 {
				t.Errorf("TMPDIR=%s: line %d of %d bytes is held in %d", tmp, i, len(want), cap(line))
			} else if !stub && cap(line) > len(line)+8<<10 {
				t.Errorf("TMPDIR=%s: line %d of %d bytes is held in %d", tmp, i, len(line), cap(line))
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("TMPDIR=%s: the spool is still there: %s", tmp, left[0].Name())
			}
		}
		if _, err := rd.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("want EOF, got %v", err)
		}
	}
}

func TestPeek(t *testing.T) {
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
		{in: `{"id":1,"method":7}`, wantErr: true},
		{in: `"string"`, wantErr: true},
	}
	for _, c := range cases {
		e, err := Peek([]byte(c.in))
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err = %v", c.in, err)
			continue
		}
		if err != nil {
			continue
		}
		if string(e.ID) != c.id || e.Method != c.method || e.IsResponse() != c.resp || e.IsNotification() != c.notif || e.HasError != c.hasError {
			t.Errorf("%s: got id=%s method=%q resp=%v notif=%v err=%v", c.in, e.ID, e.Method, e.IsResponse(), e.IsNotification(), e.HasError)
		}
		if e.ID != nil && c.in[e.IDStart:e.IDEnd] != c.id {
			t.Errorf("%s: id span wrong", c.in)
		}
	}
	if e, err := Peek([]byte(`[{"id":1,"method":"a"}]`)); err != nil || !e.IsArray {
		t.Errorf("batch: %v %v", e, err)
	}
}

func TestPartialID(t *testing.T) {
	head := []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"arguments":{"text":"xxxxxxx`)
	if got := string(PartialID(head)); got != `"abc"` {
		t.Fatalf("PartialID = %s", got)
	}
	if got := PartialID([]byte(`{"params":{"text":"xxxx`)); got != nil {
		t.Fatalf("PartialID without id = %s", got)
	}
}

func TestIDProblem(t *testing.T) {
	for id, ok := range map[string]bool{`1`: true, `-2`: true, `6.5`: true, `1e400`: true, `"x"`: true, `null`: false, `{}`: false, `[1]`: false, `true`: false} {
		if got := IDProblem([]byte(id)) == ""; got != ok {
			t.Errorf("IDProblem(%s): ok = %v, want %v", id, got, ok)
		}
	}
}

// FuzzPeek: whatever Peek reads of a valid message, encoding/json reads
// the same way, and splicing a new id keeps the message valid.
func FuzzPeek(f *testing.F) {
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
		if !jsonscan.Valid(b) {
			return
		}
		e, err := Peek(b)
		if err != nil || e.IsArray || e.Ambiguous {
			return // refused, never acted on
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method any             `json:"method"`
		}
		if json.Unmarshal(b, &m) != nil {
			return
		}
		if e.ID != nil && !bytes.Equal(bytes.TrimSpace(m.ID), e.ID) {
			// encoding/json keeps the last duplicate key; Peek too.
			t.Fatalf("id: Peek %s, json %s", e.ID, m.ID)
		}
		if s, ok := m.Method.(string); ok && s != e.Method {
			t.Fatalf("method: Peek %q, json %q", e.Method, s)
		}
		if e.ID != nil {
			if out := Splice(b, e.IDStart, e.IDEnd, []byte(`"mcpflow:1"`)); !json.Valid(out) {
				t.Fatalf("splice made invalid JSON: %s", out)
			}
		}
	})
}

func TestPeekAmbiguous(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, true},
		{`{"jsonrpc":"2.0","id":1,"methoD":"ping"}`, true},
		{`{"jsonrpc":"2.0","id":1,"\u006dethod":"ping"}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestID":1}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1,"progressToken":2}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"id":1,"id":2}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}`, false},
	} {
		e, err := Peek([]byte(c.msg))
		if err != nil {
			t.Fatalf("%s: %v", c.msg, err)
		}
		if e.Ambiguous != c.want {
			t.Errorf("%s: Ambiguous = %v, want %v", c.msg, e.Ambiguous, c.want)
		}
	}
}
