// Package restart decides what follows a run: given a container's restart_policy,
// how its run ended and the runs before it, restart after a delay, finished, or give
// up (Decide), and whether the containers' ends stop the instance and with what code
// (Instance). It also holds the arithmetic those decisions and every retry of tend
// use: instancectl's jittered exponential restart delay, pod_agent's time_limit
// period for probes, init commands and stop/destroy handlers, memory_restart's count,
// a schedule's firing and the longest shutdown those periods allow (grace.go). Pure
// functions of specs, counters, snapshots and an injected random source.
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
	det := grown(float64(p.MinPeriod), p.Backoff, fails-1, float64(p.MaxPeriod))
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
	return capped(float64(t.MinPeriod)+grown(float64(t.Scale), t.BackOff, step, float64(t.MaxPeriod)), t.MaxPeriod)
}

// Wait is how long to wait before the next run, given when the last one started:
// the period from its start, or nothing when the run already took longer.
func (t TimeLimit) Wait(counter int, lastStart, now time.Time) time.Duration {
	return max(0, t.Period(counter)-now.Sub(lastStart))
}

// grown is base*factor^steps (factor >= 1, as validation requires), no larger than
// limit. It never overflows: once the product would reach limit it is limit, and a
// base of 0 stays 0 however many the steps (a plain 0 * factor^1024 is 0 * +Inf,
// which is NaN).
func grown(base, factor float64, steps int, limit float64) float64 {
	if base <= 0 || steps <= 0 || factor <= 1 || base >= limit {
		return min(base, limit)
	}
	// The exponent at which the product reaches limit; at or past it the product
	// is limit, and below it factor^steps < limit/base is finite.
	if float64(steps) >= math.Log(limit/base)/math.Log(factor) {
		return limit
	}
	return min(base*math.Pow(factor, float64(steps)), limit)
}

// capped converts nanoseconds to a duration in [0, limit], also when the float has
// overflowed to +Inf or is NaN (both give limit: waiting too long is safer than
// restarting in a tight loop).
func capped(ns float64, limit time.Duration) time.Duration {
	switch {
	case math.IsNaN(ns) || ns >= float64(limit):
		return max(0, limit)
	case ns <= 0:
		return 0
	}
	return time.Duration(ns)
}
