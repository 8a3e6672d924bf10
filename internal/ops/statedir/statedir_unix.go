//go:build unix

package statedir

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

func openNoFollow(name string, flag int, perm fs.FileMode) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO never waits for its other end; a regular
	// file ignores it.
	return os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
}

// checkOwner refuses the folder dir unless it is this user's and writable
// by no one else.
func checkOwner(dir string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if me := os.Geteuid(); int(st.Uid) != me {
		return fmt.Errorf("%s is owned by %s, not by you (%s): mcpflow keeps what it runs and answers there, so it uses only a folder of its own user; remove it (rm -rf %s) or give it to yourself (chown -R %s %s)", dir, owner(int(st.Uid)), owner(me), dir, strconv.Itoa(me), dir)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s is writable by group or others (mode %04o): mcpflow keeps what it runs and answers there, so no one else may write it; fix: chmod 700 %s", dir, perm, dir)
	}
	return nil
}

// owner names a user id: "uid 65534 (nobody)".
func owner(uid int) string {
	s := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}
