//go:build darwin || freebsd

package control

import "golang.org/x/sys/unix"

// peerCred is the uid of the process on the other end of the socket fd.
var peerCred = func(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}
