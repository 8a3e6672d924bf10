// Package control lets a person see and steer a running mcpflow from a
// terminal: mcpflow status, mcpflow rebuild, mcpflow logs.
//
// Each running instance listens on its own control endpoint, a Unix domain
// socket named after its process id (<pid>.sock) in a per-user runtime
// folder: $XDG_RUNTIME_DIR/mcpflow, else <temp>/mcpflow-<uid>. The folder is
// created 0700; a folder that is not a real directory owned by this user,
// or that others may read or enter, is refused with an error saying what to
// do. Only this user can connect: the folder's permissions keep others out,
// and where the OS tells the peer's uid (Linux SO_PEERCRED, macOS and
// FreeBSD LOCAL_PEERCRED) a connection from another uid is refused too.
// Close removes the socket. A socket left by an instance that was killed
// (nothing listens on it and its process is gone) is removed by the next
// Listen and skipped by Instances. On Windows (and any other system
// without Unix sockets and permissions) Listen and Instances return
// ErrUnsupported.
//
// The protocol is JSON Lines: one request per line, one response per line,
// several requests in turn on one connection. A request is an object
// {"method": M, ...}:
//
//	{"method":"hello"}                      -> {"ok":true,"hello":{pid, config, project, mode, ...}}
//	{"method":"status"}                     -> {"ok":true,"status":{...}}         (see Status)
//	{"method":"rebuild","name":"notes"}     -> {"ok":true,"build":{...}}          (see BuildJSON: the recompile tool's structuredContent and more)
//	{"method":"logs","tail":100,"follow":true}
//	                                        -> {"ok":true,"line":"..."} per line, {"ok":true,"dropped":N}
//	                                           when a slow reader lost lines, then {"ok":true,"end":true}
//	                                           (with follow: when the instance stops)
//
// A failure is {"ok":false,"error":"..."}: a line that is not JSON, an
// unknown method, a request over MaxRequest bytes (the rest of that line
// is skipped) and an error of the instance all get one, and the connection
// goes on. None of it reaches the MCP session. A peer never blocks the
// instance: each response must be taken within writeTimeout, an idle
// connection is closed after idleTimeout, at most maxConns connections are
// served at once, and the log ring never waits for a follower.
//
// The instance provides a Target (its Status and Rebuild) and, for logs, a
// logring.Ring; the CLI uses Instances and Dial, and renders with
// WriteStatus, WriteStatusJSON and WriteBuild.
package control
