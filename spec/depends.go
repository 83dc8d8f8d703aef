package spec

import (
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
)

// Dependency is one entry of a container's depends_on: the container Name must meet
// Condition (CondStarted, CondReady, CondSucceeded or CondCompleted).
type Dependency struct {
	Name      string
	Condition string
}

// String is "NAME: condition", as status shows it in waiting_for.
func (d Dependency) String() string { return d.Name + ": " + d.Condition }

// Dependencies lists the container's depends_on sorted by name (a mapping has no
// order worth keeping: reordering it is not a change of the container).
func (c *Container) Dependencies() []Dependency {
	deps := make([]Dependency, 0, len(c.DependsOn))
	for _, name := range sortedKeys(c.DependsOn) {
		deps = append(deps, Dependency{Name: name, Condition: c.DependsOn[name]})
	}
	return deps
}

// Dependents are the containers whose depends_on names container name, in spec order.
// On shutdown name's stop sequence begins once all of them have exited (docs/reference.md "depends_on").
func (s *Spec) Dependents(name string) []string {
	var out []string
	for i := range s.Containers {
		if _, ok := s.Containers[i].DependsOn[name]; ok && s.Containers[i].Name != name {
			out = append(out, s.Containers[i].Name)
		}
	}
	return out
}

// DependsOn reports whether container a depends on container b directly or through
// others. A WAIT container does not wait at the TERM barrier for such a b: b stops
// after it (docs/reference.md "depends_on"; StopPlan).
func (s *Spec) DependsOn(a, b string) bool { return dependsOn(s.dependencyGraph(), a, b) }

// DependencyOrder lists the containers so that each comes after every container it
// depends on, otherwise in spec order: the order of starting; shutdown goes in reverse.
// Names outside the spec are ignored; on a spec with a cycle (which Load refuses) the
// containers of the cycle come last, in spec order.
func (s *Spec) DependencyOrder() []string {
	byName := s.containersByName()
	placed := map[string]bool{}
	free := func(c *Container) bool {
		for dep := range c.DependsOn {
			if byName[dep] != nil && dep != c.Name && !placed[dep] {
				return false
			}
		}
		return true
	}
	order := make([]string, 0, len(byName))
	for len(order) < len(byName) {
		next := ""
		for name, c := range s.inSpecOrder(byName) {
			if !placed[name] && free(c) {
				next = name
				break
			}
		}
		if next == "" { // a cycle: the rest in spec order
			for name := range s.inSpecOrder(byName) {
				if !placed[name] {
					placed[name] = true
					order = append(order, name)
				}
			}
			break
		}
		placed[next] = true
		order = append(order, next)
	}
	return order
}

// inSpecOrder yields each container name once (its first container), in spec order.
func (s *Spec) inSpecOrder(byName map[string]*Container) iter.Seq2[string, *Container] {
	return func(yield func(string, *Container) bool) {
		for i := range s.Containers {
			c := &s.Containers[i]
			if byName[c.Name] == c && !yield(c.Name, c) {
				return
			}
		}
	}
}

// containersByName maps each name to its first container.
func (s *Spec) containersByName() map[string]*Container {
	m := make(map[string]*Container, len(s.Containers))
	for i := range s.Containers {
		if _, dup := m[s.Containers[i].Name]; !dup {
			m[s.Containers[i].Name] = &s.Containers[i]
		}
	}
	return m
}

