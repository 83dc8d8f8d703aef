package supervisor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/revisions"
	"github.com/tend-sh/tend/spec"
)

// specReadTimeout bounds reading the spec for a reload. The read runs off the main
// loop (a file on a hung file system blocks its reader, whatever the flags); past
// this the reload fails and the stuck read is left behind.
const specReadTimeout = 10 * time.Second

// reload re-reads the spec and applies the difference (docs/reference.md "Reload"): unchanged
// containers keep running untouched, a change of target_state alone stops or starts
// the container, changed ones are stopped and started again with their init
// commands (running ones with update: start_first start the new process first, and
// are stopped only once it is ready: startFirst), removed ones are stopped and destroyed, new ones start. An invalid spec
// changes nothing and is shown in status as reload_error. The spec is read off the
// main loop, which goes on supervising meanwhile; further reloads queue.
func (sv *Supervisor) reload(req request) {
	if sv.reloading {
		sv.log.Info().Msg("reload queued behind the reload in progress")
		sv.queueRevision(req)
		return
	}
	sv.reloading = true
	path := sv.spec.Path() // the main loop is the only writer of sv.spec
	go func() { sv.reloadSteps <- sv.loadSpec(req, path) }()
}

// loadSpec runs opts.Load for a reload, for at most specReadTimeout.
func (sv *Supervisor) loadSpec(req request, path string) reloadStep {
	done := make(chan reloadStep, 1) // buffered: a late Load does not stay blocked on it
	go func() {
		next, err := sv.opts.Load()
		done <- reloadStep{loaded: true, req: req, fetched: next, err: err}
	}()
	timeout := time.NewTimer(specReadTimeout)
	defer timeout.Stop()
	select {
	case step := <-done:
		return step
	case <-timeout.C:
		return reloadStep{loaded: true, req: req, err: fmt.Errorf("%s: reading the spec took longer than %v", path, specReadTimeout)}
	case <-sv.reloadCtx.Done():
		return reloadStep{loaded: true, req: req, err: errStopping}
	}
}

// onLoaded goes on with a reload once its spec is read: an invalid one ends it,
// a valid one has its resources fetched before anything is stopped
// (docs/reference.md "Reload"), off the main loop.
func (sv *Supervisor) onLoaded(step reloadStep) {
	reply := func(err error) {
		if step.req.reply != nil {
			step.req.reply(err)
		}
	}
	if step.err != nil {
		sv.reloadFailed(step.err, "reload: the new spec is invalid; nothing changed")
		reply(step.err)
		sv.finishReload()
		return
	}
	if !step.admitted {
		ok, err := sv.admit(step.fetched, revisions.SourceFile, nil, "", step.req)
		if errors.Is(err, errInstalling) {
			return // onInstalled goes on
		}
		if !ok {
			if err != nil {
				sv.reloadFailed(err, "reload refused; nothing changed")
			}
			reply(err)
			sv.finishReload()
			return
		}
	}
	sv.switchTo(step)
}

// switchTo goes on with a reload whose revision is admitted (and installed): its
// request is answered, and what is new is fetched before anything is stopped.
func (sv *Supervisor) switchTo(step reloadStep) {
	if step.req.reply != nil {
		step.req.reply(nil)
	}
	next := step.fetched
	if why := needsPrepare(sv.spec, next); why != "" {
		sv.log.Info().Str("changed", why).Msg("the reload re-prepares the instance; fetching what is new first")
		go func() { sv.reloadSteps <- sv.stageReprepare(sv.reloadCtx, next) }()
		return
	}
	go func() {
		err := sv.reloadResources(sv.reloadCtx, next)
		sv.reloadSteps <- reloadStep{fetched: next, err: err}
	}()
}

// reloadStep is what a reload's goroutines hand back to the main loop: the spec is
// read (loaded: fetched, or err; req is the reload's request), the new spec's
// resources are in place (fetched, or err), the containers it replaces have
// stopped and list is to run (swap), or a re-prepare (reprepare.go) has staged what
// is new (reprep) or has prepared (reprep and prepared, or err).
type reloadStep struct {
	loaded    bool
	admitted  bool   // loaded: the revision was admitted already (an apply, an activation)
	installed bool   // a revision's install ended (fetched, or err); source is where it came from
	source    string // installed: revisions.SourceFile or SourceAPI
	req       request
	fetched   *spec.Spec
	err       error
	swap      []*container.Container
	reprep    *reprep
	prepared  bool
}

// onReloadStep goes on with a reload; a failed re-prepare returns how tend ends.
func (sv *Supervisor) onReloadStep(step reloadStep) *ending {
	switch {
	case step.loaded:
		sv.onLoaded(step)
	case step.installed:
		sv.onInstalled(step)
	case step.swap != nil:
		sv.swap(step.swap)
	case step.prepared:
		return sv.endReprepare(step.reprep, step.err)
	case step.reprep != nil:
		sv.beginReprepare(step.reprep)
	default:
		sv.applyReload(step.fetched, step.err)
	}
	return nil
}

