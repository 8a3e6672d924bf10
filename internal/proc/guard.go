package proc

// The guard: what kills mcpflow's process groups when mcpflow itself is
// killed (SIGKILL included) and so cannot stop them.
//
// StartGuard, called by mcpflow at the start of a run, starts a second
// process (mcpflow itself, with a hidden subcommand that calls RunGuard)
// in a session and group of its own, its stdout and stderr on /dev/null
// and its stdin the read end of a pipe whose write end only mcpflow holds
// (close-on-exec: no other child inherits it). While mcpflow lives, the
// guard learns the groups mcpflow starts: every one (a server, a build, a
// [cli] call, a schema command) is led by a direct child of mcpflow, its
// group id that child's pid, so the guard reads mcpflow's children every
// GuardInterval and remembers the group ids of those that lead their
// group, forgetting a group once no process is left in it. When the pipe
// reaches EOF, mcpflow is gone, whatever ended it: the guard kills every
// remembered group (SIGKILL to the group, which reaches what a leader that
// already exited left behind) and exits. After a clean exit mcpflow has
// stopped everything already (closing the pipe is its last act of the
// run), and the guard finds nothing to kill.
//
// The guard never kills a group that mcpflow did not start: it only
// remembers groups led by mcpflow's own children (never mcpflow's own
// group, which it may share with its client, nor the guard's), and it
// forgets a group as soon as the group is empty. A group id cannot name
// another group while a process of its group lives, and the kernel hands
// out pids in order, so the id of a group that emptied since the last
// look is not reused within one interval.
//
// What it cannot catch: a group started and given a grandchild within one
// interval of mcpflow's death (the leader itself still gets the
// parent-death signal), and a process that leaves its group (setsid,
// setpgid) before mcpflow dies.
//
// Platforms: Linux reads /proc/PID/task/*/children (where the kernel
// lacks them, CONFIG_PROC_CHILDREN off, StartGuard says so); macOS asks
// sysctl (kern.proc.all); elsewhere StartGuard starts nothing. Windows
// needs no guard: each group is a kill-on-close Job Object, closed when
// mcpflow dies.

import "time"

// GuardInterval is how often the guard reads mcpflow's children.
const GuardInterval = 200 * time.Millisecond
