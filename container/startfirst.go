package container

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// update: start_first (docs/reference.md "Restarts without downtime"). A restart of a running container starts the new
// process beside the old one, with the same sockets: the loop moves to rollout, the
// new process is l.proc (its probes and signals are the run's), the old one waits in
// l.ro. Once the new one is ready (its readiness probe or signal; without one, at
// once) the loop moves to retiring and the old one is stopped by its stop policy;
// its exit ends the overlap (running). A new process that exits, fails its startup
// probe or, without one, is not ready within rolloutTimeout is stopped and the old
// one goes on (running), the reason in last_exit; it is not started again.
//
// A reload that changes the container does the same (onUpdate): the loop takes the
// new spec at once, runs its init commands (l.proc is nil meanwhile, bounded by
// rolloutTimeout too) and starts the new process; the old spec waits in l.ro.prev,
// whose stop policy stops the old process, and which a rollback restores.

// rolloutTimeout bounds the wait for a new process without a startup probe.
const rolloutTimeout = 60 * time.Second

// rollout is the old process of an update in progress.
type rollout struct {
	old       *proc.Process
	oldDone   <-chan struct{} // nil when there is none: the loop's select ignores it
	startedAt time.Time
	// ready is the old process's ready condition when the rollout began: shown while
	// the new one is not ready (showRollout), kept by a rollback.
	ready  status.Condition
	retire *stopRun // the old one's stop sequence (retiring)
	// prev is the spec the old process runs when a reload changed it (onUpdate);
	// nil for a restart.
	prev *specState
}

// specState is what the container's processes start from: its spec and what
// depends on it. A start_first update swaps it, a rollback restores it.
type specState struct {
	cfg       *Config
	sc        *spec.Container
	rules     restart.Rules
	histories *[3]*probes.History
}

// specState is the spec the loop runs now.
func (l *loop) specState() specState {
	return specState{cfg: l.cfg, sc: l.sc, rules: l.rules, histories: l.c.histories.Load()}
}

// updatedSpec is what a container built for a changed spec (next) would start its
// processes from. What a reload does not hand over this way (the sockets, the log
// file, limits, the schedule) makes it replace the container stop-first instead
// (supervisor: startFirstUpdate).
func updatedSpec(cur *Config, next *Container) specState {
	cfg := *cur
	cfg.Spec, cfg.Env, cfg.Dir = next.cfg.Spec, next.cfg.Env, next.cfg.Dir
	return specState{cfg: &cfg, sc: next.cfg.Spec, rules: restart.RulesFromSpec(next.cfg.Spec.RestartPolicy), histories: next.histories.Load()}
}

// useSpec makes s the spec the loop runs, and shows it to readers (Spec, Describe).
func (l *loop) useSpec(s specState) {
	l.cfg, l.sc, l.rules = s.cfg, s.sc, s.rules
	l.c.histories.Store(s.histories)
	l.c.spec.Store(s.sc)
}

// beginRollout starts a new process beside the running one (onRestart and onUpdate
// checked the state), its init commands first when they have not run for its spec;
// prev is the old process's spec when it differs. The old one's probes stop: the
// run is the new one's from now on.
func (l *loop) beginRollout(prev *specState) {
	l.stopHealth()
	l.c.overlap.Store(true)
	l.ro = rollout{old: l.proc, oldDone: l.procDone, startedAt: l.startedAt, ready: l.st.Ready, prev: prev}
	l.proc, l.procDone = nil, nil
	l.fails = 0
	l.setState(stateRollout)
	l.log.Info().Int("old_pid", l.ro.old.Pid()).Msg("start first: starting the new process beside the old one")
	if l.initialized || len(l.sc.Init) == 0 {
		l.initialized = true
		l.startProcess()
		return
	}
	l.setTimer(rolloutTimeout) // init commands that never succeed must not hold the update
	l.startInit()
}

// rollQueued rolls out the spec a reload queued during an update (onUpdate) once
// the loop is running one process again; the loop calls it after every event. A
// container that is no longer running by then (it exited, was stopped) takes the
// queued spec for its next start; a stop or update in progress keeps it queued.
func (l *loop) rollQueued() {
	if l.queued == nil {
		return
	}
	switch l.state {
	case stateRunning:
		next := *l.queued
		l.queued = nil
		prev := l.specState()
		l.useSpec(next)
		l.initialized = false
		l.log.Info().Msg("start first: rolling out the spec of the reload that came during the last update")
		l.beginRollout(&prev)
	case stateRollout, stateRetiring, stateInitializing, stateStopping, stateRestarting, stateDeadlineStopping:
		// It rolls out, or is taken for the next start, once this ends.
	case stateShuttingDown:
		l.queued = nil
	default:
		l.useSpec(*l.queued)
		l.queued = nil
		l.initialized = false
	}
}

