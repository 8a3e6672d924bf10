package httpmcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzFront: any bytes as the body of a POST to a legacy session get,
// within a bound, either an answer (200 with a body, or 202) or a clean
// HTTP error with a body; never a hang, a panic (net/http would cut the
// connection) or a 5xx. Bodies that could name the echo's tools that
// wait on the client (slow, sample) or hold a stream open (listen) are
// skipped: they wait by design.
func FuzzFront(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":4}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"}]`,
		`[]`, `{}`, `null`, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\"}", ``,
		`{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`,
	} {
		f.Add([]byte(seed))
	}
	o := newEcho("2025-03-26")
	front, err := Listen("127.0.0.1:0", FrontConfig{})
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- front.Serve(ctx, o) }()
	f.Cleanup(func() {
		cancel()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			f.Error("Serve did not return within 10s of its context ending")
		}
	})
	hc := &http.Client{Timeout: 10 * time.Second}
	post := func(sid string, body []byte) (int, string, error) {
		req, _ := http.NewRequest(http.MethodPost, front.URL(), strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
		if sid != "" {
			req.Header.Set(hdrSessionID, sid)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	var sid string
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		if json.Unmarshal(body, &v) == nil {
			norm, _ := json.Marshal(v)
			for _, waits := range []string{"slow", "sample", "listen"} {
				if strings.Contains(string(norm), waits) {
					t.Skip("names a method or tool that waits by design")
				}
			}
		}
		if sid == "" {
			// One session for every input (opened by the first).
			req, _ := http.NewRequest(http.MethodPost, front.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			sid = resp.Header.Get(hdrSessionID)
		}
		status, got, err := post(sid, body)
		switch {
		case err != nil:
			t.Fatalf("%q: no answer: %v", body, err)
		case status == http.StatusAccepted:
		case status >= 500:
			t.Fatalf("%q: %d %s", body, status, got)
		case strings.TrimSpace(got) == "":
			t.Fatalf("%q: %d with an empty body", body, status)
		}
	})
}
