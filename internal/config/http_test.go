package config

import (
	"strings"
	"testing"
)

func TestHTTPSettings(t *testing.T) {
	c := mustParse(t, minimal+"url = \"http://127.0.0.1:{port}/mcp\"\n[http]\nlisten = \"127.0.0.1:8931\"\n")
	if c.Run.URL != "http://127.0.0.1:{port}/mcp" || c.HTTP.Listen != "127.0.0.1:8931" {
		t.Fatalf("run.url %q, http.listen %q", c.Run.URL, c.HTTP.Listen)
	}
	if d := c.Describe(); !strings.Contains(d, `url = "http://127.0.0.1:{port}/mcp"`) || !strings.Contains(d, `listen = "127.0.0.1:8931"`) {
		t.Errorf("Describe lacks the HTTP settings:\n%s", d)
	}
	for _, good := range []string{"http://localhost:8080/mcp", "https://[::1]:{port}/", "http://127.0.0.2:1"} {
		if msg := URLProblem(good); msg != "" {
			t.Errorf("URLProblem(%q) = %q, want none", good, msg)
		}
	}
}

func TestHTTPSettingsErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{minimal + "url = \"127.0.0.1:8080\"\n", `mcpflow.toml:3:7: run.url: "127.0.0.1:8080" has no scheme: write it as http://127.0.0.1:8080`},
		{minimal + "url = \"ftp://127.0.0.1:8080/\"\n", `mcpflow.toml:3:7: run.url: scheme "ftp"`},
		{minimal + "url = \"http://example.com:8080/mcp\"\n", `mcpflow.toml:3:7: run.url: host "example.com" is not this machine`},
		{minimal + "url = \"http://127.0.0.1/mcp\"\n", `mcpflow.toml:3:7: run.url: "http://127.0.0.1/mcp" has no port`},
		{minimal + "url = \"http://127.0.0.1:99999/mcp\"\n", `mcpflow.toml:3:7: run.url: port "99999" is not a port number`},
		{minimal + "url = \"http://127.0.0.1:8080/{port}\"\n", `mcpflow.toml:3:7: run.url: {port} may appear once, as the port`},
		{minimal + "[http]\nlisten = \"8931\"\n", `mcpflow.toml:4:10: http.listen: "8931" is not host:port`},
		{minimal + "[http]\nlisten = \":8931\"\n", `mcpflow.toml:4:10: http.listen: ":8931" has no host`},
		{minimal + "[http]\nlisten = \"127.0.0.1:x\"\n", `mcpflow.toml:4:10: http.listen: port "x" is not a port number`},
		{"[servers.a.run]\ncommand = \"x\"\nurl = \"http://10.0.0.1:1/\"\n", `mcpflow.toml:3:7: servers.a.run.url: host "10.0.0.1" is not this machine`},
	}
	for _, tt := range tests {
		_, err := Parse("mcpflow.toml", []byte(tt.doc), "/proj")
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q:\n got %v\nwant %s…", tt.doc, err, tt.want)
		}
	}
}
