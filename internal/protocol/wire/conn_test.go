package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpflow/mcpflow/internal/protocol/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer serves a Go SDK server through Serve and SDKServer on pipes and
// returns a writer for the client's lines and the server's lines.
func rawServer(t *testing.T, max int) (io.WriteCloser, <-chan string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	started := make(chan struct{}, 4)
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "canceled"}}}, nil, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, NewReader(inR, max), outW, SDKServer{Server: srv}, ServeOptions{})
		outW.Close()
	}()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
	})
	go func() {
		for range started {
		}
	}()
	return inW, lines
}

func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return ""
	}
}

// What no SDK client sends: every line gets one answer with the id the
// client wrote, byte for byte, or an error; and the session goes on.
func TestTransportKeepsPromises(t *testing.T) {
	in, lines := rawServer(t, 4096)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(what string, want ...string) {
		t.Helper()
		got := nextLine(t, lines)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: got %s, want %q in it", what, got, w)
			}
		}
	}
	send("{not json}")
	expect("bad JSON", `"id":null`, `-32700`)
	send("\"\xff\"")
	expect("bad UTF-8", `"id":null`, `-32700`)
	for _, bad := range []string{"42", `{"foo":1}`, `{"jsonrpc":"2.0","id":{},"method":"x"}`, `{"jsonrpc":"2.0","id":null,"method":"x"}`, `{"jsonrpc":"2.0","id":true,"method":"ping"}`} {
		send(bad)
		expect(bad, `"id":null`, `-32600`)
	}
	send(`{"jsonrpc":"2.0","id":6.5,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	expect("initialize with id 6.5", `{"jsonrpc":"2.0","id":6.5,"result":`, `"protocolVersion":"2025-03-26"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{`9007199254740993`, `"é\"\u0001x"`, `-0`, `1e2`, `"a\/b"`} {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		expect("id "+id, `{"jsonrpc":"2.0","id":`+id+`,"result":`, `"hi"`)
	}
	// A message over the limit, with its id before the cut.
	send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 5000) + `"}}}`)
	expect("too large", `"id":"big"`, `-32600`, `relay.max_message`)
	// An id in flight is refused; a canceled call gets no answer.
	send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow"}}`)
	send(`{"jsonrpc":"2.0","id":"s","method":"ping"}`)
	expect("duplicate id", `"id":"s"`, `-32600`, "in flight")
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s"}}`)
	// A batch: one array, with the error of an element that is no message.
	send(`[{"jsonrpc":"2.0","id":7.25,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}},5,{"jsonrpc":"2.0","method":"notifications/x"}]`)
	got := nextLine(t, lines)
	var arr []json.RawMessage
	if err := json.Unmarshal([]byte(got), &arr); err != nil || len(arr) != 2 || !strings.Contains(got, `"id":7.25,"result"`) || !strings.Contains(got, `-32600`) {
		t.Errorf("batch: got %s, want an array of the call's answer and one error", got)
	}
	send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	expect("after all that", `{"jsonrpc":"2.0","id":"last","result":{}}`)
	select {
	case l := <-lines:
		t.Errorf("unexpected line (an answer to the canceled call?): %s", l)
	case <-time.After(200 * time.Millisecond):
	}
}

// A request read before the input ended is answered before the session
// ends (a one-shot client closes its input, then reads).
func TestTransportAnswersAfterTheInputEnds(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "slow"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		time.Sleep(300 * time.Millisecond) // a slow tool: its answer comes well after the input ended
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	in := strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow"}}`,
	}, "\n"))
	var out strings.Builder
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), NewReader(in, 0), &syncWriter{w: &out}, SDKServer{Server: srv}, ServeOptions{})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end after its input did")
	}
	if !strings.Contains(out.String(), `{"jsonrpc":"2.0","id":"s","result":`) || !strings.Contains(out.String(), "done") {
		t.Errorf("the call read before the end of input got no answer:\n%s", out.String())
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// FuzzTransport: whatever bytes a client writes, a Go SDK server behind
// Serve and SDKServer neither panics nor hangs, writes only JSON lines,
// and answers every request line that has a valid id, under that id, at
// most once per time the id was sent.
func FuzzTransport(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}` + "\n" + `{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\n{not json\n" + `[{"jsonrpc":"2.0","id":3,"method":"ping"},7]`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993}}`,
		"\"\xff\"\n{}\n[]\n" + `{"jsonrpc":"2.0","id":{},"method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
		var out strings.Builder
		done := make(chan error, 1)
		go func() {
			done <- Serve(context.Background(), NewReader(bytes.NewReader(b), 1<<16), &syncWriter{w: &out}, SDKServer{Server: srv}, ServeOptions{})
		}()
		select {
		case <-done:
		case <-time.After(InputGrace + 5*time.Second):
			t.Fatalf("the session did not end after its input did: %q", b)
		}
		answers := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			if !json.Valid([]byte(line)) {
				t.Fatalf("wrote a line that is not JSON: %q", line)
			}
			msgs := []json.RawMessage{json.RawMessage(line)}
			if line[0] == '[' {
				_ = json.Unmarshal([]byte(line), &msgs)
			}
			for _, m := range msgs {
				if env, err := Peek(m); err == nil && env.IsResponse() && env.ID != nil {
					answers[string(env.ID)]++
				}
			}
		}
		sent := map[string]int{}
		canceled := map[string]bool{} // a canceled request gets no answer
		for _, line := range bytes.Split(b, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 || len(line) > 1<<16 || line[0] != '{' || !json.Valid(line) || !utf8.Valid(line) {
				continue
			}
			env, err := Peek(line)
			if err == nil && env.IsRequest() && IDProblem(env.ID) == "" && string(env.Version) == `"2.0"` {
				sent[string(env.ID)]++
			}
			if err == nil && env.Method == "notifications/cancelled" {
				canceled[string(jsonscan.Member(env.Params, "requestId"))] = true
			}
		}
		for id, n := range sent {
			if answers[id] == 0 && !canceled[id] {
				t.Fatalf("request id %s sent %d times got no answer:\ninput %q\noutput %q", id, n, b, out.String())
			}
			if answers[id] > n {
				t.Fatalf("request id %s sent %d times got %d answers:\ninput %q\noutput %q", id, n, answers[id], b, out.String())
			}
		}
	})
}

// A subscriptions/listen stream's notifications carry the listen
// request's id as the client sent it (Claude Code 2.1.330's "listen:0"),
// not the number the SDK knew it by: the client waits for that
// acknowledgement before it lists anything.
func TestTransportKeepsListenIDs(t *testing.T) {
	in, lines := rawServer(t, 1<<20)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.330"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`
	io.WriteString(in, `{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{`+meta+`}}`+"\n")
	if got := nextLine(t, lines); !strings.Contains(got, `"id":"server-discover-probe-1","result"`) {
		t.Fatalf("discover: %s", got)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{`+meta+`,"notifications":{"toolsListChanged":true}}}`+"\n")
	got := nextLine(t, lines)
	if !strings.Contains(got, `"notifications/subscriptions/acknowledged"`) || !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":"listen:0"`) {
		t.Fatalf("acknowledgement: %s", got)
	}
	// The input ends with only the stream open: nothing waits for it to
	// be answered, so no shutting-down error ends it.
	in.Close()
	for l := range lines {
		if strings.Contains(l, `"id":"listen:0"`) {
			t.Fatalf("the listen stream was answered at the end of input: %s", l)
		}
	}
}
