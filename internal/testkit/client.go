package testkit

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Era is a protocol era the tests run in.
type Era struct {
	Name string // "modern", "legacy"
	// Version is what the client asks for (mcp.ClientSessionOptions'
	// ProtocolVersion): "" is the Go SDK client's default.
	Version string
	// Protocol is the version the session then speaks.
	Protocol string
}

// Modern and Legacy are the two eras: the Go SDK client's default (modern,
// 2026-07-28, server/discover first) and legacy (2025-11-25, initialize).
var (
	Modern = Era{Name: "modern", Version: "", Protocol: "2026-07-28"}
	Legacy = Era{Name: "legacy", Version: "2025-11-25", Protocol: "2025-11-25"}
)

// Eras are the eras every scenario runs in.
var Eras = []Era{Modern, Legacy}

// EachEra runs f as a subtest per era, named by the era.
func EachEra(t *testing.T, f func(t *testing.T, era Era)) {
	t.Helper()
	for _, era := range Eras {
		t.Run(era.Name, func(t *testing.T) { f(t, era) })
	}
}

// Connect connects client (nil: a client named "testkit" with no
// options) to transport, asking for version ("" = the SDK's default),
// within two minutes; the session is closed when the test ends.
func Connect(tb testing.TB, version string, client *mcp.Client, transport mcp.Transport) *mcp.ClientSession {
	tb.Helper()
	if client == nil {
		client = mcp.NewClient(&mcp.Implementation{Name: "testkit", Version: "1"}, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tb.Fatalf("connecting the client (protocol %q): %v", version, err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// Stdio is the client's transport over a server's stdout (r) and stdin
// (w), with no limit on a line's length.
func Stdio(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	return &mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: -1}
}

// Pipes runs serve in a goroutine on the server's ends of two OS pipes
// (as mcpflow's stdin and stdout are) and returns the client's ends as a
// transport (Stdio). When the test ends, the client's end of the server's
// input is closed and serve must return within 30 seconds, with no error.
func Pipes(tb testing.TB, serve func(in io.Reader, out io.Writer) error) mcp.Transport {
	tb.Helper()
	inR, inW, err := os.Pipe() // client to server
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe() // server to client
	if err != nil {
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		err := serve(inR, outW)
		outW.Close()
		inR.Close()
		served <- err
	}()
	tb.Cleanup(func() {
		inW.Close()
		select {
		case err := <-served:
			if err != nil {
				tb.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			tb.Errorf("serve did not return within 30s of its input closing")
		}
		outR.Close()
	})
	return Stdio(outR, inW)
}

// Text is the text of a tool result: its text contents, one per line.
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
