// Package control lets a person see and steer a running mcpflow from a
// terminal: mcpflow status, rebuild, logs, tools and call.
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
// The protocol is HTTP/1.1 on that socket (curl --unix-socket PATH
// http://mcpflow/status speaks it too):
//
//	GET  /instance                 -> Instance: who the instance is (what Instances lists)
//	GET  /status                   -> Status
//	POST /rebuild?name=NAME        -> BuildJSON: the recompile tool's structuredContent and more
//	GET  /logs?tail=N&follow=1     -> text: the kept lines (the last N), then with follow every
//	                                  new one, and "[mcpflow: N lines dropped]" where a slow
//	                                  reader lost lines, until the instance stops
//	GET  /tools                    -> the tools/list result of a session of the CLI's own
//	POST /call?name=NAME           -> the tools/call result of tool NAME, the body (a JSON
//	                                  object, up to MaxArguments bytes) its arguments
//
// Any other answer than 200 has a JSON body {"error": "..."}: 409 for a
// rebuild while another runs, 503 for a connection over the limit (its
// body names the instance too, so that Instances still lists it), 403
// for a peer of another uid, 422 for an error of the instance (say, an
// unknown server name). The client reports 409 and 503 as ErrBusy. None
// of it reaches the MCP session. A peer never blocks the instance: its
// request must come within readHeaderTimeout and be at most MaxRequest
// bytes, with no body but /call's; each part of a response must be taken within
// writeTimeout; an idle connection is closed after idleTimeout; at most
// maxConns connections are served at once and as many more answered
// busy (further ones wait to be accepted); and the log ring never waits
// for a follower.
//
// The instance provides a Target (its Status and Rebuild) and, for logs, a
// logring.Ring; the CLI uses Instances and Dial, and renders with
// WriteStatus, WriteStatusJSON and WriteBuild.
package control
