package httpmcp

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// These tests drive a Link as the relay does, line by line, in front of
// the kit's fixture serving Streamable HTTP (-http). The relay's own
// behaviour over an HTTP child (replay, reload, crashes) is tested end to
// end in cmd/mcpflow (http_child_e2e_test.go).

// linkRun is one start of the fixture behind a Link.
type linkRun struct {
	t    *testing.T
	l    *Link
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	logs *testkit.Buffer
	done chan struct{} // closed when the process was waited
}

var anyPort = Child{URL: "http://127.0.0.1:{port}/mcp", Placeholder: "{port}", Wait: 10 * time.Second}

func startLink(t *testing.T, c Child, args ...string) *linkRun {
	t.Helper()
	cmd := testkit.Command(testkit.Tag(t), nil, testkit.Fixture(t), append([]string{"-http", "127.0.0.1:{port}"}, args...)...)
	l := c.Link()
	in, out, logs, err := l.Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	l.Started(err)
	if err != nil {
		t.Fatal(err)
	}
	r := &linkRun{t: t, l: l, cmd: cmd, in: in, out: bufio.NewReader(out), logs: &testkit.Buffer{}, done: make(chan struct{})}
	go func() { io.Copy(r.logs, logs) }()
	go func() { cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		<-r.done
		testkit.NoLeftovers(t, testkit.Procs{Pids: []int{cmd.Process.Pid}})
	})
	return r
}

func (r *linkRun) send(lines ...string) {
	r.t.Helper()
	for _, line := range lines {
		if _, err := io.WriteString(r.in, line+"\n"); err != nil {
			r.t.Fatal(err)
		}
	}
}

// next is the next line out; "" at its end.
func (r *linkRun) next() string {
	r.t.Helper()
	ch := make(chan string, 1)
	go func() {
		s, _ := r.out.ReadString('\n')
		ch <- s
	}()
	select {
	case s := <-ch:
		return strings.TrimSpace(s)
	case <-time.After(30 * time.Second):
		r.t.Fatal("no line from the link")
		return ""
	}
}

// until reads lines until one holds want, and returns it.
func (r *linkRun) until(want string) string {
	r.t.Helper()
	for {
		line := r.next()
		if line == "" {
			r.t.Fatalf("out ended before %s", want)
		}
		if strings.Contains(line, want) {
			return line
		}
	}
}

const (
	initLegacy  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func call(id, tool, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// TestLinkIDsKept: the answers carry the ids as the relay wrote them
// (strings, large integers), and the server's session stays in the link.
func TestLinkIDsKept(t *testing.T) {
	t.Parallel()
	r := startLink(t, anyPort)
	r.send(initLegacy)
	if got := r.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":`) || !strings.Contains(got, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s", got)
	}
	r.send(initialized)
	for _, id := range []string{`"a-b c"`, `123456789012345`, `-7`, `0`, `"mcpflow:s2-9"`} {
		r.send(call(id, "echo", `{"text":"hi"}`))
		if got := r.next(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":`+id+`,"result":`) || !strings.Contains(got, `"text":"hi"`) {
			t.Fatalf("id %s: %s", id, got)
		}
	}
	// The child's stdout and stderr are both in logs.
	testkit.Eventually(t, 10*time.Second, "stdout and stderr in logs", func() bool {
		s := r.logs.String()
		return strings.Contains(s, "fixture serving http://127.0.0.1:") && strings.Contains(s, "starting, pid")
	})
}

// TestLinkSlowCallDoesNotBlock: with a server that answers calls with
// JSON (the POST ends only when the call does), a slow call does not
// hold up the call behind it.
func TestLinkSlowCallDoesNotBlock(t *testing.T) {
	t.Parallel()
	r := startLink(t, anyPort, "-http-json")
	r.send(initLegacy)
	r.next()
	r.send(initialized, call("2", "slow", `{"ms":3000}`), call("3", "echo", `{"text":"quick"}`))
	if got := r.next(); !strings.Contains(got, `"id":3`) {
		t.Fatalf("first answer: %s", got)
	}
	if got := r.next(); !strings.Contains(got, `"id":2`) || !strings.Contains(got, "slept 3000") {
		t.Fatalf("second answer: %s", got)
	}
}

// TestLinkWaitsForURL: messages written before the server listens go
// out once it does, in order.
func TestLinkWaitsForURL(t *testing.T) {
	t.Parallel()
	r := startLink(t, anyPort, "-listen-after-ms", "700")
	if w := r.l.Waiting(); !strings.Contains(w, "did not answer at http://127.0.0.1:") {
		t.Errorf("Waiting before it listens: %q", w)
	}
	r.send(initLegacy, initialized, call("2", "echo", `{"text":"late"}`))
	r.until(`"id":1`)
	if got := r.next(); !strings.Contains(got, `"id":2`) || !strings.Contains(got, "late") {
		t.Fatalf("echo: %s", got)
	}
	if w := r.l.Waiting(); w != "" {
		t.Errorf("Waiting once it answered: %q", w)
	}
}

// TestLinkNeverListens: a server that does not answer within Wait ends
// out, and Lost and Waiting name the command and the URL.
func TestLinkNeverListens(t *testing.T) {
	t.Parallel()
	c := anyPort
	c.Wait = 500 * time.Millisecond
	r := startLink(t, c, "-listen-after-ms", "600000")
	r.send(initLegacy)
	if got := r.next(); got != "" {
		t.Fatalf("out: %s", got)
	}
	for _, s := range []string{r.l.Lost(), r.l.Waiting()} {
		if !strings.Contains(s, "fixture -http 127.0.0.1:{port} -listen-after-ms 600000") || !strings.Contains(s, "did not answer at "+r.l.URL()+" within 500ms") {
			t.Errorf("report: %q", s)
		}
	}
}

// TestLinkStandaloneStream: in the legacy era, what the server sends
// outside any request (here a list_changed after the call that caused it
// was answered) arrives on the GET stream the link opens.
func TestLinkStandaloneStream(t *testing.T) {
	t.Parallel()
	r := startLink(t, anyPort, "-http-json")
	r.send(initLegacy)
	r.next()
	r.send(initialized, call("2", "grow", `{"n":1}`))
	r.until(`"method":"notifications/tools/list_changed"`)
}

// TestLinkModern: the 2026-07-28 era, session-less: discover and a call.
func TestLinkModern(t *testing.T) {
	t.Parallel()
	r := startLink(t, anyPort, "-http-stateless")
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	r.send(`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + meta + `}}`)
	if got := r.next(); !strings.Contains(got, `"id":"d","result"`) || !strings.Contains(got, "2026-07-28") {
		t.Fatalf("discover: %s", got)
	}
	r.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"},` + meta + `}}`)
	if got := r.next(); !strings.Contains(got, `"id":5,"result"`) || !strings.Contains(got, `"text":"m"`) {
		t.Fatalf("call: %s", got)
	}
}

// TestLinkEndsWithIn: closing in (the relay stops the child) ends out.
func TestLinkEndsWithIn(t *testing.T) {
	t.Parallel()
	r := startLink(t, anyPort)
	r.send(initLegacy)
	r.next()
	r.in.Close()
	if got := r.next(); got != "" {
		t.Fatalf("out after in closed: %s", got)
	}
}
