// Package proc starts commands in a process group of their own and stops
// that whole group: the one place in mcpflow that knows how a process tree
// is started, signalled and reaped on each platform.
//
// # Contract
//
//   - Start puts the command in a new group. On Linux the command also
//     gets SIGKILL should the thread that started it (and so mcpflow) die
//     without cleaning up. On Windows the command is assigned to a Job
//     Object that kills every process in it when the job is killed or its
//     handle closed, so grandchildren die with it.
//   - Group.Stop stops a running group gracefully: close the command's
//     stdin and wait up to the grace period for it to exit (when the
//     caller passes a stdin to close), signal the group to terminate
//     (SIGTERM), wait the grace again, then kill it (SIGKILL). Stop
//     returns once the leader has exited; what is left of the group is
//     killed then. The relay, the builder and clitools stop their
//     processes with it, and only with it.
//   - Group.Kill kills every process of the group at once; calling it after
//     the leader exited still reaches what the leader left behind. Callers
//     call Kill (or Release) after Wait so that nothing of the group
//     survives its leader.
//   - Spec.Cmd runs a Shell spec's script with the platform's shell: sh -c
//     (the rest of Argv as $1, $2, ...) on Unix, cmd /S /C on Windows.
//   - GroupAlive reports whether a group still has a process (zombies
//     count); on Windows it cannot tell and reports false.
//   - StartGuard starts the guard of a run (guard.go): should mcpflow die
//     without stopping its groups (SIGKILL, an OOM kill), every group led
//     by one of its children is killed within GuardInterval. Its stop
//     function, called last, waits for the guard to exit.
package proc
