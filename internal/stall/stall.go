// Package stall tells a timer that fired on time from one that fired late because
// tend itself was frozen: SIGSTOP, a paused VM, a container checkpointed and
// restored, a monotonic clock that jumped. While tend is frozen its containers run
// on: a WATCHDOG=1 waits on the notify socket, an exec check's child exits unreaped.
// On resume every expired timer fires at once, in no particular order with those
// inputs, so a timer that fired late must not judge anything: it starts a fresh
// period instead, as systemd's do after a suspend, and the inputs are read meanwhile.
package stall

import "time"

// Tolerance is how late a timer may fire and still count as on time. Go's timers are
// late by well under a millisecond, and by tens of milliseconds on a machine under
// load; a timer a quarter of a second late means tend did not run for that long.
// It is a fixed bound, not a share of the period: a freeze that ends a little after
// a long watchdog period was due leaves as much input unread as one after a short
// one. A false alarm costs a check or a watchdog one more period, no more.
const Tolerance = 250 * time.Millisecond

// Late reports whether a timer due at due that fired at now (both read from Go's
// monotonic clock, time.Now) fired so late that tend was frozen meanwhile.
func Late(due, now time.Time) bool {
	return now.Sub(due) > Tolerance
}

// Timer is a time.Timer that remembers when it is due, to tell whether it fired
// late. It is not safe for concurrent use, as its owner's loop needs none.
type Timer struct {
	*time.Timer
	due time.Time
}

// NewTimer starts a Timer that fires after d.
func NewTimer(d time.Duration) *Timer {
	return &Timer{Timer: time.NewTimer(d), due: time.Now().Add(d)}
}

// Reset makes t fire d from now.
func (t *Timer) Reset(d time.Duration) {
	t.due = time.Now().Add(d)
	t.Timer.Reset(d)
}

// FiredLate reports, once t's channel fired, whether it fired so late that tend
// was frozen meanwhile: whatever it guards must be given a fresh period, not judged.
func (t *Timer) FiredLate() bool {
	return Late(t.due, time.Now())
}
