package httpmcp

import (
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Who may use the front. Without a Token, a connection whose peer socket
// (on Linux, from /proc/net/tcp{,6} at Accept) is not mcpflow's effective
// uid's, or whose owner cannot be established then, gets a 403 before
// anything is read, with a warning: fail-closed. Unestablished are a peer
// not listed (another machine) and one no process holds any more (inode
// 0: its owner closed it, and the kernel lists an orphaned or TIME_WAIT
// socket with uid 0, which must not pass for root's); a connection's
// peer socket cannot change hands but from its owner, so no client can
// race the check by closing at once; elsewhere only the loopback address and the
// Origin and Host checks stand between the front and others. With a
// Token, every request must carry "Authorization: Bearer <Token>" (the
// scheme in any case; compared in constant time), else 401; connections
// are not checked. A token is not the default: on Linux the fail-closed
// owner check already keeps other users out, and a default token would
// break every client entry that sends no header (some clients cannot)
// for no gain there; where the owner is unknown, set one.

// ownerKnown says whether peerUID can tell a connection's owner.
const ownerKnown = runtime.GOOS == "linux"

// ownerListener serves only connections whose peer socket is euid's.
type ownerListener struct {
	net.Listener
	log  *slog.Logger
	euid int
}

// refusedOwner is what a refused connection reads.
const refusedOwner = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		local, lok := c.LocalAddr().(*net.TCPAddr)
		remote, rok := c.RemoteAddr().(*net.TCPAddr)
		if !lok || !rok {
			return c, nil
		}
		uid, found := peerUID(local, remote)
		if found && uid == l.euid {
			return c, nil
		}
		who := "uid " + strconv.Itoa(uid)
		if uid < 0 {
			who = "an owner that cannot be established (not on this machine, or its end already closed)"
		}
		l.log.Warn("refused an HTTP connection of another user (the front serves only the user that runs mcpflow; set a token to let others in)", "remote", remote.String(), "owner", who)
		body := "Forbidden: this mcpflow serves only the user that runs it (connection owned by " + who + ")\n"
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write([]byte(fmt.Sprintf(refusedOwner, len(body), body)))
		c.Close()
	}
}

// authorized reports whether r carries the front's token; when it does
// not, it answers r with 401.
func (f *Front) authorized(w http.ResponseWriter, r *http.Request) bool {
	if f.cfg.Token == "" {
		return true
	}
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(f.cfg.Token)) == 1 {
		return true
	}
	f.log.Warn("refused an HTTP request without the front's token", "method", r.Method, "remote", r.RemoteAddr)
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcpflow"`)
	http.Error(w, "Unauthorized: this mcpflow requires Authorization: Bearer <token>", http.StatusUnauthorized)
	return false
}

// peerUID finds the socket whose local address is remote and whose remote
// address is local (the other end of our connection, when it is on this
// machine) in /proc/net/tcp and /proc/net/tcp6, and returns its owner's
// uid; found is false (uid -1) when no such socket is listed or no
// process holds it (its inode is 0).
func peerUID(local, remote *net.TCPAddr) (uid int, found bool) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, _ := os.ReadFile(table)
		for i, line := range strings.Split(string(data), "\n") {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
			fields := strings.Fields(line)
			if i == 0 || len(fields) < 10 || !procAddrIs(fields[1], remote) || !procAddrIs(fields[2], local) {
				continue
			}
			if uid, err := strconv.Atoi(fields[7]); err == nil && fields[9] != "0" {
				return uid, true
			}
			break
		}
	}
	return -1, false
}

// procAddrIs reports whether s, an address as /proc/net/tcp{,6} writes
// it (the address's 32-bit words in hex, each in the host's byte order,
// ":" and the port in hex), is a.
func procAddrIs(s string, a *net.TCPAddr) bool {
	hexIP, hexPort, _ := strings.Cut(s, ":") // no ":": no port
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(hexIP)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}
