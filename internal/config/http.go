package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// PortPlaceholder in run.url stands for a free port mcpflow picks for each
// start of the server and passes to it as $PORT.
const PortPlaceholder = "{port}"

// URLProblem says what is wrong with a run.url, or "" when it is one
// mcpflow can use: http or https, a loopback host (the server is a child
// of mcpflow's on this machine), and a port or {port}.
func URLProblem(raw string) string {
	const eg = `e.g. url = "http://127.0.0.1:{port}/mcp" (a free port each start, passed as $PORT) or "http://127.0.0.1:8080/mcp"`
	if !strings.Contains(raw, "://") {
		return fmt.Sprintf("%s has no scheme: write it as http://%s; %s", TOMLString(raw), raw, eg)
	}
	u, err := url.Parse(strings.Replace(raw, PortPlaceholder, "1", 1))
	if err != nil || u.Host == "" {
		return fmt.Sprintf("%s is not a URL; %s", TOMLString(raw), eg)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("scheme %q: the server's URL is http:// (or https://); %s", u.Scheme, eg)
	}
	if strings.Count(raw, PortPlaceholder) > 1 || strings.Contains(raw, PortPlaceholder) && !strings.Contains(raw, ":"+PortPlaceholder) {
		return fmt.Sprintf("%s may appear once, as the port; %s", PortPlaceholder, eg)
	}
	if !Loopback(u.Hostname()) {
		return fmt.Sprintf("host %q is not this machine: mcpflow starts the server, so its URL is on 127.0.0.1, [::1] or localhost; %s", u.Hostname(), eg)
	}
	if u.Port() == "" {
		return fmt.Sprintf("%s has no port: write the port the server listens on, or %s; %s", TOMLString(raw), PortPlaceholder, eg)
	}
	if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
		return fmt.Sprintf("port %q is not a port number (1 to 65535) or %s; %s", u.Port(), PortPlaceholder, eg)
	}
	return ""
}

// ListenProblem says what is wrong with an [http] listen address (or the
// --http flag's), or "" when net.Listen can be given it: host:port, the
// port a number (0 = any free port).
func ListenProblem(addr string) string {
	const eg = `e.g. listen = "127.0.0.1:8931" (or --http 127.0.0.1:8931)`
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%s is not host:port; %s", TOMLString(addr), eg)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Sprintf("port %q is not a port number (0 to 65535); %s", port, eg)
	}
	if host == "" {
		return fmt.Sprintf("%s has no host, which would listen on every network; write 127.0.0.1 to serve this machine only (or 0.0.0.0 if you mean every network); %s", TOMLString(addr), eg)
	}
	return ""
}

// Loopback reports whether host (a name or an address, without a port)
// is this machine: localhost, or an address in 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
