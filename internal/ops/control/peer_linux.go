package control

import "golang.org/x/sys/unix"

// peerCred is the uid of the process on the other end of the socket fd.
var peerCred = func(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, err
	}
	return int(cred.Uid), nil
}
