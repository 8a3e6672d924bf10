// Package proc starts commands in a process group of their own and stops
// that whole group: the one place in mcpflow that knows how a process tree
// is started, signalled and reaped on each platform.
//
// # Contract
//
//   - Command returns a command (Cmd) run as a group's leader: ctx's end
//     SIGTERMs the group, SIGKILL follows the grace later, output pipes a
//     grandchild holds are closed (exec.Cmd's Cancel and WaitDelay), and
//     Wait kills what is left of the group. Cmd.Stop stops it gracefully:
//     close its stdin and wait the grace (when given a stdin), SIGTERM,
//     wait the grace, SIGKILL. Cmd.Kill kills every process of the group
//     at once, even after the leader exited. Builds, [cli] calls and
//     servers run with it, and only with it.
//   - Spec runs a Shell spec's script with the platform's shell: sh -c
//     (the rest of Argv as $1, $2, ...) on Unix, cmd /S /C on Windows.
//
// # When mcpflow dies
//
// Nothing mcpflow starts may outlive it, however it dies: a SIGKILL (its
// guard's too, as "pkill -9 mcpflow" does), an OOM kill.
//
// Unix (Linux, macOS): each group's first member is a sentinel, a stopped
// "sh", started before the command and whose pid is the group's id; the
// command and all it starts join that group. By POSIX, when a process's
// exit orphans a process group that has a stopped member (no member has a
// parent outside the group in the same session any more), the kernel sends
// every member SIGHUP then SIGCONT. The sentinel's parent is mcpflow, so
// mcpflow's death, whoever else dies with it, hangs up every group it
// started, double-forked grandchildren included, with no window: the
// sentinel is stopped before the command runs. A SIGHUP can be ignored
// (nohup): the sentinel, woken by the SIGCONT that follows it, SIGKILLs
// its own group (a trap on its SIGHUP: "kill -KILL 0"), so nothing in the
// group survives, its guard killed too or not. The leader also gets
// SIGKILL on Linux (PR_SET_PDEATHSIG). The guard adds a SIGKILL where no
// hangup comes (see below): StartGuard starts a second process (mcpflow's
// hidden "__guard") in a session of its own, its stdin a pipe only mcpflow
// writes; mcpflow tells it "+ID" before a group's command starts and "-ID"
// before the id is freed. At EOF, mcpflow gone or done, it SIGKILLs the
// groups it knows. It blocks in read(2) meanwhile: no polling, no CPU
// while idle. mcpflow waits its guard: should the guard die, StartGuard's
// died callback reports it and a new guard, told of every group, takes
// over. What escapes: a process that leaves its group (setsid, setpgid)
// and ignores SIGHUP, or one that leaves it before mcpflow and the guard
// both die; a SIGHUP anyone sends a whole group ("kill -HUP 0" in a
// server) kills it as mcpflow's death would; and the hangup needs mcpflow
// and its groups in one session and mcpflow's orphans reparented to init
// or to a subreaper in another session (a subreaper in mcpflow's own
// session keeps the groups from being orphaned). Subreapers, cgroups and
// pid namespaces were weighed: a subreaper guard dies with mcpflow and
// leaves grandchildren to init, cgroups need a delegated hierarchy, and a
// pid namespace needs a user namespace that changes what children see; the
// sentinel costs one "sh" per group and works the same on macOS.
//
// Windows: each group is a Job Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
// processes the command starts join the job, and the job's last handle,
// mcpflow's, closes when mcpflow dies, however it dies, which kills them
// all. No guard is needed (StartGuard starts nothing). What escapes: a
// process started with CREATE_BREAKAWAY_FROM_JOB where the job allows it
// (it does not), and one started in the moment between the command's
// start and its assignment to the job.
package proc