// showRollout shows, in the snapshot st, the old process's ready condition while
// the new one of a rollout is not ready: the old one serves meanwhile, and an
// orchestrator's readiness check must not take the instance out of service for an
// update meant to be invisible. l.st.Ready stays the new one's: it decides when the
// old one stops.
func (l *loop) showRollout(st *status.Container) {
	switch l.state {
	case stateRollout:
		if l.ro.ready.True() && !l.st.Ready.True() {
			st.Ready = l.ro.ready
		}
	default:
	}
}

// afterStart moves on once a process has started: running, or in a rollout, on to
// the old one's stop once the new one is ready.
func (l *loop) afterStart() {
	switch l.state {
	case stateRollout:
		if l.sc.StartupProbe == nil {
			l.setTimer(rolloutTimeout)
		} else {
			l.stopTimer() // of the init commands
		}
		pid := l.ro.old.Pid()
		l.st.OldPid = &pid
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
		if l.proc == nil || !l.st.Ready.True() {
			return // its init commands run, or it is not ready yet
		}
		l.stopTimer()
		l.log.Info().Int("old_pid", l.ro.old.Pid()).Msg("start first: the new process is ready; stopping the old one")
		r := l.retireRun()
		l.ro.retire = r
		l.setState(stateRetiring)
		go r.run()
	default:
		// No rollout, or the old one is stopping already.
	}
}

// retireRun is the stop sequence of the old process: by the stop policy of the spec
// it runs, which an update has replaced in the loop.
func (l *loop) retireRun() *stopRun {
	r := newStopRun(l, StopOp{}, nil)
	r.p, r.exitDone = l.ro.old, l.ro.oldDone
	if p := l.ro.prev; p != nil {
		r.policy = p.sc.StopPolicy
		r.target = probes.Target{Env: p.cfg.Env, Dir: p.cfg.Dir, Container: p.sc.Name, Ident: p.sc.Identity(), Cgroup: l.c.Placement()}
	}
	return r
}

// rolloutTimedOut stops a new process that was not ready within rolloutTimeout, or
// the init commands still running before it.
func (l *loop) rolloutTimedOut() {
	switch l.state {
	case stateRollout:
		if l.proc == nil {
			l.cancelInit()
			l.rollback(proc.Exit{Code: -1, StartErr: errors.New("its init commands did not succeed within " + rolloutTimeout.String())})
			return
		}
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
	keeps := "the old one keeps running"
	if p := l.ro.prev; p != nil {
		l.useSpec(*p)
		l.initialized = true // they ran for the old spec
		keeps += " with the old spec (a reload tries the new one again)"
	}
	l.st.LastExit.Reason = status.ExitReason("start_first: the new process failed (" + string(l.st.LastExit.Reason) + "); " + keeps)
	l.log.Warn().Str("exit", string(l.st.LastExit.Reason)).Msg("start first: keeping the old process")
	l.proc, l.procDone, l.lastProc = l.ro.old, l.ro.oldDone, l.ro.old
	l.startedAt = l.ro.startedAt
	l.st.StartedAt = status.Ptr(l.startedAt)
	pid := l.proc.Pid()
	l.st.Pid, l.st.OldPid = &pid, nil
	ready := l.ro.ready
	l.ro = rollout{}
	l.c.overlap.Store(false)
	l.killReason = ""
	l.resumeHealth(ready)
	l.setState(stateRunning)
}

// resumeHealth watches the old process again after a rollback: liveness and polled
// readiness probes; a readiness signal it sent counts still. Its notify socket and
// watchdog ended with its run, and a deadline does not start again. Its ready
// condition is the one it had (ready), until its readiness probe says otherwise.
func (l *loop) resumeHealth(ready status.Condition) {
	l.runID++
	ctx, cancel := context.WithCancel(context.Background())
	l.probeCancel = cancel
	l.health.startupPassed, l.health.readyPending = true, true
	now := time.Now()
	l.st.Alive.Set(true, status.ReasonRunning, "", now)
	l.startRunProbes(ctx)
	if ready.True() && !l.st.Ready.True() {
		l.st.Ready = ready // a polled probe starts not ready; the old process was
	}
}

// endOverlap leaves one process for a stop that comes during an update: in a
// rollout the new one, not ready yet, is killed and the old one is the container's
// again; while the old one stops, it is killed.
func (l *loop) endOverlap() {
	switch l.state {
	case stateRollout:
		l.stopHealth()
		if l.proc == nil {
			l.cancelInit()
			l.rollback(proc.Exit{Code: -1, StartErr: errors.New("a stop came during its init commands")})
			return
		}
		l.killReason = status.ExitStopBeforeReady
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
