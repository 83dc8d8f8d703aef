package container

import (
	"time"

	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// onCommand handles a command; it reports whether the loop is finished.
func (l *loop) onCommand(cmd command) bool {
	switch cmd.kind {
	case cmdSignal:
		if l.proc != nil {
			_ = l.proc.Signal(cmd.signal)
		}
	case cmdShutdown:
		return l.beginStop(cmd.op, finish)
	case cmdStop:
		l.st.TargetState = spec.TargetRemoved
		if cmd.request {
			l.st.StoppedByRequest = true
		}
		return l.beginStop(StopOp{}, stayStopped)
	case cmdStart:
		l.st.TargetState = spec.TargetActive
		l.st.StoppedByRequest = false
		l.onStart()
		l.publish()
	case cmdRestart:
		l.st.TargetState = spec.TargetActive
		l.st.StoppedByRequest = false
		if l.state == status.Running {
			return l.beginStop(StopOp{}, startAgain)
		}
		l.onRestart()
		l.publish()
	case cmdHold:
		l.onHold(cmd.waitingFor)
	case cmdProceed:
		if l.state == status.Waiting {
			l.st.WaitingFor = []string{}
			l.begin()
		}
	case cmdFail:
		if l.state == status.Waiting {
			l.st.WaitingFor = []string{}
			l.fail("DependencyFailed", cmd.reason)
		}
	}
	return false
}

// onHold makes the container wait for its depends_on conditions.
func (l *loop) onHold(waitingFor []string) {
	switch l.state {
	case status.Stopped, status.Completed, status.Failed:
		l.st.TargetState = spec.TargetActive
		l.st.StoppedByRequest = false
		l.fails = 0
		l.st.Ready.Set(false, "Waiting", "waiting for its depends_on conditions", time.Now())
		l.st.WaitingFor = waitingFor
		l.setState(status.Waiting)
	case status.Waiting:
		l.st.WaitingFor = waitingFor
		l.publish()
	}
}

// fail ends the container's runs until it is started again: a restart limit gave up
// or a dependency can no longer meet its condition.
func (l *loop) fail(reason, message string) {
	now := time.Now()
	l.st.Alive.Set(false, reason, message, now)
	l.st.Ready.Set(false, reason, message, now)
	l.log.Warn().Str("reason", message).Msg("failed")
	l.setState(status.Failed)
}

// onStart starts a container that is not running; a requested start is a fresh
// start: the backoff of earlier crashes does not carry over.
func (l *loop) onStart() {
	switch l.state {
	case status.Stopping:
		if l.then.next == stayStopped {
			l.then.next = startAgain
		}
	case status.Stopped, status.Completed, status.Failed:
		l.fails = 0
		l.begin()
	case status.Backoff:
		l.fails = 0
		l.stopTimer()
		l.startProcess()
	default:
		// Running, initializing or waiting: started already (or about to).
	}
}

// onRestart is a restart of a container that is not running: as a start, and a
// stop in progress (not a shutdown) starts it again when it ends.
func (l *loop) onRestart() {
	switch l.state {
	case status.Stopping:
		if l.then.next != finish {
			l.then.next = startAgain
		}
	case status.Stopped, status.Completed, status.Failed, status.Waiting:
		l.fails = 0
		l.st.WaitingFor = []string{}
		l.begin()
	case status.Backoff:
		l.fails = 0 // a fresh start, as after restarting a running container
		l.stopTimer()
		l.startProcess()
	default:
		// Initializing or waiting: it is about to start anyway.
	}
}

// beginStop starts the stop sequence for op, followed by next. A stop already in
// progress goes on (a later Kill still applies); without a running process nothing
// is signalled. It reports whether the loop is finished.
func (l *loop) beginStop(op StopOp, next after) bool {
	if l.then.next == finish && l.state == status.Stopping {
		next = finish // a Shutdown in progress is never undone
	}
	if l.state == status.Stopping {
		l.joinStop(op, next)
		return false
	}
	l.stopTimer()
	if l.initCancel != nil {
		l.initCancel()
		l.initCancel, l.initDone = nil, nil
	}
	l.stopHealth()
	l.st.NextStartAt = nil
	l.st.Ready.Set(false, "Stopping", "", time.Now())
	l.then = then{next: next}
	var destroy *spec.Policy
	if op.Destroy {
		destroy = l.sc.DestroyPolicy
	}
	if l.proc == nil && destroy == nil {
		// Nothing to signal: an IGNORE container has reached its TERM at once. A WAIT
		// container is not counted by the barrier, so it must not arrive: that would
		// open the barrier before an IGNORE container still in its handler.
		if l.sc.TermBarrier != spec.BarrierWait {
			arriveAll(op.Barriers)
		}
		return l.finishStop()
	}
	l.stop = newStopRun(l, op, destroy)
	l.setState(status.Stopping)
	go l.stop.run()
	return false
}

// joinStop makes the stop in progress part of op too: it arrives at op's barrier,
// op's kill applies to it, and op's destroy runs after it if it has none.
func (l *loop) joinStop(op StopOp, next after) {
	l.then.next = next
	for _, b := range op.Barriers {
		l.stop.addBarrier(b)
	}
	l.stop.addKill(op.Kill)
	if op.Destroy && l.stop.destroy == nil && l.sc.DestroyPolicy != nil && l.then.destroy == nil {
		// The running sequence has joined op's barrier: the destroy must not
		// arrive again.
		op.Barriers = nil
		l.then.destroy = &op
	}
}

// onStopEvent tracks the stop sequence; it reports whether the loop is finished.
func (l *loop) onStopEvent(ev stopEvent) bool {
	if l.state != status.Stopping || ev.run != l.stop {
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
	l.stop = nil
	l.st.StopStep = ""
	if op := l.then.destroy; op != nil {
		l.then.destroy = nil
		l.stop = newStopRun(l, *op, l.sc.DestroyPolicy)
		go l.stop.run()
		return false
	}
	return l.finishStop()
}

// finishStop moves to the state after a stop; it reports whether the loop is finished.
func (l *loop) finishStop() bool {
	now := time.Now()
	if l.proc == nil {
		l.st.Alive.Set(false, "Stopped", "", now)
	}
	switch l.then.next {
	case finish:
		l.st.Ready.Set(false, "Stopped", "", now)
		l.setState(status.Stopped)
		return true
	case startAgain:
		l.st.TargetState = spec.TargetActive
		l.fails = 0
		l.begin()
		return false
	case afterDeadline:
		l.deadlineExit()
		return false
	default:
		reason, msg := removedReason(l.st)
		l.st.Ready.Set(true, reason, msg, now)
		l.setState(status.Stopped)
		return false
	}
}
