package restart

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// worstPlannedStop plays the stop plan of s (spec.StopPlan, the order the supervisor
// stops in) at its worst: each container's stop begins once every container in its
// After has finished, a WAIT container's TERM comes no earlier than the TERM of every
// container in its Counts, and each part lasts as long as stopOf allows. It relaxes
// the times until nothing changes instead of following the graph, so it does not
// share LongestShutdown's walk; a plan whose waits close a circle never settles.
func worstPlannedStop(t *testing.T, s *spec.Spec) time.Duration {
	t.Helper()
	plan := s.StopPlan()
	n := len(s.Containers)
	stops := make([]containerStop, n)
	for i := range s.Containers {
		st, err := stopOf(&s.Containers[i], fmt.Sprintf("containers[%d]", i))
		if err != nil {
			t.Fatal(err)
		}
		stops[i] = st
	}
	term := make([]time.Duration, n)
	finish := make([]time.Duration, n)
	for round := 0; ; round++ {
		if round > n+1 {
			t.Fatalf("the stop plan's waits close a circle: %+v", plan)
		}
		changed := false
		for i := range n {
			var begin time.Duration
			for _, j := range plan.After[i] {
				begin = max(begin, finish[j])
			}
			at := add(begin, stops[i].untilTerm)
			if s.Containers[i].TermBarrier == spec.BarrierWait && !stops[i].signalOnly {
				for _, k := range plan.Counts[i] {
					at = max(at, term[k])
				}
			}
			end := add(add(at, stops[i].afterTerm), stops[i].destroy)
			if at != term[i] || end != finish[i] {
				term[i], finish[i], changed = at, end, true
			}
		}
		if !changed {
			break
		}
	}
	var longest time.Duration
	for _, f := range finish {
		longest = max(longest, f)
	}
	return longest
}

// checkGraceCoversPlan fails when LongestShutdown (render --grace) is shorter than
// the stop plan can take.
func checkGraceCoversPlan(t *testing.T, s *spec.Spec, what string) {
	t.Helper()
	got, err := LongestShutdown(s)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if worst := worstPlannedStop(t, s); got < worst {
		t.Errorf("%s: LongestShutdown = %v, but the stop plan can take %v", what, got, worst)
	}
}

// render --grace covers the longest stop of every example.
func TestGraceCoversStopPlanOfExamples(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*.yaml")
	paths = append(paths, "../examples/kubernetes/spec.yaml")
	if len(paths) < 5 {
		t.Fatalf("examples: %v", paths)
	}
	for _, path := range paths {
		s, err := spec.Load(path, spec.Options{Hostname: "h"})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		checkGraceCoversPlan(t, s, path)
	}
}

// render --grace covers the longest stop of random specs: depends_on DAGs with random
// term barriers, stop handlers, timings and destroy policies.
func TestGraceCoversStopPlanOfRandomSpecs(t *testing.T) {
	for seed := range uint64(400) {
		text := randomStopSpec(rand.New(rand.NewPCG(seed, 25)))
		checkGraceCoversPlan(t, loadSpec(t, text), fmt.Sprintf("seed %d:\n%s", seed, text))
	}
}

// randomStopSpec writes a spec of 1 to 8 containers, each depending on a random
// subset of the ones before it (so no cycle).
func randomStopSpec(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("containers:\n")
	n := 1 + r.IntN(8)
	for i := range n {
		fmt.Fprintf(&b, "  - name: c%d\n    command: x\n", i)
		if r.IntN(2) == 0 {
			b.WriteString("    term_barrier: WAIT\n")
		}
		var deps []string
		for j := range i {
			if r.IntN(3) == 0 {
				deps = append(deps, fmt.Sprintf("c%d: started", j))
			}
		}
		if len(deps) > 0 {
			fmt.Fprintf(&b, "    depends_on: {%s}\n", strings.Join(deps, ", "))
		}
		b.WriteString(randomStopPolicy(r))
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "    destroy_policy: {exec: {command: d}, max_tries: %d, time_limit: {min_restart_period_ms: %d, max_restart_period_ms: %d, max_execution_time_ms: %d}}\n",
				1+r.IntN(3), 100*(1+r.IntN(20)), 4000, 100*(1+r.IntN(30)))
		}
	}
	return b.String()
}

// randomStopPolicy is a stop_policy line: none, term_timeout_ms alone, an exec
// handler with wait_after_ms, or a unix_signal handler.
func randomStopPolicy(r *rand.Rand) string {
	term := 100 * r.IntN(50)
	switch r.IntN(4) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("    stop_policy: {term_timeout_ms: %d}\n", term)
	case 2:
		return fmt.Sprintf("    stop_policy: {exec: {command: s}, max_tries: %d, wait_after_ms: %d, term_timeout_ms: %d, time_limit: {initial_delay_ms: %d, min_restart_period_ms: 1000, max_restart_period_ms: 3000, max_execution_time_ms: %d}}\n",
			1+r.IntN(3), 100*r.IntN(50), term, 100*r.IntN(10), 100*(1+r.IntN(40)))
	default:
		return fmt.Sprintf("    stop_policy: {unix_signal: {signal: INT}, max_tries: %d, time_limit: {initial_delay_ms: %d, min_restart_period_ms: %d, max_restart_period_ms: 5000}}\n",
			1+r.IntN(3), 100*r.IntN(10), 100*(1+r.IntN(40)))
	}
}
