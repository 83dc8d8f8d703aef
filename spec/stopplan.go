package spec

import "slices"

// The stop order (docs/reference.md "depends_on", "Stop sequence"): one rule, used by
// the supervisor when it stops containers and by `tend render --grace` when it adds
// up the longest shutdown.

// StopPlan is the order of one stop operation over its members, by index.
type StopPlan struct {
	// After[i] are the members that must have finished (destroy included) before
	// member i's stop sequence begins: those that depend on it.
	After [][]int
	// Counts[w] are the IGNORE members whose TERM the WAIT member w waits for at
	// its TERM barrier.
	Counts [][]int
}

// PlanStop orders the stop of the containers names (waits[i]: names[i] has
// term_barrier WAIT), whose depends_on are deps (name -> the names it depends on; it
// may name containers outside the stop, such as those a reload keeps running): a
// container's stop sequence begins once every member that depends on it, directly or
// through others, has finished. Each WAIT container waits for the TERM of every
// IGNORE member except its own dependencies (they stop after it) and, so that no two
// waits can close a circle, any whose stop already waits for it through the others
// (WAIT containers in the order of names claim theirs first).
func PlanStop(names []string, waits []bool, deps map[string][]string) StopPlan {
	n := len(names)
	p := StopPlan{After: make([][]int, n), Counts: make([][]int, n)}
	// on[i]: the members i waits for, to finish or to reach its TERM. Lists, not an
	// n × n matrix: a thousand containers without a depends_on made a megabyte of it
	// at every shutdown.
	on := make([][]int, n)
	index := make(map[string]int, n)
	for i, name := range names {
		index[name] = i
	}
	// Each member's dependencies, direct or through others, walked once: asking
	// dependsOn of every pair made stopping a thousand containers take a second.
	reach := make([]map[string]bool, n)
	for j, name := range names {
		reach[j] = allDependencies(deps, name)
		for d := range reach[j] {
			if i, ok := index[d]; ok && i != j {
				on[i] = append(on[i], j)
			}
		}
	}
	for i := range on {
		slices.Sort(on[i])
		p.After[i] = slices.Clone(on[i]) // in the order of names
	}
	walk := newWaitWalk(n)
	for w := range names {
		if !waits[w] {
			continue
		}
		for k := range names {
			if k == w || waits[k] || reach[w][names[k]] || walk.reaches(on, k, w) {
				continue
			}
			on[w] = append(on[w], k)
			p.Counts[w] = append(p.Counts[w], k)
		}
	}
	return p
}

// StopPlan is the plan of a shutdown of every container of s: member i is
// s.Containers[i].
func (s *Spec) StopPlan() StopPlan {
	names := make([]string, len(s.Containers))
	waits := make([]bool, len(s.Containers))
	for i := range s.Containers {
		names[i], waits[i] = s.Containers[i].Name, s.Containers[i].TermBarrier == BarrierWait
	}
	return PlanStop(names, waits, s.dependencyGraph())
}

// dependencyGraph maps each container's name to the names in its depends_on (its
// first container's, as everywhere else).
func (s *Spec) dependencyGraph() map[string][]string {
	deps := map[string][]string{}
	for name, c := range s.inSpecOrder(s.containersByName()) {
		for dep := range c.DependsOn {
			deps[name] = append(deps[name], dep)
		}
	}
	return deps
}

// dependsOn reports whether a depends on b directly or through others in deps.
func dependsOn(deps map[string][]string, a, b string) bool {
	return allDependencies(deps, a)[b]
}

// allDependencies is the set of what a depends on, directly or through others in
// deps; nil when a depends on nothing.
func allDependencies(deps map[string][]string, a string) map[string]bool {
	if len(deps[a]) == 0 {
		return nil
	}
	seen := map[string]bool{}
	stack := []string{a}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range deps[x] {
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return seen
}

// waitWalk answers reaches over and over without allocating: seen[x] == round marks
// what the current walk has seen.
type waitWalk struct {
	seen  []int
	round int
	stack []int
}

func newWaitWalk(n int) *waitWalk { return &waitWalk{seen: make([]int, n)} }

// reaches reports whether from waits, through any chain, for to.
func reaches(waits [][]int, from, to int) bool {
	return newWaitWalk(len(waits)).reaches(waits, from, to)
}

func (w *waitWalk) reaches(waits [][]int, from, to int) bool {
	w.round++
	w.stack = append(w.stack[:0], from)
	w.seen[from] = w.round
	for len(w.stack) > 0 {
		x := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		if x == to {
			return true
		}
		for _, y := range waits[x] {
			if w.seen[y] != w.round {
				w.seen[y] = w.round
				w.stack = append(w.stack, y)
			}
		}
	}
	return false
}
