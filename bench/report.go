//go:build linux

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// row is one printed line of a section's table.
type row struct {
	name          string
	n             string
	med, p99, min string
	ratio         string
	goal, verdict string
}

// result is what a section reports.
type result struct {
	rows  []row
	notes []string
}

func (r *result) add(x row) { r.rows = append(r.rows, x) }

func (r *result) note(format string, args ...any) {
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// stat makes a row from a sample: n, median, p99, min.
func stat(name string, u unit, s *sample) row {
	return row{
		name: name,
		n:    fmt.Sprint(s.n()),
		med:  fmtVal(u, s.median()),
		p99:  fmtVal(u, s.p99()),
		min:  fmtVal(u, s.min()),
	}
}

// single makes a row for one value (no distribution).
func single(name string, u unit, x float64) row {
	return row{name: name, n: "1", med: fmtVal(u, x), p99: "", min: ""}
}

// judge sets goal and verdict.
func (x row) judge(goal string, ok bool) row {
	x.goal = goal
	if ok {
		x.verdict = "✓"
	} else {
		x.verdict = "✗ miss"
	}
	return x
}

func (x row) withRatio(r string) row { x.ratio = r; return x }

// withGoal sets a goal that is reported, not judged.
func (x row) withGoal(g string) row { x.goal = g; return x }

var header = []string{"measurement", "n", "median", "p99", "min", "ratio", "goal", "verdict"}

func (x row) cells() []string {
	return []string{x.name, x.n, x.med, x.p99, x.min, x.ratio, x.goal, x.verdict}
}

// printTable writes a section as an aligned text table.
func printTable(w io.Writer, title string, res *result) {
	fmt.Fprintf(w, "\n== %s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range res.rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	tw.Flush()
	for _, n := range res.notes {
		fmt.Fprintf(w, "   - %s\n", n)
	}
}

// writeMarkdown writes a section as a markdown table, ready for
// BENCHMARKS.md.
func writeMarkdown(w io.Writer, title string, res *result) {
	fmt.Fprintf(w, "\n### %s\n\n", title)
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|---|---|")
	for _, r := range res.rows {
		c := r.cells()
		for i := range c {
			c[i] = strings.ReplaceAll(c[i], "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(c, " | "))
	}
	if len(res.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range res.notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}
