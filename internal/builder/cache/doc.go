// Package cache remembers a project's last good build, so that an
// mcpflow started on unchanged sources runs the existing output at once,
// and holds the project's build lock, so that several mcpflow instances
// on one project never run two builds at once.
//
// Both live in the project's cache folder, .mcpflow/cache (Dir). A lock
// is a file in it (LockFile), locked with flock on Unix and LockFileEx on
// Windows: the operating system releases it when its holder exits, however
// it exits, so a crashed instance never leaves a stale lock. The state of
// the last good build is a small JSON file per build configuration, written
// atomically (a temporary file renamed over it).
//
// # One build for all instances
//
// A client may start several mcpflow instances on one project (Codex
// starts one per connection) and close some of them while the first cold
// build runs. They all build under one lock per build configuration
// (LockFile): the first takes it and builds; the others wait for it
// (saying "waiting for the build of mcpflow pid N"), then find the
// sources unchanged since that good build and start its output without
// building. A waiter holds a shared lock on the waiters file beside the
// build lock, so the builder can tell (Lock.Awaited) whether anyone waits.
//
// When the instance that builds is told to stop (its client closed stdin,
// a signal) while others wait, it does not kill the build: it stops its
// server and its session at once, lets the build run to its end (bounded
// by build.timeout), records it, and exits (builder.Config.Awaited). We
// chose this over handing the running build to a waiter because a build
// is a child of the instance that started it: it dies with it (the death
// signal and the guard of internal/proc, which make sure no process
// outlives mcpflow), its output goes through that instance's pipes, and
// only that instance can learn its exit status. The instance that stays
// is still an instance: as soon as no other waits (the waiters' shared
// locks vanish when they exit, however they exit), it kills the build and
// exits, so nothing is left behind once every instance is gone. A build
// killed outright (SIGKILL of its instance) is built again by a waiter.
//
// A Key is a hash of the build command and of the path, size and
// modification time of every source file: a save changes the modification
// time, so an unchanged Key means unchanged sources. Content is not read,
// so computing a Key costs one stat per file.
package cache
