//go:build !unix

package proc

import "io"

// StartGuard starts no guard: on Windows every group is a kill-on-close
// Job Object, closed when mcpflow dies.
func StartGuard([]string, func(error)) (stop func(), err error) { return func() {}, nil }

// RunGuard returns at once: see StartGuard.
func RunGuard(io.Reader, int) []int { return nil }
