// Package buildcache remembers a project's last good build, so that an
// mcpflow started on unchanged sources runs the existing output at once,
// and holds the project's build lock, so that several mcpflow instances
// on one project never run two builds at once.
//
// Both live in the project's cache folder, .mcpflow/cache (Dir). The lock
// is the file build.lock in it, locked with flock on Unix and LockFileEx on
// Windows: the operating system releases it when its holder exits, however
// it exits, so a crashed instance never leaves a stale lock. The state of
// the last good build is a small JSON file per build configuration, written
// atomically (a temporary file renamed over it).
//
// A Key is a hash of the build command and of the path, size and
// modification time of every source file: a save changes the modification
// time, so an unchanged Key means unchanged sources. Content is not read,
// so computing a Key costs one stat per file.
package cache