// abandon drops a step that arrives during shutdown: nothing new starts now, a reload
// whose spec was just read is answered, and the containers built for the new spec
// that never ran release their log files.
func (sv *Supervisor) abandon(step reloadStep) {
	if (step.loaded || step.installed) && step.req.reply != nil {
		step.req.reply(errStopping)
	}
	running := map[*container.Container]bool{}
	for _, c := range sv.current() {
		running[c] = true
	}
	for _, c := range step.swap {
		if !running[c] {
			c.Discard()
		}
	}
	switch {
	case step.prepared:
		for _, c := range step.reprep.list {
			c.Discard()
		}
	case step.reprep != nil:
		step.reprep.static.Abandon() // staged, never to be put in place
	}
}

// reloadPlan is what a reload does to the containers.
type reloadPlan struct {
	keep, replaced, removed, added []*container.Container
	list                           []*container.Container // the status list until the replaced ones are stopped
	final                          []*container.Container // the running set afterwards, in spec order
	targets                        []func()               // target_state changes of kept containers
	// updates are replaced containers that may take their new spec start first.
	updates []update
}

// update is a changed start_first container (old) and the one built for its new
// spec (next), which replaces it only if old is not running.
type update struct{ old, next *container.Container }

// applyReload applies a loaded spec whose resources are in place.
func (sv *Supervisor) applyReload(next *spec.Spec, resErr error) {
	if resErr != nil {
		sv.installFailed(next, resErr)
		sv.reloadFailed(resErr, "reload: fetching resources failed; containers unchanged")
		sv.finishReload()
		return
	}
	plan, err := sv.planReload(next)
	if err != nil {
		sv.installFailed(next, err)
		sv.reloadFailed(err, "reload failed; containers unchanged")
		sv.finishReload()
		return
	}
	sv.log.Info().Int("unchanged", len(plan.keep)).Int("changed", len(plan.replaced)).Int("removed", len(plan.removed)).Int("added", len(plan.added)).Msg("reloading")

	prev := sv.spec
	sv.mu.Lock()
	sv.spec = next
	sv.revision = next.Revision()
	sv.reloadErr = ""
	sv.containers = plan.list
	sv.mu.Unlock()
	sv.switched(prev, next)
	// Only now, when building a later container can no longer fail the reload (a
	// failed reload changes nothing), and with the new spec's depends_on in place.
	for _, apply := range plan.targets {
		apply()
	}
	sv.startFirst(plan)
	sv.notify()
	sv.stopReplaced(plan)
	sv.saveRevisions() // once the stops have begun: a crash meanwhile restarts one revision whole either way
}

// startFirst hands each start_first update to its running container (docs/reference.md "Restarts without downtime"),
// which then keeps running, and is kept; one that is not running is replaced
// stop-first.
func (sv *Supervisor) startFirst(p *reloadPlan) {
	for _, u := range p.updates {
		if !u.old.Update(u.next) {
			sv.log.Info().Str("container", u.old.Name()).Msg("reload: update start_first of a container that is not running: replaced stop-first")
			continue
		}
		u.next.Discard()
		p.final[slices.Index(p.final, u.next)] = u.old
		p.replaced = slices.DeleteFunc(p.replaced, func(c *container.Container) bool { return c == u.old })
		p.keep = append(p.keep, u.old)
	}
}

// updatesStartFirst reports whether a reload may hand the changed spec cs to the
// running container oc (update: start_first) instead of replacing it; the log says
// why not when cs asks for it. What the new process does not take from the spec
// alone stays with the container and must not have changed: its sockets (the new
// process gets the old ones), its log file, cgroup limits and schedule.
func (sv *Supervisor) updatesStartFirst(next *spec.Spec, oc *container.Container, cs *spec.Container) bool {
	if cs.Update != spec.UpdateStartFirst || cs.TargetState != spec.TargetActive || oc.Status().StoppedByRequest {
		return false
	}
	prev := oc.Spec()
	why := ""
	switch {
	case !oc.Sockets().Same(container.NewSockets(next, cs)):
		why = "its sockets changed"
	case !reflect.DeepEqual(prev.Log, cs.Log):
		why = "its log settings changed"
	case !reflect.DeepEqual(prev.Limits, cs.Limits):
		why = "its limits changed"
	case prev.Schedule != cs.Schedule:
		why = "its schedule changed"
	default:
		return true
	}
	sv.log.Info().Str("container", cs.Name).Str("why", why).Msg("reload: update start_first is not possible: replaced stop-first")
	return false
}

