package texts

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// Package texts is every text the agent reads from mcpflow, in every mode:
// the state reports (why no server runs: in tools/call results, errors
// and instructions), the notices attached to tool results, the rebuild
// tool's result (recompile's, reload_server's), the mux's own answers and
// the errors mcpflow answers requests with. One wording per state,
// durations through result.Dur; where a text says what to call to
// rebuild, the caller gives it (hint: "recompile", or the mux's
// `reload_server {"name": "x"}`). texts_test.go renders each one against
// testdata/texts.golden. The texts of a line that is no message are
// internal/wire's (Refusal), the same in every mode.

// Exit is what the agent is told about a server process that exited (or
// may still run: then Stderr alone): its exit status, how long it ran and
// the end of its stderr.
type Exit struct {
	Status string        // "exit status 2", "killed by signal 9 (killed)"
	Uptime time.Duration // how long it ran
	Stderr string        // the tail of its stderr, trimmed; "" if none
}

// WithStderr appends the tail of a child's stderr to a message.
func WithStderr(msg string, e Exit) string {
	if e.Stderr == "" {
		return msg
	}
	return msg + "\nLast lines of its stderr:\n" + lastLines(e.Stderr, 40)
}

// The states in which no server runs. Each is one or two sentences that
// say what happened and what to do; the stderr tail, when there is one,
// follows.

// Building: the first build is still running after d.
func Building(tool string, d time.Duration) string {
	return fmt.Sprintf("The server's first build is still running after %s; its tools appear when it finishes. Call %s to wait for it and see the result.", result.Dur(d), tool)
}

// BuildFailed: the build failed and no server runs.
func BuildFailed(err error, errors, tool string) string {
	s := "The server's build failed, so it is not running"
	if err != nil {
		s += fmt.Sprintf(" (%v)", err)
	}
	s += fmt.Sprintf(". Fix the errors, then save or call %s.", tool)
	if errors = strings.TrimRight(errors, "\n"); errors != "" {
		s += "\n" + errors
	}
	return s
}

// FailedStart: a new server exited before answering its handshake.
// setting is where its command is set: the command may be what is wrong
// (a script that does not exist, say).
func FailedStart(e Exit, setting, tool string) string {
	return WithStderr(fmt.Sprintf("The server exited (%s) before answering its handshake, so it is not running. Fix the code, or %s if the command is wrong, then save or call %s.", e.Status, setting, tool), e)
}

// NoHandshake: the server runs but did not answer the client's
// handshake in time, so mcpflow stopped it.
func NoHandshake(cmd, setting string, d time.Duration, e Exit, tool string) string {
	return WithStderr(fmt.Sprintf("The server (%s) did not answer its MCP handshake within %s, so mcpflow stopped it. Is it an MCP server on stdio? A server that serves HTTP by default, or one started with the wrong arguments, waits forever. Fix %s (or relay.handshake_timeout, for a server that is slow to start), or the server, then save or call %s.", cmd, result.Dur(d), setting, tool), e)
}

// NoStart: the server's process could not be started at all.
func NoStart(err error, setting string) string {
	if errors.Is(err, ErrNoDir) {
		return fmt.Sprintf("The server could not be started: %v. Fix the working directory set beside %s.", err, setting)
	}
	return fmt.Sprintf("The server could not be started: %v. Check %s.", err, setting)
}

// ErrNoDir: the child's working directory does not exist.
var ErrNoDir = errors.New("its working directory does not exist")

// BadStart: a new server ran but did not complete its start (an error
// answer to its handshake or tools/list, or no answer in time).
func BadStart(err error, tool string) string {
	return fmt.Sprintf("The server did not come up: %v. It was stopped; fix the code, then save or call %s.", err, tool)
}

// CrashRestarting: the server crashed and mcpflow is restarting it.
func CrashRestarting(e Exit) string {
	return WithStderr(fmt.Sprintf("The server crashed (%s) after %s; mcpflow is restarting it.", e.Status, result.Dur(e.Uptime)), e)
}

// CrashWait: the server crashed and relay.on_crash is "wait".
func CrashWait(e Exit, tool string) string {
	return WithStderr(fmt.Sprintf("The server crashed (%s) after %s and stays down (relay.on_crash = \"wait\"). Fix the code, then save or call %s.", e.Status, result.Dur(e.Uptime), tool), e)
}

