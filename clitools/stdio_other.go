//go:build !unix

package clitools

import "io"

// pollable returns in as it is: see stdio_unix.go.
func pollable(in io.Reader) (io.Reader, func()) { return in, func() {} }
