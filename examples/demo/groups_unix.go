//go:build unix

package main

import (
	"errors"
	"syscall"
)

// groupAlive reports whether any process of the group pgid exists
// (zombies included: a group whose members are not reaped yet is alive).
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return pgid > 0 && (err == nil || errors.Is(err, syscall.EPERM))
}
