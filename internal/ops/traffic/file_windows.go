//go:build windows

package traffic

import "os"

// closeBeforeRename: Windows does not rename a file that is open.
const closeBeforeRename = true

// lockFile does not lock on Windows: while another process holds the file
// open, it cannot be renamed, and the rotation fails (Write reports it).
func lockFile(*os.File) (unlock func()) { return func() {} }

func unlinked(os.FileInfo) bool { return false }
