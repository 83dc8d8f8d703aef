package spec

import (
	"slices"
	"strconv"
	"testing"
)

// PlanStop orders dependencies after their dependents and keeps TERM barrier waits
// from closing a circle with that order.
func TestPlanStop(t *testing.T) {
	// db <- api (WAIT) and an unrelated worker: api waits for worker's TERM, not
	// db's; db's stop waits for api.
	p := PlanStop([]string{"db", "api", "worker"}, []bool{false, true, false},
		map[string][]string{"api": {"db"}})
	if !slices.Equal(p.After[0], []int{1}) || len(p.After[1]) != 0 || len(p.After[2]) != 0 {
		t.Errorf("after = %v, want db after api only", p.After)
	}
	if !slices.Equal(p.Counts[1], []int{2}) {
		t.Errorf("api's barrier counts %v, want [worker]", p.Counts[1])
	}

	// w1 (WAIT) depends on i2, d (WAIT) on i1. w1 may wait for i1's TERM, but then d
	// must not wait for i2's: i2 waits for w1 to finish, w1 for i1, i1 for d.
	names := []string{"w1", "i1", "d", "i2"}
	p = PlanStop(names, []bool{true, false, true, false}, map[string][]string{"w1": {"i2"}, "d": {"i1"}})
	if !slices.Equal(p.Counts[0], []int{1}) || len(p.Counts[2]) != 0 {
		t.Errorf("counts = %v, want w1: [i1], d: []", p.Counts)
	}
	// The whole wait graph has no cycle.
	on := make([][]int, len(names))
	for i := range on {
		on[i] = append(slices.Clone(p.After[i]), p.Counts[i]...)
	}
	for i := range names {
		for _, j := range on[i] {
			if reaches(on, j, i) {
				t.Errorf("%s and %s wait for each other", names[i], names[j])
			}
		}
	}
}

// BenchmarkPlanStop plans the stop of a thousand containers, one in ten depending on
// the one before it: a shutdown plans it before its first SIGTERM.
func BenchmarkPlanStop(b *testing.B) {
	const n = 1000
	names := make([]string, n)
	waits := make([]bool, n)
	deps := map[string][]string{}
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
		if i%10 == 9 {
			deps[names[i]] = []string{names[i-1]}
		}
	}
	waits[0] = true
	for b.Loop() {
		PlanStop(names, waits, deps)
	}
}
