package supervisor

import (
	"reflect"
	"slices"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/spec"
)

// reload re-reads the spec and applies the difference (SPEC.md §3.6): unchanged
// containers keep running untouched, a change of target_state alone stops or starts
// the container, changed ones are stopped and started again with their init
// commands, removed ones are stopped and destroyed, new ones start. An invalid spec
// changes nothing and is shown in status as reload_error.
func (sv *Supervisor) reload(req request) {
	if sv.reloading {
		sv.log.Info().Msg("reload queued behind the reload in progress")
		sv.pending = append(sv.pending, req)
		return
	}
	reply := func(err error) {
		if req.reply != nil {
			req.reply(err)
		}
	}
	next, err := sv.opts.Load()
	if err != nil {
		sv.reloadFailed(err, "reload: the new spec is invalid; nothing changed")
		reply(err)
		return
	}
	// New resources are fetched before anything is stopped (SPEC.md §3.6), off the
	// main loop so that supervision goes on meanwhile; further reloads queue.
	reply(nil)
	sv.reloading = true
	go func() {
		err := sv.reloadResources(sv.reloadCtx, next)
		sv.internal <- func() { sv.applyReload(next, err) }
	}()
}

// applyReload applies a loaded spec whose resources are in place.
func (sv *Supervisor) applyReload(next *spec.Spec, resErr error) {
	if resErr != nil {
		sv.reloadFailed(resErr, "reload: fetching resources failed; containers unchanged")
		sv.finishReload()
		return
	}
	prev := sv.spec
	old := map[string]*container.Container{}
	for _, c := range sv.current() {
		old[c.Name()] = c
	}
	var keep, replaced, removed, added []*container.Container
	var list []*container.Container // the status list until the replaced ones are stopped
	var final []*container.Container
	var targets []func() // target_state changes of kept containers, applied once nothing can fail
	for i := range next.Containers {
		cs := &next.Containers[i]
		oc := old[cs.Name]
		delete(old, cs.Name)
		if oc != nil && sameContainer(prev, oc.Spec(), next, cs) {
			// A container stopped by request stays stopped whatever the spec says.
			if st := oc.Status(); !st.StoppedByRequest && st.TargetState != cs.TargetState {
				targets = append(targets, func() { oc.Retarget(cs.TargetState) })
			}
			keep = append(keep, oc)
			list = append(list, oc)
			final = append(final, oc)
			continue
		}
		// A changed container that was stopped by request is built stopped: the
		// reload updates what `tend start` will run.
		nc, err := sv.newContainer(next, cs, oc != nil && oc.Status().StoppedByRequest)
		if err != nil {
			for _, c := range final {
				if !slices.Contains(keep, c) {
					c.Discard() // built, never to run: close its log file
				}
			}
			sv.reloadFailed(err, "reload failed; containers unchanged")
			sv.finishReload()
			return
		}
		final = append(final, nc)
		if oc != nil {
			replaced = append(replaced, oc)
			list = append(list, oc)
		} else {
			added = append(added, nc)
		}
	}
	for _, c := range sv.current() {
		if _, gone := old[c.Name()]; gone {
			removed = append(removed, c)
			list = append(list, c)
		}
	}
	// Only now, when building a later container can no longer fail the reload: a
	// failed reload changes nothing.
	for _, apply := range targets {
		apply()
	}
	sv.log.Info().Int("unchanged", len(keep)).Int("changed", len(replaced)).Int("removed", len(removed)).Int("added", len(added)).Msg("reloading")

	sv.mu.Lock()
	sv.spec = next
	sv.revision = next.Revision()
	sv.reloadErr = ""
	sv.containers = list
	sv.mu.Unlock()
	sv.notify()

	stopping := append(slices.Clone(replaced), removed...)
	if len(stopping) == 0 {
		sv.swap(final)
		return
	}
	ignoring := 0
	for _, c := range stopping {
		if c.Spec().TermBarrier != spec.BarrierWait {
			ignoring++
		}
	}
	barrier := container.NewBarrier(ignoring)
	for _, c := range replaced {
		c.Shutdown(container.StopOp{Barrier: barrier})
	}
	for _, c := range removed {
		c.Shutdown(container.StopOp{Barrier: barrier, Destroy: true})
	}
	go func() {
		for _, c := range stopping {
			<-c.Done()
		}
		sv.internal <- func() { sv.swap(final) }
	}()
}

// swap makes list the running set, starts the containers that have not run yet, and
// takes the next queued reload.
func (sv *Supervisor) swap(list []*container.Container) {
	sv.mu.Lock()
	started := map[*container.Container]bool{}
	for _, c := range sv.containers {
		started[c] = true
	}
	sv.containers = list
	sv.mu.Unlock()
	for _, c := range list {
		if !started[c] {
			go c.Run(sv.runCtx)
		}
	}
	sv.notify()
	sv.log.Info().Msg("reload applied")
	sv.finishReload()
}

// reloadFailed logs why a reload changed nothing and shows it as reload_error until
// the next good reload.
func (sv *Supervisor) reloadFailed(err error, msg string) {
	sv.log.Error().Err(err).Msg(msg)
	sv.mu.Lock()
	sv.reloadErr = err.Error()
	sv.mu.Unlock()
	sv.notify()
}

// finishReload ends a reload and handles the queued requests in order until one of
// them starts another reload. A queued reload that ends at once (an invalid spec)
// calls no finishReload of its own, so the loop must go on past it: no request may
// stay queued unanswered.
func (sv *Supervisor) finishReload() {
	sv.reloading = false
	for !sv.reloading && len(sv.pending) > 0 {
		req := sv.pending[0]
		sv.pending = sv.pending[1:]
		sv.handle(req)
	}
}

// answerQueued answers queued requests that will never run: the instance is stopping
// (or failed). An API caller would otherwise wait for an answer that never comes, and
// hold tend's exit until the API server gives up on its connection.
func answerQueued(reqs []request) {
	for _, req := range reqs {
		if req.reply != nil {
			req.reply(errStopping)
		}
	}
}

// sameContainer reports whether a container needs no restart: its spec (apart from
// target_state) and everything it inherits from the instance (environment, working
// directory) are unchanged.
func sameContainer(prevSpec *spec.Spec, prev *spec.Container, nextSpec *spec.Spec, next *spec.Container) bool {
	a, b := *prev, *next
	a.TargetState, b.TargetState = "", ""
	return reflect.DeepEqual(a, b) &&
		slices.Equal(prevSpec.ProcessEnv(prev.Env), nextSpec.ProcessEnv(next.Env)) &&
		prevSpec.WorkDir(prev.WorkingDir) == nextSpec.WorkDir(next.WorkingDir)
}
