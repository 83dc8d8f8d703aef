package restart

import (
	"time"

	"github.com/robfig/cron/v3"
)

// Firing is what a container's schedule does when its timer fires.
type Firing struct {
	Start bool      // start a run now
	Skip  bool      // a scheduled time came while a run was still going: skipped
	Next  time.Time // the scheduled time to set the timer for next
}

// AtTimer decides what the schedule s does when its timer, set for the scheduled
// time due, fires at now, with a run going or not (running): a run starts unless one
// is going (then that time is skipped), and the next time is the first one after
// now, so times missed while tend was frozen start one run, not one each. A timer
// measures elapsed time: when the wall clock was set back meanwhile it fires before
// due, and then nothing starts and the timer waits for due again.
func AtTimer(s cron.Schedule, due, now time.Time, running bool) Firing {
	if now.Before(due) {
		return Firing{Next: due}
	}
	return Firing{Start: !running, Skip: running, Next: s.Next(now)}
}