// CrashLoop: the server crashed right after starting too often.
func CrashLoop(e Exit, n int, tool string) string {
	return WithStderr(fmt.Sprintf("The server crashed (%s) %d times in a row right after starting, so mcpflow stopped restarting it. Fix the code, then save or call %s.", e.Status, n, tool), e)
}

// CrashAfterFailedBuild: the server crashed while the last build had
// failed; its output is not started.
func CrashAfterFailedBuild(e Exit, tool string) string {
	return WithStderr(fmt.Sprintf("The server crashed (%s) after %s. The last build failed, so mcpflow did not restart the server from that build's output. Fix the errors, then save or call %s.", e.Status, result.Dur(e.Uptime), tool), e)
}

// NotRunning: no server runs and no more is known.
const NotRunning = "The MCP server is not running."

// Instructions is the initialize result's instructions when mcpflow
// answers the handshake itself.
func Instructions(state string) string {
	return "mcpflow is answering for the MCP server until it runs. " + firstLine(state)
}

// HandshakeChanged: a new server's initialize result differs from the
// one the client has, in field k.
func HandshakeChanged(k, now, was string) string {
	return fmt.Sprintf("the new server's initialize result differs in %s: %s (was %s); the client keeps the old one until it reconnects", k, now, was)
}

// Notices, attached to the next tools/call result while they are true.

// NoticeBuildFailed: an automatic rebuild failed; the old server serves.
func NoticeBuildFailed(tool string) string {
	return fmt.Sprintf("mcpflow: the automatic rebuild after your last edit failed; the previous server is still running. Call %s to see the errors.", tool)
}

// NoticeFailedBuildRunning: the server had to be started from the files
// of a build that failed.
func NoticeFailedBuildRunning(tool string) string {
	return fmt.Sprintf("mcpflow: the server now running was started from the output of the last build, which failed: it may not match your code. Fix the errors, then save or call %s.", tool)
}

// NoticeCrashRestarted: the server crashed between calls and mcpflow
// restarted it.
func NoticeCrashRestarted(status string) string {
	return fmt.Sprintf("mcpflow: the MCP server crashed (%s) between calls and mcpflow restarted it; anything it held in memory is gone.", status)
}

// Errors the relay answers requests with.

func ErrDown(state string) string { return "mcpflow: " + state }

const (
	ErrRestarted     = "mcpflow: the MCP server was restarted (rebuilt) before it answered; send the request again"
	ErrServerBadJSON = "mcpflow: the server answered with a line that is not valid JSON; it was not forwarded (see mcpflow's log)"
)

func ErrCrashed(state string) string { return "mcpflow: " + state }

func ErrQueueFull(n, bytes int) string {
	return fmt.Sprintf("mcpflow: the server is restarting and %d messages (%d bytes) are already waiting (relay.queue_size / relay.queue_bytes); try again in a moment", n, bytes)
}

func ErrQueueTimeout(d time.Duration) string {
	return fmt.Sprintf("mcpflow: the server is still restarting after %s (relay.queue_timeout); try again", result.Dur(d))
}

func ErrServerTooLarge(size, limit int) string {
	return fmt.Sprintf("mcpflow: the server's response of %d bytes exceeds the %d-byte limit (relay.max_message in mcpflow.toml) and was dropped", size, limit)
}

// The recompile tool's result.

