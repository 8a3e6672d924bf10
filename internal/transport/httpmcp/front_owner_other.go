//go:build !linux

package httpmcp

import "net"

const ownerKnown = false

func peerUID(local, remote *net.TCPAddr) (int, bool) { return -1, false }
