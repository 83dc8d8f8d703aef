package container

import (
	"time"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// A container with a schedule (docs/reference.md "Schedules") does not start with
// the instance: it waits, and its schedule's timer begins a run at each scheduled
// time. Its restart mode (never or on_failure) ends each run; a time that comes
// while a run is going is skipped. The timer is the loop's like every other, and
// onSchedule switches on the state.

// scheduledMessage is the ready condition's message of a container waiting for its
// schedule: it counts as ready (nothing is wrong), as it does while it runs.
const scheduledMessage = "waiting for its schedule"

// armSchedule parses the spec's schedule and sets its timer for the first time.
func (l *loop) armSchedule() {
	if l.sc.Schedule == "" {
		return
	}
	s, err := spec.ParseSchedule(l.sc.Schedule)
	if err != nil {
		// spec.Load refuses such a spec: never here.
		l.log.Error().Err(err).Msg("schedule ignored")
		return
	}
	l.sched = s
	if l.state == stateWaiting && !l.cfg.Held {
		l.st.Ready.Set(true, status.ReasonScheduled, scheduledMessage, time.Now())
	}
	l.setSchedule(s.Next(time.Now()))
	l.publish()
}

// setSchedule sets the schedule's timer for the scheduled time due; a zero due (the
// schedule has no next time, which spec.ParseSchedule refuses at load) sets none.
func (l *loop) setSchedule(due time.Time) {
	l.stopSchedule()
	l.schedDue = due
	if due.IsZero() {
		return
	}
	l.schedTime = time.NewTimer(time.Until(due))
	l.schedC = l.schedTime.C
}

func (l *loop) stopSchedule() {
	if l.schedTime != nil {
		l.schedTime.Stop()
		l.schedTime, l.schedC = nil, nil
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

// showSchedule shows the next scheduled time as next_start_at in the snapshot st,
// unless a backoff's restart comes first or the container is stopped.
func (l *loop) showSchedule(st *status.Container) {
	if l.sched == nil || l.schedTime == nil || st.NextStartAt != nil {
		return
	}
	switch l.state {
	case stateStopped, stateShuttingDown:
	default:
		st.NextStartAt = status.Ptr(l.schedDue)
	}
}
