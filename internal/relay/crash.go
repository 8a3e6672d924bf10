package relay

import "time"

// Crash policy: a crash within quickCrash of the start counts towards a
// crash loop; after crashLoop of them in a row, automatic restarts stop
// until a build or recompile calls Restart.
const (
	quickCrash = 5 * time.Second
	crashLoop  = 3
)

// crashPolicy decides what follows a crash of the child (Config.OnCrash).
// It has no lock: its owner's lock guards it.
type crashPolicy struct {
	restart bool // OnCrash is "restart"
	quick   int  // crashes in a row soon after start
	stopped bool // automatic restarts stopped by a crash loop
}

// crashAction is what crashed decided.
type crashAction int

const (
	crashWait     crashAction = iota // on_crash = "wait": stay down
	crashRestart                     // restart after the backoff
	crashLoopStop                    // a crash loop: stay down until Restart
)

// crashed records a crash after uptime and says what to do; with
// crashRestart, after how long.
func (p *crashPolicy) crashed(uptime time.Duration) (crashAction, time.Duration) {
	if uptime < quickCrash {
		p.quick++
	} else {
		p.quick = 1
	}
	switch {
	case !p.restart:
		return crashWait, 0
	case p.quick >= crashLoop:
		p.stopped = true
		return crashLoopStop, 0
	}
	return crashRestart, 100 * time.Millisecond << (p.quick - 1)
}

// reset starts counting afresh (a build or recompile restarted the child).
func (p *crashPolicy) reset() { p.quick, p.stopped = 0, false }
