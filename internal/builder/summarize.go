package builder

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// How many continuation lines (indented source excerpts, carets, notes)
// are kept after a diagnostic line.
const (
	contextLines      = 3
	arrowContextLines = 8 // rustc's "--> file:line:col" is followed by a drawing of the code
	traceContextLines = 6 // a panic's goroutine header is followed by frames, two lines each
)

// The patterns summarize uses.
var (
	ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)`)
	// Progress reports from cargo, npm, pip, go and friends.
	noiseRE = regexp.MustCompile(`^\s*(?:(?:Compiling|Checking|Downloading|Downloaded|Fresh|Updating|Updated|Blocking|Locking|Adding|Installing|Installed|Resolving|Resolved|Finished|Building|Running|Removing|Fetching|Fetched|Unpacking|Collecting|Preparing|Packaging|Documenting|Generating|Using cached|Requirement already satisfied)\b` +
		`|npm (?:WARN|notice|http|timing|info|verb|sill)\b|go: (?:downloading|finding|extracting|upgraded|added)\b|>\s|\[\d+/\d+\]\s)`)
	goPkgRE = regexp.MustCompile(`^# [\w.\-/@~+]+(?: \[[^\]]*\])?$`)
	// path/file.go:12:5: msg, file.rs:3:1, /abs/main.go:8 +0x1d, C:\x\a.c:1:2:
	locRE       = regexp.MustCompile(`^\s*(?:[A-Za-z]:)?[\w.\-+@~/\\]*\.[A-Za-z]\w*(?::\d+){1,2}(?:[:\s]|$)`)
	arrowRE     = regexp.MustCompile(`^\s*-->\s*\S+:\d+`)
	tscRE       = regexp.MustCompile(`^\s*[^\s(]+\(\d+,\d+\):`)
	severityRE  = regexp.MustCompile(`^\s*(?:error|Error|ERROR|fatal error|fatal|Fatal|FATAL|FAIL|FAILED|panic)(?:\[[\w-]+\])?(?:[:!]|\s|$)`)
	exceptionRE = regexp.MustCompile(`^\s*(?:[\w$]+\.)*[A-Z]\w*(?:Error|Exception)(?::|$)`)
	tracebackRE = regexp.MustCompile(`^\s*Traceback \(most recent call last\):`)
	pyFileRE    = regexp.MustCompile(`^\s*File "[^"]+", line \d+`)
	goroutineRE = regexp.MustCompile(`^goroutine \d+ \[`)
	warningRE   = regexp.MustCompile(`^\s*(?:warning|Warning|WARNING|WARN)(?:\[[\w-]+\])?:`)
	gutterRE    = regexp.MustCompile(`^\s*(?:\d+\s*)?\||^\s*[=^~]`)
)

// isWarning reports a warning header: "warning: ...", or a location
// followed by "warning".
func isWarning(line string) bool {
	if warningRE.MatchString(line) {
		return true
	}
	for _, re := range []*regexp.Regexp{locRE, tscRE} {
		if m := re.FindStringIndex(line); m != nil {
			rest := strings.TrimLeft(line[m[1]:], " :-\t")
			return strings.HasPrefix(strings.ToLower(rest), "warning")
		}
	}
	return false
}

func isDiagnostic(line string) bool {
	return slices.ContainsFunc([]*regexp.Regexp{locRE, arrowRE, tscRE, severityRE, exceptionRE, tracebackRE, pyFileRE, goroutineRE},
		func(re *regexp.Regexp) bool { return re.MatchString(line) })
}

// summarize trims build output to what an agent needs to fix the build.
//
// It keeps the lines that look like diagnostics (file:line:col locations,
// "error[E0308]", "error:", "ERROR", rustc's "--> src/main.rs:4:5", tsc's
// "file.ts(3,5): error", Python's traceback lines, Go's "panic:" and
// goroutine traces), each with a few continuation lines after it (indented
// code, carets, notes), and the "# package" line go build prints before
// them. It drops warnings, progress noise (cargo's "Compiling ...", npm
// WARN, "go: downloading ...") and blank lines, and repeated diagnostics.
// If nothing looks like a diagnostic, it returns the last lines of the
// output (progress noise left out) instead.
//
// The result is at most max bytes (no limit if max <= 0), cut at a line
// boundary with a "… (N more lines)" or "… (N earlier lines)" note.
func summarize(output string, max int) string {
	output = ansiRE.ReplaceAllString(output, "")
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	if kept := diagnostics(lines); len(kept) > 0 {
		return fit(kept, max, false)
	}
	return fit(relevant(lines), max, true)
}