// dependencies checks every container's depends_on: known names, not itself,
// known conditions, succeeded/completed only on containers that can complete, and
// no cycles (each reported once, at its first container in spec order).
func (k *checker) dependencies() {
	s := k.s
	first := map[string]int{} // name -> index of its first container
	var names []string
	for i := range s.Containers {
		if _, dup := first[s.Containers[i].Name]; !dup {
			first[s.Containers[i].Name] = i
			names = append(names, s.Containers[i].Name)
		}
	}
	inits := map[string]bool{}
	for i := range s.InitContainers {
		inits[s.InitContainers[i].Name] = true
	}
	for i := range s.Containers {
		c := &s.Containers[i]
		path := join(index("containers", i), "depends_on")
		for _, d := range c.Dependencies() {
			// The condition and the container are checked apart: one error never
			// hides the other.
			p := join(path, d.Name)
			completes := false
			switch d.Condition {
			case CondStarted, CondReady:
			case CondSucceeded, CondCompleted:
				completes = true
			default:
				k.c.addf(p, "must be %s, got %q", orList([]string{CondStarted, CondReady, CondSucceeded, CondCompleted}), d.Condition)
			}
			j, known := first[d.Name]
			switch {
			case d.Name == c.Name:
				k.c.addf(p, "a container cannot depend on itself")
			case inits[d.Name]:
				k.c.addf(p, "%q is an init container: every init container has finished before any container starts", d.Name)
			case !known:
				msg := fmt.Sprintf("unknown container %q", d.Name)
				if guess := closest(d.Name, names); guess != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", guess)
				}
				k.c.addf(p, "%s", msg)
			case completes && !s.Containers[j].RestartPolicy.Completes():
				k.c.addf(p, "%s on an always container: %s never completes (its restart_policy.mode is always; use never or on_failure, or started/ready)", d.Condition, d.Name)
			}
		}
	}
	for _, cycle := range s.cycles() {
		k.c.addf(join(index("containers", first[cycle[0]]), "depends_on"), "cycle %s", strings.Join(cycle, " -> "))
	}
}

// cycles finds the dependency cycles: one per strongly connected component that has
// one, the shortest cycle through the component's first container in spec order,
// written from it back to it (api -> db -> api). Edges to unknown names and to the
// container itself are left out (reported on their own).
func (s *Spec) cycles() [][]string {
	byName := s.containersByName()
	edges := func(name string) []string {
		var out []string
		for _, dep := range sortedKeys(byName[name].DependsOn) {
			if byName[dep] != nil && dep != name {
				out = append(out, dep)
			}
		}
		return out
	}
	position := map[string]int{}
	names := make([]string, len(s.Containers))
	for i := len(s.Containers) - 1; i >= 0; i-- {
		position[s.Containers[i].Name] = i
		names[i] = s.Containers[i].Name
	}
	comps := stronglyConnected(names, edges)

	var cycles [][]string
	for _, comp := range comps {
		sort.Slice(comp, func(i, j int) bool { return position[comp[i]] < position[comp[j]] })
		cycles = append(cycles, shortestCycle(comp[0], comp, edges))
	}
	sort.Slice(cycles, func(i, j int) bool { return position[cycles[i][0]] < position[cycles[j][0]] })
	return cycles
}

// stronglyConnected finds the strongly connected components of more than one
// vertex of the graph edges, by Tarjan's algorithm from each of names in order.
func stronglyConnected(names []string, edges func(string) []string) [][]string {
	var (
		counter  int
		order    = map[string]int{}
		low      = map[string]int{}
		onStack  = map[string]bool{}
		stack    []string
		comps    [][]string
		strongly func(v string)
	)
	strongly = func(v string) {
		order[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges(v) {
			if _, seen := order[w]; !seen {
				strongly(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], order[w])
			}
		}
		if low[v] != order[v] {
			return
		}
		var comp []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		if len(comp) > 1 {
			comps = append(comps, comp)
		}
	}
	for _, name := range names {
		if _, seen := order[name]; !seen {
			strongly(name)
		}
	}
	return comps
}

// shortestCycle is the shortest path from start back to start within comp (a
// strongly connected component, so there is one), by breadth-first search.
func shortestCycle(start string, comp []string, edges func(string) []string) []string {
	prev := map[string]string{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range edges(v) {
			if !slices.Contains(comp, w) {
				continue
			}
			if w == start {
				path := []string{start}
				for at := v; at != start; at = prev[at] {
					path = append(path, at)
				}
				path = append(path, start)
				slices.Reverse(path[1 : len(path)-1])
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start, start} // not reached for a strongly connected comp
}
