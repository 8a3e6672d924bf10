// Package control lets a person see and steer a running mcpflow from a
// terminal: mcpflow status, rebuild, logs, tools and call.
//
// Each running instance listens on a Unix socket, <pid>.sock, in a
// per-user folder, $XDG_RUNTIME_DIR/mcpflow, else /tmp/mcpflow-<uid>,
// created 0700; Instances searches both, so an instance whose client gave
// it a bare environment is found from a terminal. A folder that is not a
// real directory of this user's, or that others may enter, is refused
// with an error saying what to do. Only this
// user can connect: the folder keeps others out, and where the OS tells
// the peer's uid (Linux SO_PEERCRED, macOS and FreeBSD LOCAL_PEERCRED)
// another uid is refused too.
// Close removes the socket; one a killed instance left (nothing listens,
// its process is gone) is removed by the next Listen and skipped by
// Instances. On Windows, where Wine (which tests the Windows build here)
// has no AF_UNIX, the instance listens on a loopback TCP port instead,
// named with a random token in <pid>.addr in %TEMP%\mcpflow; a request
// must carry the token (header Mcpflow-Token).
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
// rebuild while another runs, 503 for a connection over the limit (naming
// the instance, so that Instances still lists it), 403 for a peer of
// another uid, 422 for an error of the instance (say, an unknown server
// name). The client reports 409 and 503 as ErrBusy. None of it reaches the
// MCP session. A peer never blocks the instance: the limits of a Server
// bound its request (no body but /call's), the time to take each part of a
// response, idle connections and the connections served at once (as many
// more are answered busy, further ones wait to be accepted); and the log
// ring never waits for a follower.
//
// The instance provides a Target, and a logring.Ring for logs; the CLI
// uses Instances and Dial, and renders with the Write functions.
package control
