//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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
	if !strings.Contains(h.stderr.String(), "refused an HTTP connection of another user") || !strings.Contains(h.stderr.String(), "uid 65534") {
		t.Error("no warning naming the refused uid in the log")
	}
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
// client with it is served, and so is another user that has it.
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
