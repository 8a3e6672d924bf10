//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpflow/mcpflow/internal/testkit"
)

// The HTTP front's bounds end to end ("nothing hangs, nothing escapes"):
// who may connect, what a client can make mcpflow hold, how it answers
// what is no message, and how it stops, through the real binary.

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawPost POSTs body to url with the front's usual headers (sid and more,
// "Name: value", when given) and returns the status, the headers and the
// body; the request is bounded by a minute.
func rawPost(t *testing.T, url, sid, body string, more ...string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for _, h := range more {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// rawSession initializes a legacy session with raw POSTs and returns its id.
func rawSession(t *testing.T, url string, more ...string) string {
	t.Helper()
	status, hdr, body := rawPost(t, url, "", initBody, more...)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", status, sid, body)
	}
	rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, more...)
	return sid
}

// asNobody returns a command running name args as uid and gid 65534 (the
// test runs as root), or skips the test when it cannot.
func asNobody(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a client as another user (uid 65534)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv, to run a client as another user")
	}
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("needs %s", name)
	}
	return exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", name}, args...)...)
}

// curlOut runs cmd (a curl that writes the status code last) bounded
// by a minute and returns its output.
func curlOut(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	out, _ := cmd.CombinedOutput()
	return string(out)
}

func curlArgs(url string, more ...string) []string {
	args := []string{"-sS", "-m", "30", "-o", "/dev/null", "-w", "status=%{http_code}\n", "-X", "POST",
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream", "--data", initBody}
	for _, h := range more {
		args = append(args, "-H", h)
	}
	return append(args, url)
}

// TestHTTPFrontOwnerOnly: with no token the front serves the user that
// runs mcpflow (the SDK client, as root) and refuses another user's
// connection (curl as uid 65534) with 403, logging the uid.
func TestHTTPFrontOwnerOnly(t *testing.T) {
	t.Parallel()
	asNobody(t, "curl") // skips when it cannot
	h := startHTTP(t, frontProject(t), watchHTTPArgs()...)
	if out := curlOut(t, asNobody(t, "curl", curlArgs(h.url)...)); !strings.Contains(out, "status=403") {
		t.Errorf("another user's client: %s, want 403", out)
	}
	// (The refusal is logged as the 403 goes out: it may come just after.)
	testkit.Eventually(t, 5*time.Second, "a warning naming the refused uid in the log", func() bool {
		return strings.Contains(h.stderr.String(), "refused an HTTP connection of another user") && strings.Contains(h.stderr.String(), "uid 65534")
	})
	c := h.connect("owner", testkit.Legacy.Version)
	if got, _ := c.call("echo", map[string]any{"text": "mine"}); got != "mine" {
		t.Fatalf("the owner's echo: %q", got)
	}
}

// bearer adds a token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPFrontToken: with MCPFLOW_HTTP_TOKEN set, a request without the
// token or with a wrong one gets 401 and WWW-Authenticate; the SDK's
// client with it is served, and so are a request that writes the scheme
// in any case and another user that has it.
func TestHTTPFrontToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token"
	h := startHTTPEnv(t, []string{"MCPFLOW_HTTP_TOKEN=" + token}, frontProject(t), watchHTTPArgs()...)
	for _, auth := range []string{"", "Authorization: Bearer wrong", "Authorization: Basic " + token} {
		var more []string
		if auth != "" {
			more = append(more, auth)
		}
		status, hdr, _ := rawPost(t, h.url, "", initBody, more...)
		if status != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%q: %d WWW-Authenticate %q, want 401 with Bearer", auth, status, hdr.Get("WWW-Authenticate"))
		}
	}
	// The scheme is case-insensitive (RFC 9110).
	for _, scheme := range []string{"bearer", "BEARER", "bEaReR"} {
		if status, _, body := rawPost(t, h.url, "", initBody, "Authorization: "+scheme+" "+token); status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", scheme, status, body)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "token", Version: "1"}, nil)
	cs := testkit.Connect(t, testkit.Legacy.Version, client, &mcp.StreamableClientTransport{Endpoint: h.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ok"}})
	if err != nil || testkit.Text(res) != "ok" {
		t.Fatalf("echo with the token: %v", err)
	}
	if os.Geteuid() == 0 {
		if out := curlOut(t, asNobody(t, "curl", curlArgs(h.url, "Authorization: Bearer "+token)...)); !strings.Contains(out, "status=200") {
			t.Errorf("another user with the token: %s, want 200", out)
		}
	}
}

// TestHTTPFrontSpeaksLikeStdio: ids come back byte for byte (1.5 and
// 2^53+1), a body that is not UTF-8 is answered -32700 at once, a request
// without a method -32600 under its id, as on stdio; then SIGTERM still
// stops mcpflow (startHTTP's cleanup).
func TestHTTPFrontSpeaksLikeStdio(t *testing.T) {
	t.Parallel()
	h := startHTTP(t, frontProject(t), watchHTTPArgs()...)
	sid := rawSession(t, h.url)
	for _, id := range []string{"1.5", "9007199254740993", `"s"`} {
		status, _, body := rawPost(t, h.url, sid, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		if status != http.StatusOK || !strings.Contains(body, `"id":`+id+`,`) && !strings.Contains(body, `"id":`+id+`}`) {
			t.Errorf("id %s: %d %s", id, status, body)
		}
	}
	for _, c := range []struct{ body, want string }{
		{"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\xfe\"}}}", `"code":-32700`},
		{`{"jsonrpc":"2.0","id":4}`, `"id":4,"error":{"code":-32600`},
	} {
		status, _, body := rawPost(t, h.url, sid, c.body)
		if status != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("%q: %d %s, want 400 with %s", c.body, status, body, c.want)
		}
	}
	if got, _, _ := rawPost(t, h.url, sid, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); got != http.StatusOK {
		t.Errorf("ping after the refusals: %d", got)
	}
}

// TestHTTPFrontSIGTERMMidCall: SIGTERM while a 60 s call is in flight, the
// client's GET stream open and another client gone mid-call: mcpflow
// exits before a 5 s deadline, and the call is answered, with an error
// that says mcpflow is shutting down.
func TestHTTPFrontSIGTERMMidCall(t *testing.T) {
	t.Parallel()
	h := startHTTP(t, frontProject(t), watchHTTPArgs("--log-level", "debug")...)
	c := h.connect("sigterm", testkit.Legacy.Version)
	c.call("echo", map[string]any{"text": "x"})
	// The gone client: its call is sent, then its connection closed.
	sid := rawSession(t, h.url)
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(h.url, "http://"), "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s", conn.RemoteAddr(), sid, len(body), body)
	// The 60 s call, as raw HTTP: its answer is read as mcpflow wrote it
	// (the SDK's client fails its calls itself once its GET stream ends).
	answered := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow","arguments":{"ms":60000}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- string(b)
	}()
	testkit.Eventually(t, 30*time.Second, "both slow calls to reach mcpflow", func() bool {
		return strings.Contains(h.stderr.String(), "method=tools/call id=7") && strings.Contains(h.stderr.String(), "method=tools/call id=8")
	})
	conn.Close()
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-h.exited:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("mcpflow had not exited 5s after SIGTERM")
	}
	select {
	case got := <-answered:
		if !strings.Contains(got, `"id":8,"error"`) || !strings.Contains(got, "shutting down") {
			t.Errorf("the 60 s call's answer: %s, want an error saying mcpflow is shutting down", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the 60 s call was never answered")
	}
}

// badChild is a proxy in front of the fixture serving HTTP: a call of a
// tool named bad_KIND gets the bad answer KIND from the proxy, everything
// else passes to the fixture (the same process throughout).
func badChild(t *testing.T, fixture string) *httptest.Server {
	t.Helper()
	target, _ := url.Parse(fixture)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.URL.Path = "/mcp" }, FlushInterval: -1,
		// The fixture not listening yet (or any more): the proxy is not
		// either, as far as mcpflow can tell.
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		json.Unmarshal(body, &msg)
		kind, bad := strings.CutPrefix(msg.Params.Name, "bad_")
		if !bad {
			rp.ServeHTTP(w, r)
			return
		}
		sse := func() {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
		}
		switch kind {
		case "text400":
			http.Error(w, "plain text: bad request", http.StatusBadRequest)
		case "plain404":
			http.Error(w, "404 page not found", http.StatusNotFound)
		case "plain500":
			http.Error(w, "internal server error", http.StatusInternalServerError)
		case "rpc500":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32099,"message":"the server says no","data":{"why":"its own"}}}`, msg.ID)
		case "cut":
			sse()
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection is cut mid-event
		case "nonjson":
			sse()
			fmt.Fprint(w, "event: message\ndata: this is not JSON\n\n")
		case "huge":
			// An event that never ends, sent until the reader stops
			// (600 MiB and more: a reader that reads to the end of an
			// event never answers).
			sse()
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"result\":{\"x\":\"")
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPChildBadAnswers: each bad HTTP answer of a child (plain-text
// 400, plain 404 and 500, a 500 with the server's JSON-RPC error, an
// event stream cut mid-event, an event that is not JSON, an event past
// max_message) answers that call with an error, the server's own error
// as it wrote it; the next call is served by the same child process.
func TestHTTPChildBadAnswers(t *testing.T) {
	t.Parallel()
	port := freeTCPPort(t)
	proxy := badChild(t, "http://127.0.0.1:"+port+"/mcp")
	dir := t.TempDir()
	toml := fmt.Sprintf(httpProject, fixtureBin, "127.0.0.1:"+port, "", proxy.URL+"/mcp", "20s") + "[relay]\nmax_message = \"1MiB\"\n"
	toml = strings.Replace(toml, "[relay]\nhandshake_timeout", "[relay]\nmax_message = \"1MiB\"\nhandshake_timeout", 1)
	toml = strings.TrimSuffix(toml, "[relay]\nmax_message = \"1MiB\"\n")
	os.WriteFile(filepath.Join(dir, "mcpflow.toml"), []byte(toml), 0o644)
	os.WriteFile(filepath.Join(dir, "src.txt"), []byte("v1"), 0o644)
	h := startE2E(t, dir, testkit.Legacy.Version, "watch")
	h.waitTools("echo")
	pid := h.call1("state")
	for kind, want := range map[string]string{
		"text400":  "plain text: bad request",
		"plain404": "404",
		"plain500": "500",
		"rpc500":   "the server says no",
		"cut":      "",
		"nonjson":  "",
		"huge":     "",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "bad_" + kind})
		timedOut := ctx.Err() != nil
		cancel()
		var rpcErr *jsonrpc.Error
		switch {
		case err == nil:
			t.Errorf("bad_%s: answered without an error", kind)
		case timedOut:
			t.Errorf("bad_%s: not answered within a minute", kind)
		case !errors.As(err, &rpcErr):
			t.Errorf("bad_%s: %v, not a JSON-RPC error", kind, err)
		case !strings.Contains(rpcErr.Message, want):
			t.Errorf("bad_%s: %q lacks %q", kind, rpcErr.Message, want)
		case kind == "rpc500" && (rpcErr.Code != -32099 || rpcErr.Message != "the server says no" || !strings.Contains(string(rpcErr.Data), `"why":"its own"`)):
			t.Errorf("bad_rpc500: %d %q %s, not the server's own error", rpcErr.Code, rpcErr.Message, rpcErr.Data)
		}
		if again := h.call1("state"); again != pid {
			t.Fatalf("after bad_%s another server: %s, was %s", kind, again, pid)
		}
	}
}

// procKiB reads a field (VmRSS, VmHWM) of /proc/PID/status, in KiB.
func procKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestHTTPFrontMemory: a 60 MiB POST body raises mcpflow's peak RSS by
// at most 4 times its size; idle sessions up to the session limit (1000,
// the default) cost mcpflow at most 256 KiB each, and one more is refused
// 503. Both figures are logged; the bounds are loose for the race
// detector's build (its memory is several times a release build's).
func TestHTTPFrontMemory(t *testing.T) {
	t.Parallel()
	h := startHTTP(t, frontProject(t), watchHTTPArgs()...)
	pid := h.cmd.Process.Pid
	sid := rawSession(t, h.url) // also the first session's one-time costs

	const size = 60 << 20
	body := `{"jsonrpc":"2.0","method":"notifications/big","params":{"data":"` + strings.Repeat("x", size) + `"}}`
	peak := procKiB(t, pid, "VmHWM")
	if status, _, got := rawPost(t, h.url, sid, body); status != http.StatusAccepted {
		t.Fatalf("the 60 MiB notification: %d %s", status, got)
	}
	grew := float64(procKiB(t, pid, "VmHWM")-peak) / 1024
	t.Logf("peak RSS growth for a 60 MiB body: %.1f MiB (%.2f× its size)", grew, grew/60)
	if grew > 4*60 {
		t.Errorf("peak RSS grew %.1f MiB for a 60 MiB body, bound 4×", grew)
	}

	before := procKiB(t, pid, "VmRSS")
	const n = 998 // with the first one, and the one above: the limit
	for range n {
		rawSession(t, h.url)
	}
	grown := procKiB(t, pid, "VmRSS") - before
	t.Logf("RSS growth per idle HTTP session: %.1f KiB (%d sessions, %d KiB)", float64(grown)/n, n, grown)
	if per := grown * 1024 / n; per > 256<<10 {
		t.Errorf("%d bytes per idle session, bound 256 KiB", per)
	}
	rawSession(t, h.url) // the 1000th
	if status, _, body := rawPost(t, h.url, "", initBody); status != http.StatusServiceUnavailable {
		t.Errorf("a session past the limit: %d %s, want 503", status, body)
	}
}
