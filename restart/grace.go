package restart

import (
	"fmt"
	"math"
	"time"

	"github.com/tend-sh/tend/spec"
)

// GraceSlack is added to the longest shutdown so that the orchestrator's SIGKILL
// never lands while tend is still finishing: timer latency, the last report, exit.
const GraceSlack = 5 * time.Second

// Grace is the shutdown grace period an orchestrator should give tend for spec s
// (`tend render --grace`, docs/reference.md "Running on Kubernetes"): the longest
// shutdown the spec allows, in whole seconds rounded up, plus GraceSlack. An
// unbounded shutdown (a stop or destroy handler with max_execution_time_ms 0) is an
// error naming the field.
func Grace(s *spec.Spec) (time.Duration, error) {
	longest, err := LongestShutdown(s)
	if err != nil {
		return 0, err
	}
	if longest > math.MaxInt64-GraceSlack-time.Second {
		return 0, fmt.Errorf("the longest shutdown is beyond any grace period (%v)", longest)
	}
	return (longest + time.Second - 1).Truncate(time.Second) + GraceSlack, nil
}

// LongestShutdown is the longest a shutdown of s can take, the way the stop sequence
// runs (docs/reference.md "Stop sequence", "depends_on") in the order of s's stop plan
// (spec.StopPlan, which the supervisor stops by): containers stop at once, except
// that a container's stop begins only once every container in its After has finished
// (its destroy included), so times add up along depends_on chains; and a WAIT
// container's SIGTERM waits for the IGNORE containers in its Counts to reach theirs.
func LongestShutdown(s *spec.Spec) (time.Duration, error) {
	g := shutdownGraph{s: s, plan: s.StopPlan(), stops: make([]containerStop, len(s.Containers))}
	for i := range s.Containers {
		st, err := stopOf(&s.Containers[i], fmt.Sprintf("containers[%d]", i))
		if err != nil {
			return 0, err
		}
		g.stops[i] = st
	}
	g.term = make([]time.Duration, len(s.Containers))
	g.finish = make([]time.Duration, len(s.Containers))
	g.state = make([]visit, len(s.Containers))
	var longest time.Duration
	for i := range s.Containers {
		g.visit(i)
		longest = max(longest, g.finish[i])
	}
	return longest, nil
}

// shutdownGraph computes when each container's stop reaches its TERM and ends, from
// the moment the shutdown begins, along the waits of the stop plan.
type shutdownGraph struct {
	s      *spec.Spec
	plan   spec.StopPlan
	stops  []containerStop
	term   []time.Duration // when container i sends its TERM at the latest
	finish []time.Duration // when container i's stop (and destroy) has ended at the latest
	state  []visit
}

type visit uint8

const (
	unvisited visit = iota
	visiting        // on the recursion's path: only a spec with a cycle, which Load refuses, comes back to it
	visited
)

// visit computes term[i] and finish[i] once those of every container i waits for are known.
func (g *shutdownGraph) visit(i int) {
	if g.state[i] != unvisited {
		return
	}
	g.state[i] = visiting
	st := g.stops[i]
	var begin time.Duration
	for _, j := range g.plan.After[i] {
		g.visit(j)
		begin = max(begin, g.finish[j])
	}
	term := add(begin, st.untilTerm)
	if g.s.Containers[i].TermBarrier == spec.BarrierWait && !st.signalOnly {
		for _, k := range g.plan.Counts[i] {
			g.visit(k)
			term = max(term, g.term[k])
		}
	}
	g.term[i] = term
	g.finish[i] = add(add(term, st.afterTerm), st.destroy)
	g.state[i] = visited
}

// containerStop is the worst case of one container's stop sequence, in parts.
type containerStop struct {
	signalOnly bool          // a unix_signal handler: no TERM, no barrier wait
	untilTerm  time.Duration // initial delay, handler tries and wait_after_ms, until its TERM
	afterTerm  time.Duration // term_timeout_ms, or the unix_signal tries
	destroy    time.Duration // destroy_policy
}

// stopOf computes the worst case of one container's stop sequence; path names the
// container in errors.
func stopOf(c *spec.Container, path string) (containerStop, error) {
	pol := c.StopPolicy
	var st containerStop
	tl := FromSpec(pol.TimeLimit)
	tries := max(1, pol.MaxTries.Get())
	switch {
	case pol.UnixSignal != nil:
		// The signal is sent at each try, and each try waits one period for the
		// exit; SIGKILL follows the last period.
		st.signalOnly = true
		st.untilTerm = tl.InitialDelay
		st.afterTerm = sumPeriods(tl, tries, 0)
	case pol.Exec != nil || pol.HTTPGet != nil:
		d, err := handlerTries(tl, tries, path+".stop_policy")
		if err != nil {
			return st, err
		}
		st.untilTerm = add(add(tl.InitialDelay, d), spec.Ms(pol.WaitAfterMs))
		st.afterTerm = spec.Ms(pol.TermTimeoutMs)
	default:
		st.afterTerm = spec.Ms(pol.TermTimeoutMs)
	}
	if d := c.DestroyPolicy; d != nil {
		dtl := FromSpec(d.TimeLimit)
		tries, err := handlerTries(dtl, max(1, d.MaxTries.Get()), path+".destroy_policy")
		if err != nil {
			return st, err
		}
		st.destroy = add(dtl.InitialDelay, tries)
	}
	return st, nil
}

// handlerTries is the longest run of tries of an exec or http_get handler that
// fail: each try starts a period after the previous one started (the period for
// that many failures), or right after it when it ran longer, and takes up to
// max_execution_time_ms.
func handlerTries(tl TimeLimit, tries int, path string) (time.Duration, error) {
	if tl.MaxExecution <= 0 {
		return 0, fmt.Errorf("%s.time_limit.max_execution_time_ms is 0 (no limit): the shutdown has no bound", path)
	}
	return add(tl.MaxExecution, sumPeriods(tl, tries-1, tl.MaxExecution)), nil
}

// sumPeriods is the sum of max(Period(k), floor) for k = 1..n. The period never
// shrinks (back_off >= 1), and once two periods in a row are equal the rest are
// too: no loop over an absurd max_tries.
func sumPeriods(tl TimeLimit, n int, floor time.Duration) time.Duration {
	var total time.Duration
	for k := 1; k <= n; k++ {
		if k > 2 && tl.Period(k) == tl.Period(k-1) {
			return add(total, mul(max(tl.Period(k), floor), n-k+1))
		}
		total = add(total, max(tl.Period(k), floor))
	}
	return total
}

// add and mul saturate at the longest duration instead of wrapping around.
func add(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mul(d time.Duration, n int) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}