// planReload compares next with the running containers and builds the new ones. On
// an error nothing has changed (what it built is discarded).
func (sv *Supervisor) planReload(next *spec.Spec) (*reloadPlan, error) {
	old := map[string]*container.Container{}
	for _, c := range sv.current() {
		old[c.Name()] = c
	}
	p := &reloadPlan{}
	for i := range next.Containers {
		cs := &next.Containers[i]
		oc := old[cs.Name]
		delete(old, cs.Name)
		if oc != nil && sameContainer(sv.spec, oc.Spec(), next, cs) {
			sv.planKeep(p, oc, cs)
			continue
		}
		if err := sv.planBuild(p, next, oc, cs); err != nil {
			p.discardBuilt()
			return nil, err
		}
	}
	for _, c := range sv.current() {
		if _, gone := old[c.Name()]; gone {
			p.removed = append(p.removed, c)
			p.list = append(p.list, c)
		}
	}
	return p, nil
}

// planKeep keeps a running container the reload does not change; only its target
// state may follow the spec.
func (sv *Supervisor) planKeep(p *reloadPlan, oc *container.Container, cs *spec.Container) {
	// A container stopped by request stays stopped whatever the spec says.
	if st := oc.Status(); !st.StoppedByRequest && st.TargetState != cs.TargetState {
		p.targets = append(p.targets, func() {
			if cs.TargetState == spec.TargetActive {
				sv.start(oc, false) // its conditions gate the start
			} else {
				oc.Retarget(cs.TargetState)
			}
		})
	}
	p.keep = append(p.keep, oc)
	p.list = append(p.list, oc)
	p.final = append(p.final, oc)
}

// planBuild builds the container of cs, new or replacing oc (nil when new): stop
// first, or start first when its update allows.
func (sv *Supervisor) planBuild(p *reloadPlan, next *spec.Spec, oc *container.Container, cs *spec.Container) error {
	// A changed container that was stopped by request is built stopped: the
	// reload updates what `tend start` will run.
	nc, err := sv.newContainer(next, cs, oc != nil && oc.Status().StoppedByRequest)
	if err != nil {
		return err
	}
	p.final = append(p.final, nc)
	if oc == nil {
		p.added = append(p.added, nc)
		return nil
	}
	if sv.updatesStartFirst(next, oc, cs) {
		p.updates = append(p.updates, update{old: oc, next: nc})
	}
	p.replaced = append(p.replaced, oc)
	p.list = append(p.list, oc)
	return nil
}

// discardBuilt closes what a failed plan built and will never run (its log files).
func (p *reloadPlan) discardBuilt() {
	for _, c := range p.final {
		if !slices.Contains(p.keep, c) {
			c.Discard()
		}
	}
}

// stopReplaced stops the changed and removed containers in reverse order of
// depends_on behind the TERM barriers (removed ones are destroyed), then hands the new
// running set to the main loop.
func (sv *Supervisor) stopReplaced(p *reloadPlan) {
	stopping := append(slices.Clone(p.replaced), p.removed...)
	if len(stopping) == 0 {
		sv.swap(p.final)
		return
	}
	sv.stopInOrder(stopping, context.Background(), func(c *container.Container) bool { return slices.Contains(p.removed, c) })
	go func() {
		for _, c := range stopping {
			<-c.Done()
		}
		closeSockets(stopping, p.final)
		sv.reloadSteps <- reloadStep{swap: p.final}
	}()
}

// swap makes list the running set, starts the containers that have not run yet, and
// takes the next queued reload.
func (sv *Supervisor) swap(list []*container.Container) {
	started := map[*container.Container]bool{}
	for _, c := range sv.current() {
		started[c] = true
	}
	// The replaced containers have ended, so the new ones can take their groups; done
	// before they are listed, so the notify actions of resources see the placement.
	for _, c := range list {
		if !started[c] {
			if err := sv.openContainerCgroup(c); err != nil {
				// `cgroups: required` ends tend at start only; a reload goes on.
				sv.log.Warn().Err(err).Msg("reload: a container without its cgroup or limits")
			}
		}
	}
	sv.mu.Lock()
	sv.containers = list
	sv.mu.Unlock()
	sv.logs.retain(sv.spec)
	for _, c := range list {
		if !started[c] {
			go c.Run(sv.runCtx)
		}
	}
	sv.notify()
	sv.gate()
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
// them starts another reload (which reads its spec off the loop and calls
// finishReload again when it ends): no request may stay queued unanswered.
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
// target_state, and depends_on, which only gates a start) and everything it inherits
// from the instance (environment, working directory) are unchanged.
func sameContainer(prevSpec *spec.Spec, prev *spec.Container, nextSpec *spec.Spec, next *spec.Container) bool {
	a, b := *prev, *next
	a.TargetState, b.TargetState = "", ""
	a.DependsOn, b.DependsOn = nil, nil
	return reflect.DeepEqual(a, b) &&
		slices.Equal(prevSpec.ContainerEnv(prev), nextSpec.ContainerEnv(next)) &&
		prevSpec.WorkDir(prev.WorkingDir) == nextSpec.WorkDir(next.WorkingDir)
}
