package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tend-sh/tend/resources"
	"github.com/tend-sh/tend/restart"
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
		if store := sv.rev.store; store != nil {
			opts.Stored = func(sum resources.Checksum) []string { return store.Stored(sum.String()) }
		}
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
			doc.Installed.Reason = sv.res.mgr.FailingReason()
			doc.Installed.Message = why
		}
	}
}

// prepareFiles writes the files: section (docs/reference.md "Files") before the init
// containers. A from_file that cannot be read (a secret not mounted yet) or a file
// that cannot be written keeps installed False with the reason and is tried again
// with the resources' backoff until it works or ctx ends, as a failing resource is.
func (sv *Supervisor) prepareFiles(ctx context.Context, s *spec.Spec) error {
	if len(s.Files) == 0 {
		return nil
	}
	retry := resources.DefaultOptions().Retry
	for attempt := 1; ; attempt++ {
		files, err := resources.ReadFiles(s)
		if err == nil {
			err = resources.WriteFiles(files, s.Instance.Identity())
		}
		if err == nil {
			sv.log.Info().Int("files", len(files)).Msg("files in place")
			sv.setInstance(status.InstancePreparing, func() {
				sv.installed.Set(false, status.ReasonPreparing, "", time.Now())
			})
			return nil
		}
		delay := retry.Delay(attempt, rand.Float64)
		sv.log.Warn().Err(err).Dur("retry_in_ms", delay).Msg("writing files failed")
		sv.setInstance(status.InstancePreparing, func() {
			sv.installed.Set(false, status.ReasonFilesFailing, err.Error(), time.Now())
		})
		if !restart.Sleep(ctx, delay) {
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		}
	}
}
