package container

import (
	"fmt"
	"syscall"
	"time"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Every event of the loop is handled here, each by a switch on the loop's state;
// an event that came too late for the state (a timer of a backoff a command ended, a
// probe result of an earlier run) is ignored. Handlers that can end the loop report
// whether it has ended.

// onCommand handles a command of the supervisor or the API.
func (l *loop) onCommand(cmd *command) bool {
	switch cmd.kind {
	case cmdSignal:
		if l.proc != nil {
			_ = l.proc.Signal(cmd.signal)
		}
	case cmdShutdown:
		return l.beginStop(cmd.op, stateShuttingDown)
	case cmdStop:
		l.st.TargetState = spec.TargetRemoved
		if cmd.request {
			l.st.StoppedByRequest = true
			l.record(status.Normal, status.ReasonStoppedByRequest, "tend stop")
		}
		return l.beginStop(StopOp{}, stateStopping)
	case cmdStart:
		if cmd.request {
			l.record(status.Normal, status.ReasonStartedByRequest, "tend start")
		}
		l.st.TargetState = spec.TargetActive
		l.st.StoppedByRequest = false
		l.onStart()
		l.publish()
	case cmdRestart:
		l.record(status.Normal, status.ReasonRestartedByRequest, "tend restart") // only the API restarts
		l.st.TargetState = spec.TargetActive
		l.st.StoppedByRequest = false
		return l.onRestart()
	case cmdHold:
		l.onHold(cmd.waitingFor)
	case cmdProceed:
		l.onProceed()
	case cmdFail:
		l.onFail(cmd.reason)
	case cmdUpdate:
		cmd.reply <- l.onUpdate(cmd.update)
	case cmdKillStop:
		l.onKillStop(cmd.stop)
	}
	return false
}

// onKillStop takes a kill request for the plain stop sequence r (newPlainStop).
func (l *loop) onKillStop(r *stopRun) {
	if l.stop == r { // else a request for a sequence that has ended
		l.plainKill()
	}
}

// onUpdate rolls out the changed spec of next (Update) start first in a running
// container and reports whether it did. During an update (a new process starting, or
// the old one draining) it queues the spec, which rolls out start first once that
// update ends (rollQueued): the running version keeps serving. In any other state
// (not running, or a stop in progress) the supervisor replaces the container
// stop-first.
func (l *loop) onUpdate(next *Container) bool {
	switch l.state {
	case stateRunning:
		l.queued = nil
		prev := l.specState()
		l.record(status.Normal, status.ReasonUpdating, "reload: starting the changed spec beside the running process")
		l.useSpec(updatedSpec(l.cfg, next))
		l.initialized = false // the new spec's init commands run before its process
		l.beginRollout(&prev)
		return true
	case stateRollout, stateRetiring:
		s := updatedSpec(l.cfg, next)
		l.queued = &s
		l.c.spec.Store(s.sc) // a later reload compares with the spec that will run
		l.record(status.Normal, status.ReasonUpdating, "reload: the changed spec starts beside the running process once the update in progress ends")
		l.publish()
		return true
	default:
		return false
	}
}

// onStart starts a container that is not running; a requested start is a fresh
// start: the backoff of earlier crashes does not carry over.
func (l *loop) onStart() {
	switch l.state {
	case stateStopping:
		l.setState(stateRestarting)
	case stateStopped, stateCompleted, stateFailed:
		l.fails = 0
		l.begin()
	case stateBackoff:
		l.fails = 0
		l.stopTimer()
		l.startProcess()
	case stateWaiting:
		if l.sched != nil && len(l.st.WaitingFor) == 0 {
			// Waiting for its schedule: a requested start runs it now, once; the
			// schedule goes on as it was.
			l.fails = 0
			l.begin()
		}
		// Else waiting for its depends_on conditions: it begins when they hold.
	default:
		// Running or initializing: started already (or about to). A stop that
		// restarts, shuts down or ends a deadline goes on as it is.
	}
}

// onRestart stops a running container and starts it again; one that is not running
// starts as by onStart, and a stop in progress (not a shutdown) starts it again when
// it ends.
func (l *loop) onRestart() bool {
	switch l.state {
	case stateRunning:
		if l.sc.Update == spec.UpdateStartFirst {
			l.beginRollout(nil)
			return false
		}
		return l.beginStop(StopOp{}, stateRestarting)
	case stateStopping, stateDeadlineStopping:
		l.setState(stateRestarting)
	case stateStopped, stateCompleted, stateFailed, stateWaiting:
		l.fails = 0
		l.st.WaitingFor = []string{}
		l.begin()
	case stateBackoff:
		l.fails = 0 // a fresh start, as after restarting a running container
		l.stopTimer()
		l.startProcess()
	default:
		// Initializing: it is about to start anyway. Restarting or shutting down:
		// a shutdown in progress is never undone.
	}
	l.publish()
	return false
}

// onHold makes the container wait for its depends_on conditions.
func (l *loop) onHold(waitingFor []string) {
	switch l.state {
	case stateStopped, stateCompleted, stateFailed:
		l.st.TargetState = spec.TargetActive
		l.st.StoppedByRequest = false
		l.fails = 0
		l.st.Ready.Set(false, status.ReasonWaiting, "waiting for its depends_on conditions", time.Now())
		l.st.WaitingFor = waitingFor
		l.setState(stateWaiting)
	case stateWaiting:
		l.st.WaitingFor = waitingFor
		l.publish()
	default:
		// Started already: its conditions held.
	}
}

// onProceed begins a waiting container: its depends_on conditions hold.
func (l *loop) onProceed() {
	switch l.state {
	case stateWaiting:
		if l.sched != nil {
			// A scheduled container begins at its next time (schedule.go). Only a
			// change publishes: every publication runs the supervisor's gate, which
			// proceeds a waiting container whose conditions hold, so publishing a
			// proceed that changed nothing spun a core until the first run.
			changed := len(l.st.WaitingFor) > 0
			l.st.WaitingFor = []string{}
			if l.st.Ready.Set(true, status.ReasonScheduled, scheduledMessage, time.Now()) || changed {
				l.publish()
			}
			return
		}
		l.st.WaitingFor = []string{}
		l.begin()
	default:
		// Started or stopped meanwhile.
	}
}

// onFail fails a waiting container: a depends_on condition can no longer hold.
func (l *loop) onFail(reason string) {
	switch l.state {
	case stateWaiting:
		l.st.WaitingFor = []string{}
		l.fail(status.ReasonDependencyFailed, reason)
	default:
		// Started or stopped meanwhile.
	}
}

// onInitDone takes the result of the init commands.
func (l *loop) onInitDone(err error) {
	l.initDone, l.initCancel = nil, nil
	switch l.state {
	case stateInitializing, stateRollout:
		if err != nil {
			return // cancelled: only a stop or a rollback cancels them, and moves the state on
		}
		l.initialized = true
		l.log.Info().Msg("init commands done")
		l.startProcess()
	default:
		// A stop cancelled the init commands and already moved the state on.
	}
}

// onTimer ends a backoff, or the term_timeout_ms of a plain stop sequence.
func (l *loop) onTimer() {
	l.timerC = nil
	switch l.state {
	case stateBackoff:
		l.startProcess()
	case stateStopping, stateRestarting, stateShuttingDown, stateDeadlineStopping:
		if l.stop != nil && l.stop.inLoop {
			l.plainKill()
		}
	case stateRollout:
		l.rolloutTimedOut()
	default:
		// A timer of a backoff that a command or a stop already ended.
	}
}

// onSchedule handles a scheduled time: a run begins, unless one is going (skipped,
// with an event) or the container is stopped (by request or target_state) or
// shutting down, whose stop a schedule never undoes.
func (l *loop) onSchedule(now time.Time) {
	l.schedC = nil
	var going bool
	switch l.state {
	case stateWaiting, stateCompleted, stateFailed:
		going = len(l.st.WaitingFor) > 0 // still waiting for its depends_on conditions
	case stateInitializing, stateRunning, stateBackoff, stateStopping, stateRestarting, stateDeadlineStopping:
		going = true
	case stateStopped, stateShuttingDown:
		l.setSchedule(l.sched.Next(now))
		l.publish()
		return
	}
	due := l.schedDue
	f := restart.AtTimer(l.sched, due, now, going)
	l.setSchedule(f.Next)
	switch {
	case f.Skip:
		l.recordf(status.Warning, status.ReasonScheduleSkipped, "the run of %s was skipped: the last one is still %s", due.Format(time.DateTime), l.st.State)
		l.publish()
	case f.Start:
		l.fails = 0
		l.st.WaitingFor = []string{}
		l.begin()
		l.publish()
	default:
		l.publish() // the wall clock went back: waiting for the same time
	}
}

// onExit handles the end of the running process; the exit ends a plain stop sequence
// (stopPlain), which may end the loop.
func (l *loop) onExit() bool {
	p := l.proc
	e := p.Exit()
	ran := time.Since(l.startedAt)
	// What the process left in its group is dead already (Container.exited).
	l.proc, l.procDone = nil, nil
	l.st.Pid = nil
	l.stopHealth()
	if l.usageRunEnd(e.Signal == syscall.SIGKILL) {
		l.killReason = status.ExitOOMKilled // the kernel's kill, whoever else meant to
	}
	switch l.state {
	case stateStopping, stateRestarting, stateShuttingDown, stateDeadlineStopping:
		// Record the exit; the stop sequence sees it too and finishes. A stop tend
		// began for a reason of its own (memory_restart) says so.
		l.recordExit(e, l.killReason)
		l.log.Info().Str("exit", string(l.st.LastExit.Reason)).Int("code", l.st.LastExit.Code).Dur("ran_ms", ran).Msg("exited while stopping")
		now := time.Now()
		l.st.Alive.Set(false, status.ReasonStopped, "", now)
		l.st.Ready.Set(false, status.ReasonStopping, "", now)
		if l.stop != nil && l.stop.inLoop {
			return l.stopEnded()
		}
		l.publish()
	case stateRollout:
		l.rollback(e) // the new process failed: the old one goes on
	case stateRetiring:
		l.dropOld() // it was on its way out; the new one's exit decides
		l.afterExit(e, ran)
	default:
		l.afterExit(e, ran)
	}
	return false
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
		if l.proc == nil {
			l.setState(stateInitializing) // a plain start now: the process follows its init commands
			return
		}
		l.setState(stateRunning)
	default:
		l.publish()
	}
}

