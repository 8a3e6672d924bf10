//go:build unix && !linux && !darwin && !freebsd

package control

// peerCred is nil: the peer's uid cannot be told here, and the folder's
// permissions are the only guard.
var peerCred func(fd int) (int, error)
