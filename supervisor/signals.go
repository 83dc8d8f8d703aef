package supervisor

import (
	"os"
	"syscall"
)

// Signals (docs/reference.md "PID 1", "Stop sequence"): the first SIGTERM or SIGINT stops the
// instance, a second one kills everything at once (destroy policies do not run);
// SIGHUP reloads, queued while preparing; SIGUSR1 and SIGUSR2 go to every running
// container. The rule is here; the phases' loops only act on what it answers.

// phase is what the instance is doing when a signal arrives.
type phase int

const (
	phasePreparing phase = iota // resources and init containers
	phaseRunning                // the containers run (supervise)
	phaseStopping               // the shutdown's stop sequences run
)

// signalAction is what a signal asks of the phase's loop.
type signalAction int

const (
	signalNone   signalAction = iota // handled here, or nothing to do in this phase
	signalStop                       // stop the instance
	signalKill                       // kill everything at once
	signalReload                     // reload the spec (queue it while preparing)
)

// onSignal applies the rule to sig in phase ph: it logs, forwards what goes to the
// containers, and returns what the phase's loop must do.
func (sv *Supervisor) onSignal(ph phase, sig os.Signal) signalAction {
	switch sig {
	case syscall.SIGTERM, syscall.SIGINT:
		switch ph {
		case phasePreparing:
			sv.log.Info().Str("signal", sig.String()).Msg("shutdown requested while preparing")
			return signalStop
		case phaseRunning:
			sv.log.Info().Str("signal", sig.String()).Msg("shutdown requested")
			return signalStop
		case phaseStopping:
			sv.log.Warn().Str("signal", sig.String()).Msg("second signal: killing everything now")
			return signalKill
		}
	case syscall.SIGHUP:
		switch ph {
		case phasePreparing:
			sv.log.Info().Msg("reload queued until preparing ends")
			return signalReload
		case phaseRunning:
			return signalReload
		}
	case syscall.SIGUSR1, syscall.SIGUSR2:
		if ph == phaseRunning {
			for _, c := range sv.current() {
				c.Signal(sig.(syscall.Signal))
			}
		}
	}
	return signalNone
}