// onSampled takes the sample the sampler announced: a function of its own, so that
// the sample is in its frame, not in that of the loop's select (Container.Sample).
func (l *loop) onSampled() {
	s, ok := l.c.takeSample()
	if !ok {
		return
	}
	l.onSample(s)
	if s.Taken != nil {
		s.Taken()
	}
}

// onSample takes a usage sample of the sampler: shown while a run's process lives;
// memory_restart applies only to a running one (a stop is on its way already).
func (l *loop) onSample(s Sample) {
	switch l.state {
	case stateRunning, stateStopping, stateRestarting, stateShuttingDown, stateDeadlineStopping:
		if l.proc == nil || s.Pid != l.proc.Pid() {
			return // a sample of an earlier run
		}
	default:
		return // no process: the exit showed the run as ended
	}
	if l.takeSample(s) && l.state == stateRunning && l.killReason == "" {
		l.memoryRestart()
	}
}

// onProbe takes a result of a polled probe of the current run.
func (l *loop) onProbe(ev probes.Event) {
	switch l.state {
	case stateRunning, stateRollout, stateRetiring:
		if ev.Run != l.runID {
			return // a late result of an earlier run
		}
	default:
		return // probes already stopped
	}
	l.recordProbe(ev)
	if ev.Kind == probes.Startup {
		l.onStartupProbe(ev)
		l.rolloutProgress()
		return
	}
	// Publish only what changed: checks pass many times a second across an
	// instance, and every publication makes the supervisor look at every container.
	changed := false
	switch ev.Kind {
	case probes.Liveness:
		changed = l.onLiveness(ev)
	case probes.Readiness:
		changed = l.onReadiness(ev)
	}
	if changed {
		l.publish()
	}
	l.rolloutProgress()
}

