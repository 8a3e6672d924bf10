//go:build unix

package control

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The control endpoint is a Unix socket, <pid>.sock.
const (
	endpointExt  = ".sock"
	endpointType = fs.ModeSocket
	endpointNet  = "unix"
)

// listenEndpoint listens on the socket path, for this user alone; Close
// removes it. Its peers need no token.
func listenEndpoint(path string) (net.Listener, string, error) {
	if len(path) > maxSocketPath {
		return nil, "", fmt.Errorf("control socket path %s is longer than the %d bytes a Unix socket allows: set XDG_RUNTIME_DIR to a shorter folder", path, maxSocketPath)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		if err = os.Chmod(path, 0o600); err != nil {
			ln.Close()
			return nil, "", fmt.Errorf("control socket: %w", err)
		}
	}
	return ln, "", err
}

// readEndpoint: a socket is its own address.
func readEndpoint(path string) (addr, token string, err error) { return path, "", nil }

// runtimeDirs are where this user's instances put their sockets: an
// instance listens in the first, $XDG_RUNTIME_DIR/mcpflow, else
// /tmp/mcpflow-<uid> (named by the uid alone: the same whatever env a
// client passed its server); Instances searches each.
func runtimeDirs() []string {
	byUID := filepath.Join("/tmp", "mcpflow-"+strconv.Itoa(os.Geteuid()))
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return []string{filepath.Join(d, "mcpflow"), byUID}
		}
	}
	return []string{byUID}
}

// prepareDir checks that dir is a real directory of this user's, closed to
// everyone else; with create, a missing dir is made 0700.
func prepareDir(dir string, create bool) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("control folder: %w", err)
		}
		st, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("control folder: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("control folder %s is not a directory (a symlink or file is refused): remove it", dir)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("control folder %s: cannot read its owner", dir)
	}
	if uid := os.Geteuid(); int(sys.Uid) != uid {
		return fmt.Errorf("control folder %s belongs to uid %d, not to you (uid %d): refusing to use it; remove it or set XDG_RUNTIME_DIR", dir, sys.Uid, uid)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("control folder %s has permissions %#o: others could reach the control sockets; run \"chmod 700 %s\"", dir, perm, dir)
	}
	return nil
}

func pidGone(pid int) bool {
	return pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// peerUID returns the uid of the process on the other end of c; known is
// false where peerCred cannot tell.
func peerUID(nc net.Conn) (uid int, known bool, err error) {
	c, ok := nc.(*net.UnixConn)
	if peerCred == nil || !ok {
		return 0, false, nil
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, true, err
	}
	var cerr error
	err = raw.Control(func(fd uintptr) { uid, cerr = peerCred(int(fd)) })
	return uid, true, cmp.Or(err, cerr)
}
