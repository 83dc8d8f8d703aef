package supervisor

import (
	"context"

	"github.com/tend-sh/tend/resources"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// resourceState is the supervisor's handle on the resources package. The pointer in
// Supervisor.res is set once, under sv.mu, when preparing starts.
type resourceState struct {
	mgr *resources.Manager
}

// resourceManager returns the manager, creating it on first use. Its background
// re-verification lives as long as supervision (sv.runCtx), not as long as the
// preparing context it is first used with.
func (sv *Supervisor) resourceManager() *resources.Manager {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.res == nil {
		opts := resources.DefaultOptions()
		opts.Log = sv.log
		opts.Changed = sv.notify
		opts.Cgroup = sv.containerCgroup
		bg := sv.runCtx
		if bg == nil {
			bg = context.Background()
		}
		sv.res = &resourceState{mgr: resources.New(bg, opts)}
	}
	return sv.res.mgr
}

// prepareResources fetches and verifies the static resources and the start-up
// revision of the dynamic ones while preparing (docs/reference.md "Preparing"), before any init
// container runs.
func (sv *Supervisor) prepareResources(ctx context.Context, s *spec.Spec) error {
	return sv.resourceManager().Prepare(ctx, s)
}

// reloadResources fetches what changed in next before any container is stopped, and
// switches dynamic resources (symlink, notify actions, verify, rollback)
// (docs/reference.md "Resources on reload"). It runs off the main loop.
func (sv *Supervisor) reloadResources(ctx context.Context, next *spec.Spec) error {
	var running []string
	for _, c := range sv.current() {
		if c.Status().State == status.Running {
			running = append(running, c.Name())
		}
	}
	return sv.resourceManager().Reload(ctx, next, running)
}

// resourceStatus fills the resources sections of the status document. It is called
// with sv.mu held. While preparing, a failing resource is why installed is False,
// so its reason becomes the condition's message.
func (sv *Supervisor) resourceStatus(doc *status.Document) {
	if sv.res == nil {
		return
	}
	doc.Resources, doc.DynamicResources = sv.res.mgr.Status()
	if doc.State == status.InstancePreparing && !doc.Installed.True() {
		if why := sv.res.mgr.Failing(); why != "" {
			doc.Installed.Reason = status.ReasonResourcesFailing
			doc.Installed.Message = why
		}
	}
}