// onStartupProbe takes a startup probe's result (onProbe checked the state).
func (l *loop) onStartupProbe(ev probes.Event) {
	switch {
	case l.health.startupPassed:
	case ev.Healthy:
		l.startupPassed("probe")
	case ev.Failed && l.killReason == "":
		l.kill("startup probe failed: " + ev.Result.Message())
	}
}

// onLiveness records a liveness result (onProbe checked the state); after
// failure_threshold failures in a row (ev.Failed) the process group is SIGKILLed and
// restarted by the policy.
func (l *loop) onLiveness(ev probes.Event) bool {
	now := time.Now()
	if ev.Result.OK {
		return l.st.Alive.Set(true, status.ReasonRunning, "", now)
	}
	msg := "liveness probe failed: " + ev.Result.Message()
	changed := l.st.Alive.Set(false, status.ReasonLivenessProbeFailed, msg, now)
	if ev.Failed && l.killReason == "" {
		l.kill(msg)
	}
	return changed
}

// onReadiness records a readiness result (onProbe checked the state).
func (l *loop) onReadiness(ev probes.Event) bool {
	now := time.Now()
	if ev.Healthy {
		return l.st.Ready.Set(true, status.ReasonReady, "", now)
	}
	msg := "readiness probe failed"
	if ev.Result.Message() != "" {
		msg += ": " + ev.Result.Message()
	}
	return l.st.Ready.Set(false, status.ReasonReadinessProbeFailed, msg, now)
}

