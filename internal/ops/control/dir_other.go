//go:build !unix

package control

import "net"

// runtimeDirs and prepareDir report ErrUnsupported, and so Listen and
// Instances do, on this system.
func runtimeDirs() ([]string, error) { return nil, ErrUnsupported }

func prepareDir(string, bool) error { return ErrUnsupported }

func pidGone(int) bool { return false }

func peerUID(*net.UnixConn) (uid int, known bool, err error) { return 0, false, nil }
