package container

import (
	"time"

	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// A container with a schedule (docs/reference.md "Schedules") does not start with
// the instance: it waits, and its schedule's timer begins a run at each scheduled
// time. Its restart mode (never or on_failure) ends each run; a time that comes
// while a run is going is skipped. The timer is the loop's like every other, and
// onSchedule (events.go) switches on the state.

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