// onReadySignal handles READY=1, a notification newline or a matching line.
func (l *loop) onReadySignal(sig readySignal) {
	switch l.state {
	case stateRunning, stateRollout, stateRetiring:
		switch {
		case sig.run != l.runID:
			// A signal of an earlier run.
		case sig.startup:
			l.startupPassed(sig.what)
		default:
			l.becomeReady(sig.what)
		}
		l.rolloutProgress()
	default:
		// The run it is about has ended.
	}
}

// onNotify handles a datagram on the notify socket.
func (l *loop) onNotify(m notifyMsg) {
	switch l.state {
	case stateRunning, stateRollout, stateRetiring:
		if m.run == l.runID && l.believe(m) {
			l.notified(m.keys)
		}
		l.rolloutProgress()
	default:
		// The run it is about has ended.
	}
}

// notified applies the keys of a believed notify message (onNotify checked the state).
func (l *loop) notified(keys map[string]string) {
	np := notifyProbe(l.sc)
	changed := false
	if v, ok := keys["STATUS"]; ok && v != l.st.StatusText {
		l.st.StatusText = v
		changed = true
	}
	if keys["READY"] == "1" {
		if np == l.sc.StartupProbe {
			l.startupPassed("READY=1")
		} else {
			l.becomeReady("READY=1")
		}
	}
	if keys["STOPPING"] == "1" && np == l.sc.ReadinessProbe {
		l.health.readyPending = false
		changed = l.st.Ready.Set(false, status.ReasonStopping, "the process sent STOPPING=1", time.Now()) || changed
	}
	if keys["WATCHDOG"] == "1" && l.watchdog != nil {
		l.watchdog.Reset(time.Duration(l.watchdogMs()) * time.Millisecond)
	}
	if changed {
		l.publish()
	}
}

// onWatchdog kills a process whose watchdog_ms passed without a WATCHDOG=1, unless
// the timer fired late: then tend was frozen, the WATCHDOG=1s the process sent
// meanwhile wait unread on the notify socket, and a fresh period lets them be read
// before anything is judged.
func (l *loop) onWatchdog() {
	switch l.state {
	case stateRunning, stateRollout, stateRetiring:
		switch {
		case l.killReason != "":
			l.watchdogC = nil // the run is ending: nothing to watch
		case l.watchdog.FiredLate():
			l.log.Warn().Msg("the watchdog timer fired late, tend was frozen: a fresh watchdog period")
			l.watchdog.Reset(time.Duration(l.watchdogMs()) * time.Millisecond)
		default:
			l.watchdogC = nil
			l.kill(fmt.Sprintf("watchdog timeout: no WATCHDOG=1 for %d ms", l.watchdogMs()))
		}
	default:
		l.watchdogC = nil // the run has ended: nothing to watch
	}
}

// onDeadline stops a run longer than max_run_ms through the stop sequence; it counts
// as a failure whatever its length.
func (l *loop) onDeadline() bool {
	l.deadlineC = nil
	switch l.state {
	case stateRunning:
		l.log.Warn().Dur("max_run_ms", spec.Ms(l.sc.MaxRunMs)).Msg("deadline exceeded: stopping")
		l.recordf(status.Warning, status.ReasonDeadlineExceeded, "ran longer than max_run_ms (%s): stopping", spec.Ms(l.sc.MaxRunMs))
		return l.beginStop(StopOp{}, stateDeadlineStopping)
	default:
		return false // the run it was about has ended
	}
}

// onStopEvent tracks the stop sequence: a step to show, or its end.
func (l *loop) onStopEvent(ev stopEvent) bool {
	switch l.state {
	case stateStopping, stateRestarting, stateShuttingDown, stateDeadlineStopping:
		if ev.run != l.stop {
			return false // an event of a sequence that has ended
		}
	default:
		return false
	}
	if !ev.done {
		l.st.StopStep = ev.step
		l.publish()
		return false
	}
	if l.proc != nil {
		// A stop ends only after the exit; take it before the loop's own select does.
		<-l.procDone
		l.onExit()
	}
	return l.stopEnded()
}
