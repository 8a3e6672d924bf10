//go:build !windows

package testkit

// UnderWine reports whether this Windows program runs under Wine: never here.
func UnderWine() bool { return false }
