package relay

import "github.com/mcpflow/mcpflow/internal/report/texts"

// health is what the relay knows of whether a child may serve: why none
// serves (the report the agent reads), whether the first build still runs
// past StartupGrace, whether the last build failed, and the crash policy.
// It has no lock: its owner's lock guards it.
type health struct {
	downReport string // why no child serves, for errors and tool results
	// building: the first build is still running after StartupGrace; tool
	// calls wait for it (held) while everything else is answered at once.
	building bool
	// lastBuildFailed: the last build failed, so the files on disk are
	// not what the running server was built from.
	lastBuildFailed bool
	crashes         crashPolicy
}

// describe says why no server runs, for errors and tool results.
func (h *health) describe() string {
	if h.downReport != "" {
		return h.downReport
	}
	return texts.NotRunning
}

// setReport records why no child serves: report, when override or when
// none was said.
func (h *health) setReport(report string, override bool) {
	if override || h.downReport == "" {
		h.downReport = report
	}
}

// restartedByBuild starts afresh after a build (or the agent) restarted
// the server: the crash count and the failed build are over.
func (h *health) restartedByBuild() {
	h.crashes.reset()
	h.lastBuildFailed = false
}
