package restart

import (
	"time"

	"github.com/tend-sh/tend/spec"
)

// Rules is what a container's spec says about its runs' ends: restart_policy's
// mode, backoff and restart limit (docs/reference.md "Running", "Restart limits and
// deadlines").
type Rules struct {
	Mode        string // a name of spec.RestartModes, whose row says what it restarts
	MaxFailures int    // consecutive short runs that give up; 0: never
	Backoff     Policy
}

// RulesFromSpec reads the rules of a container's restart_policy, defaulted by
// spec.Load.
func RulesFromSpec(p *spec.RestartPolicy) Rules {
	return Rules{Mode: p.Mode, MaxFailures: p.MaxFailures.Get(), Backoff: PolicyFromSpec(p)}
}

// Ending is how a run ended, as far as the rules care.
type Ending int

const (
	// Exited: the process ended on its own, or a probe, the watchdog or the kernel
	// killed it. Its exit code and length decide.
	Exited Ending = iota
	// DeadlineExceeded: its stop sequence ended a run longer than max_run_ms. It
	// counts as a failure whatever its code and length.
	DeadlineExceeded
	// StoppedToRestart: its stop sequence ended a run that starts again (tend
	// restart, memory_restart): at once, with the backoff forgotten.
	StoppedToRestart
)

// Run is one run that has ended.
type Run struct {
	Ending  Ending
	Success bool          // exit code 0 (Exited)
	Ran     time.Duration // from its start to its exit
}

// Verdict is what follows a run.
type Verdict int

const (
	Restart  Verdict = iota // start again after Decision.Delay
	Finished                // not restarted: completed
	GiveUp                  // max_failures short runs in a row: failed until started again
)

func (v Verdict) String() string {
	switch v {
	case Restart:
		return "restart"
	case Finished:
		return "finished"
	case GiveUp:
		return "give up"
	}
	return "unknown verdict"
}

// Decision is what follows a run, and the history the next decision starts from.
type Decision struct {
	Verdict Verdict
	Delay   time.Duration // before the restart (Restart)
	Fails   int           // consecutive short runs counted after this one
}

// Decide answers "this run ended like this: what now?" for a container of rules r
// whose earlier runs ended fails short runs in a row. rnd returns a uniform float in
// [0, 1) for the backoff's jitter. A finished run leaves the count as it was: a start
// that follows (a request, a schedule, depends_on) counts from zero anyway.
func Decide(r Rules, run Run, fails int, rnd func() float64) Decision {
	switch run.Ending {
	case StoppedToRestart:
		return Decision{Verdict: Restart, Fails: 0}
	case DeadlineExceeded:
		if !spec.RestartModeOf(r.Mode).AfterFailure {
			return Decision{Verdict: Finished, Fails: fails}
		}
		return r.restartOrGiveUp(fails+1, rnd)
	}
	m := spec.RestartModeOf(r.Mode)
	if run.Success && !m.AfterSuccess || !run.Success && !m.AfterFailure {
		return Decision{Verdict: Finished, Fails: fails}
	}
	return r.restartOrGiveUp(r.Backoff.Fails(fails, run.Ran), rnd)
}

// restartOrGiveUp follows a run that the mode restarts, fails being the updated
// count of short runs in a row: given up at max_failures, else a restart after the
// backoff (none after a stable run).
func (r Rules) restartOrGiveUp(fails int, rnd func() float64) Decision {
	if r.MaxFailures > 0 && fails >= r.MaxFailures {
		return Decision{Verdict: GiveUp, Fails: fails}
	}
	return Decision{Verdict: Restart, Delay: r.Backoff.Delay(fails, rnd), Fails: fails}
}

// DeadlineCode is the exit code recorded for a run stopped at its deadline: a
// failure, so 1 when it exited with 0 (a job's exit code must say it failed).
func DeadlineCode(code int) int {
	if code == 0 {
		return 1
	}
	return code
}
