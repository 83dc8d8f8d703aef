package container

import (
	"context"
	"syscall"
	"time"

	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/status"
)

// update: start_first (SPEC §14.2). A restart of a running container starts the new
// process beside the old one, with the same sockets: the loop moves to rollout, the
// new process is l.proc (its probes and signals are the run's), the old one waits in
// l.ro. Once the new one is ready (its readiness probe or signal; without one, at
// once) the loop moves to retiring and the old one is stopped by its stop policy;
// its exit ends the overlap (running). A new process that exits, fails its startup
// probe or, without one, is not ready within rolloutTimeout is stopped and the old
// one goes on (running), the reason in last_exit; it is not started again.

// rolloutTimeout bounds the wait for a new process without a startup probe.
const rolloutTimeout = 60 * time.Second

// rollout is the old process of an update in progress.
type rollout struct {
	old       *proc.Process
	oldDone   <-chan struct{} // nil when there is none: the loop's select ignores it
	startedAt time.Time
	retire    *stopRun // the old one's stop sequence (retiring)
}

// beginRollout starts a new process beside the running one (onRestart checked the
// state). The old one's probes stop: the run is the new one's from now on.
func (l *loop) beginRollout() {
	l.stopHealth()
	l.c.overlap.Store(true)
	l.ro = rollout{old: l.proc, oldDone: l.procDone, startedAt: l.startedAt}
	l.proc, l.procDone = nil, nil
	pid := l.ro.old.Pid()
	l.st.OldPid = &pid
	l.fails = 0
	l.setState(stateRollout)
	l.log.Info().Int("old_pid", pid).Msg("start first: starting the new process beside the old one")
	l.startProcess()
}

// afterStart moves on once a process has started: running, or in a rollout, on to
// the old one's stop once the new one is ready.
func (l *loop) afterStart() {
	switch l.state {
	case stateRollout:
		if l.sc.StartupProbe == nil {
			l.setTimer(rolloutTimeout)
		}
		l.publish()
		l.rolloutProgress()
	default:
		l.setState(stateRunning)
	}
}

// startFailed handles a process that could not start.
func (l *loop) startFailed(e proc.Exit) {
	switch l.state {
	case stateRollout:
		l.rollback(e)
	default:
		l.afterExit(e, 0)
	}
}

// rolloutProgress stops the old process once the new one is ready.
func (l *loop) rolloutProgress() {
	switch l.state {
	case stateRollout:
		if !l.st.Ready.True() {
			return
		}
		l.stopTimer()
		l.log.Info().Int("old_pid", l.ro.old.Pid()).Msg("start first: the new process is ready; stopping the old one")
		r := newStopRun(l, StopOp{}, nil)
		r.p = l.ro.old
		l.ro.retire = r
		l.setState(stateRetiring)
		go r.run()
	default:
		// No rollout, or the old one is stopping already.
	}
}

// rolloutTimedOut stops a new process that was not ready within rolloutTimeout.
func (l *loop) rolloutTimedOut() {
	switch l.state {
	case stateRollout:
		if l.killReason == "" {
			l.kill("not ready within " + rolloutTimeout.String())
		}
	default:
	}
}

// rollback keeps the old process after the new one failed with e: it is the
// running process again, with its probes; last_exit says why.
func (l *loop) rollback(e proc.Exit) {
	switch l.state {
	case stateRollout:
	default:
		return
	}
	l.stopTimer()
	l.recordExit(e, l.killReason)
	l.st.LastExit.Reason = "start_first: the new process failed (" + l.st.LastExit.Reason + "); the old one keeps running"
	l.log.Warn().Str("exit", l.st.LastExit.Reason).Msg("start first: keeping the old process")
	l.proc, l.procDone, l.lastProc = l.ro.old, l.ro.oldDone, l.ro.old
	l.startedAt = l.ro.startedAt
	l.st.StartedAt = status.Ptr(l.startedAt)
	pid := l.proc.Pid()
	l.st.Pid, l.st.OldPid = &pid, nil
	l.ro = rollout{}
	l.c.overlap.Store(false)
	l.killReason = ""
	l.resumeHealth()
	l.setState(stateRunning)
}

// resumeHealth watches the old process again after a rollback: liveness and polled
// readiness probes; a readiness signal it sent counts still. Its notify socket and
// watchdog ended with its run, and a deadline does not start again.
func (l *loop) resumeHealth() {
	l.runID++
	ctx, cancel := context.WithCancel(context.Background())
	l.probeCancel = cancel
	l.health.startupPassed, l.health.readyPending = true, true
	now := time.Now()
	l.st.Alive.Set(true, status.ReasonRunning, "", now)
	l.startRunProbes(ctx)
}

// onOldExit ends the overlap: the old process exited, stopped or on its own.
func (l *loop) onOldExit() {
	old := l.ro.old
	_ = old.SignalGroup(syscall.SIGKILL) // what it left in its group dies with it
	l.ro = rollout{}
	l.c.overlap.Store(false)
	l.st.OldPid = nil
	switch l.state {
	case stateRetiring:
		l.log.Info().Int("old_pid", old.Pid()).Str("exit", old.Exit().String()).Msg("start first: the old process stopped")
		l.setState(stateRunning)
	case stateRollout:
		l.log.Warn().Int("old_pid", old.Pid()).Str("exit", old.Exit().String()).Msg("start first: the old process exited before the new one was ready")
		l.stopTimer()
		l.setState(stateRunning)
	default:
		l.publish()
	}
}

// endOverlap leaves one process for a stop that comes during an update: in a
// rollout the new one, not ready yet, is killed and the old one is the container's
// again; while the old one stops, it is killed.
func (l *loop) endOverlap() {
	switch l.state {
	case stateRollout:
		l.stopHealth()
		l.killReason = "a stop came before it was ready"
		_ = l.proc.SignalGroup(syscall.SIGKILL)
		<-l.procDone
		l.rollback(l.proc.Exit())
	case stateRetiring:
		l.dropOld()
	default:
	}
}

// dropOld kills the old process of an update, if any, and waits for its exit.
func (l *loop) dropOld() {
	if l.ro.old == nil {
		return
	}
	_ = l.ro.old.SignalGroup(syscall.SIGKILL)
	<-l.ro.oldDone
	l.ro = rollout{}
	l.c.overlap.Store(false)
	l.st.OldPid = nil
}
