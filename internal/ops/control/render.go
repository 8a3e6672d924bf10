package control

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpflow/mcpflow/internal/report/result"
)

// WriteStatus renders instances for mcpflow status: a block each, with a
// table of its servers.
func WriteStatus(w io.Writer, sts []Status) error {
	var b strings.Builder
	if len(sts) == 0 {
		b.WriteString("no mcpflow instance running\n")
	}
	for i, st := range sts {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeInstance(&b, st)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeInstance(b *strings.Builder, st Status) {
	fmt.Fprintf(b, "mcpflow pid %d  %s  up %s  %s\n", st.Pid, cmp.Or(st.Mode, "-"), uptime(time.Duration(st.Uptime)), cmp.Or(st.Config, "(command line)"))
	if st.Project != "" && (st.Config == "" || !strings.HasPrefix(st.Config, st.Project)) {
		fmt.Fprintf(b, "  project  %s\n", st.Project)
	}
	if h := st.HTTP; h != nil {
		writeHTTP(b, h)
	} else {
		fmt.Fprintf(b, "  client   %s\n", clientLine(st.Client))
	}
	if len(st.Servers) == 0 {
		b.WriteString("  (no servers)\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SERVER\tSTATE\tPID\tUP\tRESTARTS\tLAST BUILD\tTOOLS\tCALLS")
	var notes strings.Builder
	for _, sv := range st.Servers {
		pid, up := "-", "-"
		if sv.Pid > 0 {
			pid = fmt.Sprint(sv.Pid)
			up = uptime(time.Duration(sv.Uptime))
		}
		calls := fmt.Sprint(sv.Served)
		if sv.InFlight > 0 {
			calls += fmt.Sprintf(" (%d in flight)", sv.InFlight)
		}
		tools := "-"
		if sv.Tools >= 0 {
			tools = fmt.Sprint(sv.Tools)
		}
		restarts := fmt.Sprint(sv.Restarts)
		if sv.Crashes > 0 {
			restarts += fmt.Sprintf(" (%d crash%s)", sv.Crashes, plural(sv.Crashes, "es"))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			sv.Name, cmp.Or(sv.State, "-"), pid, up, restarts, buildCell(sv.Build), tools, calls)
		if bs := sv.Build; bs != nil {
			if bs.FirstError != "" {
				fmt.Fprintf(&notes, "  %s: build failed: %s\n", sv.Name, bs.FirstError)
			}
			if bs.RestartError != "" {
				fmt.Fprintf(&notes, "  %s: restart failed: %s\n", sv.Name, bs.RestartError)
			}
		}
	}
	tw.Flush()
	b.WriteString(notes.String())
}

// writeHTTP renders the HTTP front: its URL and a line per session.
func writeHTTP(b *strings.Builder, h *HTTPStatus) {
	fmt.Fprintf(b, "  http     %s  (%d client session%s)\n", h.URL, len(h.Sessions), plural(len(h.Sessions), "s"))
	now := time.Now()
	for _, s := range h.Sessions {
		line := fmt.Sprintf("    %s  %s", cmp.Or(s.ID, "(session-less)"), clientLine(s.Client))
		if !s.LastSeen.IsZero() {
			line += fmt.Sprintf("  %d request%s, last %s ago", s.Requests, plural(int(s.Requests), "s"), uptime(now.Sub(s.LastSeen)))
		}
		if s.InFlight > 0 {
			line += fmt.Sprintf(", %d in flight", s.InFlight)
		}
		if idle := now.Sub(s.IdleSince); !s.IdleSince.IsZero() && idle >= time.Minute {
			line += fmt.Sprintf(", nothing open for %s: its client may have exited (the session ends after http.session_idle)", uptime(idle))
		}
		b.WriteString(line + "\n")
	}
}

func plural(n int, suffix string) string {
	if n == 1 {
		return ""
	}
	return suffix
}

func clientLine(c ClientInfo) string {
	if c.Name == "" && c.Protocol == "" && c.Era == "" {
		return "(none yet)"
	}
	s := cmp.Or(c.Name, "(unnamed)")
	if c.Version != "" {
		s += " " + c.Version
	}
	switch {
	case c.Protocol != "" && c.Era != "":
		s += fmt.Sprintf(", protocol %s (%s)", c.Protocol, c.Era)
	case c.Protocol != "":
		s += ", protocol " + c.Protocol
	case c.Era != "":
		s += fmt.Sprintf(", %s era", c.Era)
	}
	return s
}

func buildCell(bs *BuildStatus) string {
	if bs == nil {
		return "-"
	}
	switch d := result.Dur(time.Duration(bs.Duration)); {
	case bs.Canceled:
		return "canceled " + d
	case bs.Cached:
		return "cached"
	case bs.Skipped:
		return "none"
	case bs.OK:
		return "ok " + d
	default:
		return "FAILED " + d
	}
}

// uptime renders an uptime with result.Dur, whole seconds from 10s on.
func uptime(d time.Duration) string {
	if d >= 10*time.Second {
		d = d.Truncate(time.Second)
	}
	return result.Dur(d)
}

// WriteStatusJSON renders instances for mcpflow status --json.
func WriteStatusJSON(w io.Writer, sts []Status) error {
	if sts == nil {
		sts = []Status{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sts)
}

// WriteBuild renders a rebuild's outcome for mcpflow rebuild; name is the
// server's name in a mux ("" otherwise).
func WriteBuild(w io.Writer, name string, b result.Build) error {
	var s strings.Builder
	if name != "" {
		s.WriteString(name + ": ")
	}
	why := ""
	if b.Err != nil {
		why = fmt.Sprintf(": %v", b.Err)
	}
	switch {
	case b.Canceled:
		fmt.Fprintf(&s, "build canceled after %s%s\n", result.Dur(b.Duration), why)
	case b.Cached:
		s.WriteString("build cached: " + firstLine(b.Output) + "\n")
	case b.Skipped:
		s.WriteString("no build command\n")
	case b.OK:
		fmt.Fprintf(&s, "build ok in %s\n", result.Dur(b.Duration))
	default:
		fmt.Fprintf(&s, "build FAILED in %s%s\n", result.Dur(b.Duration), why)
		if errs := cmp.Or(strings.TrimRight(b.Errors, "\n"), strings.TrimRight(b.Output, "\n")); errs != "" {
			s.WriteString(errs + "\n")
		}
		if b.Restart == nil {
			s.WriteString("the old server keeps running; fix the errors and rebuild\n")
		}
	}
	if r := b.Restart; r != nil {
		if r.Err != nil {
			fmt.Fprintf(&s, "restart FAILED: %v\n", r.Err)
		} else {
			fmt.Fprintf(&s, "restart ok in %s (generation %d, pid %d)\n", result.Dur(r.Duration), r.Gen, r.Pid)
			s.WriteString(toolsLine(r.Tools) + "\n")
		}
		for _, h := range r.Handshake {
			s.WriteString("handshake: " + h + "\n")
		}
	}
	_, err := io.WriteString(w, s.String())
	return err
}

func toolsLine(d result.ToolDiff) string {
	n := len(d.Current)
	switch {
	case !d.Known && n == 0:
		return "tools: not listed yet (no client session)"
	case !d.Known:
		return fmt.Sprintf("tools: %d (%s)", n, strings.Join(d.Current, ", "))
	case d.Empty():
		return fmt.Sprintf("tools: no change (%d)", n)
	}
	var parts []string
	for i, names := range [][]string{d.Added, d.Removed, d.Changed} {
		for _, t := range names {
			parts = append(parts, "+-~"[i:i+1]+t)
		}
	}
	return fmt.Sprintf("tools: %s (%d now)", strings.Join(parts, " "), n)
}

// ExitCode is mcpflow rebuild's exit status: 0 when the new server serves.
func ExitCode(b result.Build) int {
	if b.OK && !b.Canceled && (b.Restart == nil || b.Restart.OK()) {
		return 0
	}
	return 1
}