// diagnostics returns the diagnostic lines of lines with their context, or
// nil if there are none.
func diagnostics(lines []string) []string {
	var (
		kept      []string
		seen      = map[string]bool{}
		heading   string // go build's "# pkg", shown before its first diagnostic
		budget    int    // continuation lines still allowed
		loose     bool   // continuation lines need not be indented (Go traces)
		inWarning bool   // inside a warning's block: its locations are not wanted
	)
	for _, line := range lines {
		switch {
		case line == "":
			budget, inWarning = 0, false
		case noiseRE.MatchString(line):
			budget = 0
		case goPkgRE.MatchString(line):
			heading, budget, inWarning = line, 0, false
		case isWarning(line):
			budget, inWarning = 0, true
		case inWarning && (arrowRE.MatchString(line) || gutterRE.MatchString(line)):
			// where the warning points
		case isDiagnostic(line):
			inWarning = false
			key := strings.TrimSpace(line)
			if seen[key] {
				budget = 0
				continue
			}
			seen[key] = true
			if heading != "" {
				kept = append(kept, heading)
				heading = ""
			}
			kept = append(kept, line)
			budget, loose = contextLines, false
			switch {
			case arrowRE.MatchString(line):
				budget = arrowContextLines
			case goroutineRE.MatchString(line) || strings.HasPrefix(line, "panic: "):
				budget, loose = traceContextLines, true
			}
		case budget > 0 && (loose || line[0] == ' ' || line[0] == '\t' || gutterRE.MatchString(line)):
			kept = append(kept, line)
			budget--
		default:
			budget = 0
		}
	}
	return kept
}

// relevant returns lines without progress noise and blank-line runs.
func relevant(lines []string) []string {
	var out []string
	for _, l := range lines {
		if noiseRE.MatchString(l) || (l == "" && (len(out) == 0 || out[len(out)-1] == "")) {
			continue
		}
		out = append(out, l)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if len(out) == 0 { // only noise: better than nothing
		out = slices.DeleteFunc(lines, func(l string) bool { return l == "" })
	}
	return out
}

// fit joins the first lines (the last ones, fromEnd) that fit in max
// bytes, noting how many were left out.
func fit(lines []string, max int, fromEnd bool) string {
	all := strings.Join(lines, "\n")
	if max <= 0 || len(all) <= max {
		return all
	}
	n, size := len(lines), 0
	for k := range n {
		l, note := lines[k], fmt.Sprintf("… (%d more lines)", n-k)
		if fromEnd {
			l, note = lines[n-1-k], fmt.Sprintf("… (%d earlier lines)", n-k)
		}
		if size+len(l)+1+len(note) <= max {
			size += len(l) + 1
			continue
		}
		kept := lines[:k]
		if fromEnd {
			kept = lines[n-k:]
		}
		if k == 0 {
			if kept = []string{cutLine(l, max-len(note)-1, fromEnd)}; kept[0] == "" {
				return cutLine(l, max, fromEnd) // no room for the note
			}
		}
		if fromEnd {
			return note + "\n" + strings.Join(kept, "\n")
		}
		return strings.Join(kept, "\n") + "\n" + note
	}
	return all // not reached: all did not fit
}

// cutLine shortens l to at most n bytes at a rune boundary, keeping its
// start, or its end if fromEnd. The result is "" if n < 1.
func cutLine(l string, n int, fromEnd bool) string {
	if n < 1 {
		return ""
	}
	if len(l) <= n {
		return l
	}
	if fromEnd {
		i := len(l) - n
		for i < len(l) && !utf8.RuneStart(l[i]) {
			i++
		}
		return l[i:]
	}
	i := n
	for i > 0 && !utf8.RuneStart(l[i]) {
		i--
	}
	return l[:i]
}
