package supervisor

import (
	"context"
	"fmt"
	"slices"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// depends_on (docs/reference.md "depends_on"): the main loop starts a waiting container once its
// conditions hold, and stops containers in reverse order of their dependencies.

// dependencies are c's depends_on as the current spec says: a reload may change those
// of a container it keeps running. A container the spec no longer has keeps its own.
func (sv *Supervisor) dependencies(c *container.Container) []spec.Dependency {
	sv.mu.Lock()
	s := sv.spec
	sv.mu.Unlock()
	for i := range s.Containers {
		if s.Containers[i].Name == c.Name() {
			return s.Containers[i].Dependencies()
		}
	}
	return c.Spec().Dependencies()
}

// gate evaluates every waiting container's conditions while the instance runs: it
// begins the container when they all hold, fails it when one never can, and keeps
// its waiting_for current otherwise. A waiting container that was not held (its loop
// is about to begin it) ignores Proceed.
func (sv *Supervisor) gate() {
	sv.mu.Lock()
	running := sv.state == status.InstanceRunning
	sv.mu.Unlock()
	if !running {
		return
	}
	cs := sv.current()
	byName := containersByName(cs)
	for _, c := range cs {
		st := c.Status()
		if st.State != status.Waiting || st.TargetState != spec.TargetActive {
			continue
		}
		unmet, reason := conditions(sv.dependencies(c), byName)
		switch {
		case reason != "":
			sv.log.Warn().Str("container", c.Name()).Str("reason", reason).Msg("a dependency can no longer meet its condition")
			c.Fail(reason)
		case len(unmet) == 0:
			c.Proceed()
		case !slices.Equal(unmet, st.WaitingFor):
			// Only a change: every Hold publishes, and a publication runs gate again.
			c.Hold(unmet)
		}
	}
}

// start is `tend start` (or a reload's target_state active): a container whose
// conditions do not hold waits for them instead of starting.
func (sv *Supervisor) start(c *container.Container, byRequest bool) {
	unmet, _ := conditions(sv.dependencies(c), containersByName(sv.current()))
	switch st := c.Status().State; {
	case len(unmet) > 0 && (st == status.Stopped || st == status.Completed || st == status.Failed):
		c.Hold(unmet) // gate fails it at the next change if a condition never can hold
	case byRequest:
		c.Start()
	default:
		c.Retarget(spec.TargetActive)
	}
}

func containersByName(cs []*container.Container) map[string]*container.Container {
	m := make(map[string]*container.Container, len(cs))
	for _, c := range cs {
		m[c.Name()] = c
	}
	return m
}

// conditions returns the conditions of deps that do not hold ("db: ready"), and why
// one of them never can ("" while each still may).
func conditions(deps []spec.Dependency, byName map[string]*container.Container) (unmet []string, never string) {
	unmet = []string{}
	for _, d := range deps {
		dc := byName[d.Name]
		if dc == nil { // not running yet: a reload is swapping it in
			unmet = append(unmet, d.String())
			continue
		}
		st := dc.Status()
		if holds(d.Condition, dc, st) {
			continue
		}
		unmet = append(unmet, d.String())
		if never == "" {
			never = neverHolds(d, st)
		}
	}
	return unmet, never
}

func holds(cond string, dc *container.Container, st status.Container) bool {
	switch cond {
	case spec.CondStarted:
		return dc.HasStarted()
	case spec.CondReady:
		return st.State == status.Running && st.Ready.True()
	case spec.CondSucceeded:
		return st.State == status.Completed && st.LastExit != nil && st.LastExit.Code == 0
	case spec.CondCompleted:
		return st.State == status.Completed
	}
	return false
}

// neverHolds says why d can no longer hold ("" when it still may): its container
// failed, or completed for good without meeting it. Only a person could change that
// (`tend start` of the dependency, then of the dependent).
func neverHolds(d spec.Dependency, st status.Container) string {
	switch {
	case st.State == status.Failed:
		msg := st.Ready.Message
		if msg == "" {
			msg = string(st.Ready.Reason)
		}
		return fmt.Sprintf("dependency %s failed: %s", d.Name, msg)
	case st.State != status.Completed || st.LastExit == nil:
		return ""
	case d.Condition == spec.CondSucceeded:
		return fmt.Sprintf("dependency %s completed with exit code %d", d.Name, st.LastExit.Code)
	case d.Condition == spec.CondReady:
		return fmt.Sprintf("dependency %s completed with exit code %d and will not become ready", d.Name, st.LastExit.Code)
	}
	return ""
}

// stopInOrder stops cs in reverse order of their dependencies with the TERM barriers
// on top (spec.PlanStop, over the depends_on of the running and the stopping
// containers). kill (when done) ends every wait at once; destroy says whose
// destroy_policy runs.
func (sv *Supervisor) stopInOrder(cs []*container.Container, kill context.Context, destroy func(*container.Container) bool) {
	deps := map[string][]string{}
	for _, c := range append(sv.current(), cs...) {
		for _, d := range sv.dependencies(c) {
			deps[c.Name()] = append(deps[c.Name()], d.Name)
		}
	}
	names := make([]string, len(cs))
	waits := make([]bool, len(cs))
	for i, c := range cs {
		names[i], waits[i] = c.Name(), c.Spec().TermBarrier == spec.BarrierWait
	}
	plan := spec.PlanStop(names, waits, deps)
	barriers := make([][]*container.Barrier, len(cs))
	for w, counted := range plan.Counts {
		if !waits[w] {
			continue
		}
		b := container.NewBarrier(len(counted))
		barriers[w] = append(barriers[w], b)
		for _, k := range counted {
			barriers[k] = append(barriers[k], b)
		}
	}
	for i, c := range cs {
		op := container.StopOp{Barriers: barriers[i], Kill: kill, Destroy: destroy(c)}
		if len(plan.After[i]) == 0 {
			c.Shutdown(op)
			continue
		}
		go func() {
			for _, j := range plan.After[i] {
				select {
				case <-cs[j].Done():
				case <-kill.Done(): // a second signal: everything at once
				}
			}
			c.Shutdown(op)
		}()
	}
}