// Outcome is the text the agent reads after recompile; isErr when
// no new server serves. running says whether a server (the previous one)
// still runs after a failed build.
func Outcome(o result.Build, tool string, running bool) (text string, isErr bool) {
	var b strings.Builder
	rs := o.Restart
	switch {
	case !o.OK:
		fmt.Fprintf(&b, "Build failed after %s (%v).", result.Dur(o.Duration), o.Err)
		if running {
			b.WriteString(" The previous server is still running, unchanged.")
		} else {
			b.WriteString(" No server is running.")
		}
		b.WriteString("\n")
		if o.Errors != "" {
			b.WriteString("\n" + strings.TrimRight(o.Errors, "\n") + "\n")
		}
		fmt.Fprintf(&b, "\nFix these errors, then call %s again.", tool)
		return b.String(), true
	case rs == nil:
		fmt.Fprintf(&b, "Build succeeded in %s; nothing was restarted.", result.Dur(o.Duration))
		return b.String(), false
	case rs.Err != nil:
		if !o.Skipped {
			fmt.Fprintf(&b, "The build succeeded in %s. ", result.Dur(o.Duration))
		}
		b.WriteString(rs.Err.Error())
		return b.String(), true
	}
	if !o.Skipped {
		fmt.Fprintf(&b, "Build succeeded in %s. ", result.Dur(o.Duration))
	}
	fmt.Fprintf(&b, "Server restarted in %s (stop %s, start %s, handshake %s, tools/list %s).",
		result.Dur(rs.Duration), result.Dur(rs.Stop), result.Dur(rs.Start), result.Dur(rs.Replay), result.Dur(rs.ToolsList))
	switch {
	case o.Cached:
		b.WriteString(" No build was needed: " + strings.TrimSuffix(firstLine(o.Output), ".") + ".")
	case o.Skipped:
		b.WriteString(" There is no build step.")
	}
	b.WriteString("\n")
	b.WriteString(restartText(rs, tool))
	return strings.TrimRight(b.String(), "\n"), false
}

// maxNamed is how many tool names the recompile result lists.
const maxNamed = 40

// restartText is the agent's rendering of a restart's tool diff (against
// the tools the client last fetched) and handshake changes.
func restartText(res *result.Restart, tool string) string {
	var b strings.Builder
	d := res.Tools
	switch {
	case !d.Known:
	case d.Empty():
		b.WriteString("Tools: unchanged since your last tools/list.\n")
	default:
		fmt.Fprintf(&b, "Tools changed since your last tools/list: %s\n", d)
		for _, n := range d.Current {
			det, ok := d.Details[n]
			switch {
			case !ok:
			case slices.Contains(d.Added, n):
				fmt.Fprintf(&b, "  %s (new): %s\n  input schema: %s\n", n, det.Description, det.InputSchema)
			case det.SchemaChanged:
				fmt.Fprintf(&b, "  %s (changed): input schema: %s\n", n, det.InputSchema)
			}
		}
	}
	names := d.Current
	more := ""
	if len(names) > maxNamed {
		more = fmt.Sprintf(", and %d more", len(names)-maxNamed)
		names = names[:maxNamed]
	}
	if len(d.Current) > 0 || d.Known {
		besides := ""
		if tool != "" && !strings.Contains(tool, " ") {
			besides = ", besides " + tool
		}
		fmt.Fprintf(&b, "Tools now (%d%s): %s%s.\n", len(d.Current), besides, cmp.Or(strings.Join(names, ", "), "none"), more)
	}
	for _, ch := range res.Handshake {
		b.WriteString("Note: " + ch + "\n")
	}
	return b.String()
}

// ErrClientLeft answers a server's request whose client's session ended
// before it answered.
const ErrClientLeft = "mcpflow: the client's session ended before it answered this request"

// lastLines is the last n lines of s, with a count of those left out.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// BrokenConfig is what the agent reads while mcpflow.toml does not load
// (the handshake's instructions and the rebuild tool's answer): the
// problem as mcpflow check prints it, and that mcpflow starts the server
// once the file is fixed.
func BrokenConfig(problem, tool string) string {
	return "mcpflow cannot start the MCP server: its configuration does not load.\n" + problem +
		"\nFix the file and save it: mcpflow watches it and starts the server then (its tools appear). " +
		"mcpflow check shows the same problem; call " + tool + " to read it again."
}

// ConfigProblem: mcpflow.toml was edited during the session and no longer
// loads; what runs keeps the settings it started with.
func ConfigProblem(problem string) string {
	return "mcpflow: mcpflow.toml no longer loads, so the previous settings still serve:\n" + problem +
		"\nFix the file and save it: the new settings apply then."
}

// TooManyChildren: a stdio server runs a process per client session, and
// this many run already (relay.max_children).
func TooManyChildren(n int) string {
	return fmt.Sprintf("mcpflow runs a copy of the MCP server for each client session, and %d run already (relay.max_children in mcpflow.toml): this session is served once another client disconnects, or raise the limit.", n)
}
