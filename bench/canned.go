//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// runCanned is `bench -canned`: a minimal MCP server on stdin/stdout whose
// big tool answers with a line built once per size and then written
// as is. Its result is byte for byte what the fixture's big tool sends
// (same text, same JSON escaping), but it costs the server nothing per
// call, so what a relay adds to a large message is not lost in the Go SDK's
// own encoding time (≈1.8s for 64 MiB on a small machine, ±10%).
func runCanned() int {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := os.Stdout
	cache := map[int][]byte{} // mib → `,"result":…}` + "\n"
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if werr := cannedServe(out, line, cache); werr != nil {
				fmt.Fprintln(os.Stderr, "canned:", werr)
				return 1
			}
		}
		if err != nil {
			if err == io.EOF {
				return 0
			}
			fmt.Fprintln(os.Stderr, "canned:", err)
			return 1
		}
	}
}

func cannedServe(out io.Writer, line []byte, cache map[int][]byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				MiB  int    `json:"mib"`
				Text string `json:"text"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		fmt.Fprintf(os.Stderr, "canned: bad line: %v\n", err)
		return nil
	}
	if m.ID == nil {
		return nil // a notification
	}
	head := `{"jsonrpc":"2.0","id":` + string(m.ID)
	var body string
	switch m.Method {
	case "initialize":
		body = `,"result":{"capabilities":{"tools":{"listChanged":true}},"protocolVersion":"2025-06-18","serverInfo":{"name":"canned","version":"1"}}}` + "\n"
	case "ping":
		body = `,"result":{}}` + "\n"
	case "tools/list":
		body = `,"result":{"tools":[{"name":"big","description":"Return a text of mib MiB.","inputSchema":{"type":"object","properties":{"mib":{"type":"integer"}}}},{"name":"echo","description":"Return text.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}}` + "\n"
	case "tools/call":
		if m.Params.Name == "echo" {
			text, _ := json.Marshal(m.Params.Arguments.Text)
			body = `,"result":{"content":[{"type":"text","text":` + string(text) + `}]}}` + "\n"
			break
		}
		if m.Params.Name != "big" || m.Params.Arguments.MiB <= 0 || m.Params.Arguments.MiB > 256 {
			body = `,"error":{"code":-32602,"message":"canned server: only big with 1 ≤ mib ≤ 256"}}` + "\n"
			break
		}
		n := m.Params.Arguments.MiB
		b, ok := cache[n]
		if !ok {
			text, err := json.Marshal(bigText(n << 20))
			if err != nil {
				return err
			}
			b = append(append(append([]byte(`,"result":{"content":[{"type":"text","text":`), text...), `}]}}`...), '\n')
			cache[n] = b
		}
		if _, err := io.WriteString(out, head); err != nil {
			return err
		}
		_, err := out.Write(b)
		return err
	default:
		msg, _ := json.Marshal("method not found: " + m.Method)
		body = `,"error":{"code":-32601,"message":` + string(msg) + `}}` + "\n"
	}
	_, err := io.WriteString(out, head+body)
	return err
}

// bigText is the fixture's text: n bytes of a pattern JSON must escape.
func bigText(n int) string {
	const pat = "0123456789abcdefghijklmnopqrstuvwxyz\\\"<>&"
	var b strings.Builder
	b.Grow(n + len(pat))
	for b.Len() < n {
		b.WriteString(pat)
	}
	return b.String()[:n]
}
