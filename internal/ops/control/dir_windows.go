package control

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"
)

// On Windows an instance listens on a loopback TCP port and writes its
// address and a random token to <pid>.addr in the control folder; a
// request without that token is refused. Only someone who can read the
// folder, inside the user's own temp folder (%TEMP%, which Windows keeps
// to its user), can reach the instance. Not AF_UNIX: Windows 10 has it,
// but Wine, where the Windows build is tested, does not; TCP is the same
// everywhere.
const (
	endpointExt              = ".addr"
	endpointType fs.FileMode = 0 // a regular file
	endpointNet              = "tcp"
)

func runtimeDirs() []string { return []string{filepath.Join(os.TempDir(), "mcpflow")} }

// prepareDir checks that dir is a real directory; with create, a missing
// dir is made. Its ACL is the one it inherits from the user's temp folder.
func prepareDir(dir string, create bool) error {
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("control folder: %w", err)
		}
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control folder: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("control folder %s is not a directory (a link or file is refused): remove it", dir)
	}
	return nil
}

// listenEndpoint listens on 127.0.0.1 and writes path (through a rename,
// so that no reader sees half of it); Close removes path.
func listenEndpoint(path string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	token := rand.Text()
	tmp := path + ".tmp"
	if err = os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"+token+"\n"), 0o600); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		ln.Close()
		return nil, "", err
	}
	return &fileListener{ln, path}, token, nil
}

type fileListener struct {
	net.Listener
	path string
}

func (l *fileListener) Close() error {
	err := l.Listener.Close()
	os.Remove(l.path)
	return err
}

// readEndpoint reads the address and token an instance wrote to path.
func readEndpoint(path string) (addr, token string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	addr, token, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
	if addr == "" || token == "" {
		return "", "", fmt.Errorf("%s: not an address and a token", path)
	}
	return addr, strings.TrimSpace(token), nil
}

func pidGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code != 259 // STILL_ACTIVE
}

func peerUID(net.Conn) (uid int, known bool, err error) { return 0, false, nil }
