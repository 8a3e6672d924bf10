//go:build !linux && !darwin

package proc

import (
	"io"
	"time"
)

// StartGuard starts no guard here: Windows needs none (every group is a
// kill-on-close Job Object, closed when mcpflow dies), and for other
// systems the guard has no way yet to list a process's children.
func StartGuard([]string) (stop func(), err error) { return func() {}, nil }

// RunGuard returns at once: see StartGuard.
func RunGuard(io.Reader, int, time.Duration) []int { return nil }
