// Package builder runs the build command, one build at a time, and asks a
// Restarter to restart the child after each good build.
//
// # Cycles
//
// A cycle is one build followed, if the build succeeded, by one call to
// Restarter.Restart. A failed build never calls Restart: the old child keeps
// serving. With no build command configured the build "succeeds" at once
// (result.Build.Skipped) and the cycle goes straight to Restart. Cycles are
// numbered from 1 (result.Build.Seq) and run one at a time, always on the
// goroutine that called Run; the builder never runs two builds at once.
//
// Cycles are asked for in three ways:
//
//   - Changed(paths), a debounced batch from the watcher. If a build is
//     running, its whole process group is killed and a new cycle starts
//     with the union of the paths not yet built: the last state of the
//     files always wins. If the cycle has already reached Restart, the
//     restart finishes and a new cycle follows. Changed never blocks for
//     longer than it takes to take a mutex.
//   - Recompile(ctx, progress), the agent's recompile tool. If a cycle is
//     running or pending, Recompile joins it and returns the result of the
//     cycle that covers the latest change, instead of building the same
//     files twice; if the joined cycle is superseded by a newer change,
//     Recompile waits for the cycle that replaces it. When idle it starts a
//     cycle with Trigger "recompile".
//   - Startup(ctx), the first cycle at launch (Trigger "startup"); the relay
//     starts the child on its first Restart. It joins like Recompile.
//
// Run must be running (it may start after the others are called) for any
// cycle to happen: Changed, Recompile and Startup only ask it for work.
// Recompile and Startup return a result.Build with Err = ctx.Err() when
// their ctx ends first; the cycle keeps going for the others. They never
// return a Canceled result unless Run stops under them. When Run returns,
// every waiting call returns at once and later calls return an error.
//
// # Results
//
// Every cycle that was not canceled is reported to Config.OnResult, on
// Run's goroutine, before any Recompile or Startup waiting for it returns.
// Canceled cycles (superseded by newer changes, or cut short by Run's ctx)
// are only logged, so OnResult may see gaps in Seq. result.Build.Output
// holds the combined stdout and stderr, at most 1 MiB (the
// head and the tail, with a "… N bytes cut …" marker between). When the
// build fails, result.Build.Errors holds the lines of Output an agent needs
// (8 KiB at most; see summarize). result.Build.Restart is what the
// Restarter returned (nil when the build failed or there is no Restarter);
// its Err is set when the restart failed.
//
// Recompile's progress callback, when not nil, receives short phase messages
// ("building: go build ./...", "build ok in 1.2s", "build failed after 3s:
// exit status 1", "restarting", "restarted in 40ms"). It is called on
// Recompile's own goroutine, so a slow callback never holds up a build, and
// never after Recompile has returned.
//
// # The build's own output
//
// Files a build writes into the watched tree must not start the next build,
// while a save made during a build must start exactly one more. Changed
// tells them apart by time: each build has a time window (from just before
// Config.Prepare to the build's exit), and a changed path whose file was
// modified within a window (or a deleted path, while a build runs or just
// after) was written during a build. Such a path is dropped when it lies
// under OutputDirs() (dist, build, out, target, bin, .next, .output) or is a
// known output (Config.Outputs, or learned); any other path still starts a
// build, and becomes a known output when the next good build writes it
// again. A known output modified outside every window is an edit: it starts
// a build and is no longer taken for output. Config.OnOutputs receives the
// known outputs whenever they change, so a caller can keep them across runs.
//
// # Shared builds
//
// Config.Awaited, when set, tells whether other mcpflow instances wait
// for the build this one runs (see builder/cache). When Run's ctx ends
// during such a build, the build is not killed: Run waits for it to end
// (bounded by Config.Timeout), or kills it as soon as Awaited turns false,
// calls Prepare's done with its outcome, and returns without a restart.
// Otherwise, and in every other phase of a cycle, the end of Run's ctx
// stops the build at once.
//
// # Processes
//
// With Config.Shell the build is `sh -c Command[0]` (Windows: `cmd /C`),
// further elements being the script's positional parameters; otherwise
// Command[0] is executed with Command[1:] as its arguments. Stdin is the
// null device. The build runs in a process group of its own. To cancel it
// (a newer change, the timeout, Run's ctx ending) the builder sends SIGTERM
// to the whole group, gives the build up to 2s to exit and close its
// output, then sends SIGKILL to the whole group, so a build that started
// `sleep 100 &` leaves nothing behind. The build's process is waited for,
// and its group killed if it was canceled, before the next cycle starts.
// On Windows the process tree is killed with taskkill.
//
// A build with Config.Timeout that runs longer is killed the same way and
// fails with an error that says how to change build.timeout.
package builder
