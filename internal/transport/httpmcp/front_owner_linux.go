package httpmcp

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
)

const ownerKnown = true

// peerUID finds the socket whose local address is remote and whose remote
// address is local (the other end of our connection, when it is on this
// machine) in /proc/net/tcp and /proc/net/tcp6, and returns its owner's
// uid; found is false (uid -1) when no such socket is listed.
func peerUID(local, remote *net.TCPAddr) (uid int, found bool) {
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if uid, found := scanTCP(table, local, remote); found {
			return uid, true
		}
	}
	return -1, false
}

func scanTCP(table string, local, remote *net.TCPAddr) (int, bool) {
	f, err := os.Open(table)
	if err != nil {
		return -1, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		if !procAddrIs(fields[1], remote) || !procAddrIs(fields[2], local) {
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return -1, false
		}
		return uid, true
	}
	return -1, false
}

// procAddrIs reports whether s, an address as /proc/net/tcp{,6} writes
// it (the address's 32-bit words in hex, each in the host's byte order,
// ":" and the port in hex), is a.
func procAddrIs(s string, a *net.TCPAddr) bool {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
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
