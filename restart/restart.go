// Package restart is the math of retrying: instancectl's jittered exponential restart
// delay for containers and pod_agent's time_limit period for probes, init commands and
// stop/destroy handlers, and the longest shutdown those periods allow (grace.go). Pure
// functions of counters, specs and an injected random source.
package restart

import (
	"math"
	"time"
)

// Policy is a container's restart policy (docs/reference.md "Running").
type Policy struct {
	MinPeriod   time.Duration
	MaxPeriod   time.Duration
	Backoff     float64
	MaxJitter   time.Duration
	StableAfter time.Duration
}

// Fails returns the new count of consecutive short runs after a run that lasted ran:
// a run of at least StableAfter resets it to 0, a shorter one adds one.
func (p Policy) Fails(fails int, ran time.Duration) int {
	if ran >= p.StableAfter {
		return 0
	}
	return fails + 1
}

// Delay is the wait before the next start after a run, given the updated count of
// consecutive short runs: 0 when fails is 0 (the run was stable), else
// min(MinPeriod*Backoff^(fails-1) + U(0, MaxJitter), MaxPeriod).
// rnd returns a uniform float in [0, 1).
func (p Policy) Delay(fails int, rnd func() float64) time.Duration {
	if fails <= 0 {
		return 0
	}
	det := float64(p.MinPeriod) * math.Pow(p.Backoff, float64(fails-1))
	jitter := float64(p.MaxJitter) * rnd()
	return capped(det+jitter, p.MaxPeriod)
}

// TimeLimit is pod_agent's TTimeLimit (docs/reference.md "Fields and defaults"). MaxExecution 0 means no limit.
type TimeLimit struct {
	InitialDelay time.Duration
	MinPeriod    time.Duration
	MaxPeriod    time.Duration
	Scale        time.Duration
	BackOff      float64
	MaxExecution time.Duration
}

// Period is the time from the start of one run to the start of the next:
// min(MaxPeriod, MinPeriod + Scale*BackOff^step), step = max(0, counter-1), where
// counter is consecutive failures for stop/destroy handlers and consecutive
// successes for probes, init containers and init commands.
func (t TimeLimit) Period(counter int) time.Duration {
	step := max(0, counter-1)
	return capped(float64(t.MinPeriod)+float64(t.Scale)*math.Pow(t.BackOff, float64(step)), t.MaxPeriod)
}

// Wait is how long to wait before the next run, given when the last one started:
// the period from its start, or nothing when the run already took longer.
func (t TimeLimit) Wait(counter int, lastStart, now time.Time) time.Duration {
	return max(0, t.Period(counter)-now.Sub(lastStart))
}

// capped converts nanoseconds to a duration no larger than limit, also when the
// float has overflowed to +Inf or is NaN.
func capped(ns float64, limit time.Duration) time.Duration {
	if math.IsNaN(ns) || ns >= float64(limit) {
		return limit
	}
	return time.Duration(ns)
}
