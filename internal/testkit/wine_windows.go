package testkit

import "golang.org/x/sys/windows"

// UnderWine reports whether this Windows program runs under Wine (make
// test-windows), whose ntdll has wine_get_version.
func UnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}
