package supervisor

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/resources"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// A reload whose spec changes what preparing put in place (static resources, files,
// init containers) re-prepares the instance (docs/reference.md "Resources on reload", docs/reference.md
// "Reload"): a running process keeps the old binary or configuration it read at
// start, so swapping files under it would leave it running the old one while
// status looks healthy. The steps:
//
//  1. off the main loop, while everything runs: the new static resources are fetched
//     and verified beside the old, every from_file is read (a failure changes
//     nothing: reload_error);
//  2. on the main loop: the new containers are built (a failure changes nothing),
//     the instance becomes preparing, every container is stopped as at shutdown
//     (stop policies, TERM barriers, reverse depends_on; no destroy policies);
//  3. off the main loop, once they have all exited: the staged resources are put in
//     place, the dynamic ones follow the spec, the files are written and the init
//     containers run in order, bounded by init_timeout_ms;
//  4. on the main loop: installed, and the new containers start in depends_on order
//     with their init commands (swap).
//
// Meanwhile container requests are answered 409 (as while preparing) and reloads
// queue behind it.

// reprep is one re-prepare under way.
type reprep struct {
	next   *spec.Spec
	static *resources.StaticReload
	list   []*container.Container // the containers of next, built before anything stopped
	done   chan struct{}          // closed when step 3 has ended, however
}

// needsPrepare says what in next re-prepares the instance, or "" when nothing does.
func needsPrepare(prev, next *spec.Spec) string {
	switch {
	case !sameStatics(prev, next):
		return "resources"
	case !sameFiles(prev, next):
		return "files"
	case !sameInits(prev, next):
		return "init_containers"
	}
	return ""
}

// sameStatics compares what of the static resources is put in place: name, urls,
// checksum, extract, executable, uuid and where (check_period alone only
// re-verifies; cached and size change nothing in place).
func sameStatics(prev, next *spec.Spec) bool {
	return slices.EqualFunc(prev.Resources, next.Resources, func(a, b spec.Resource) bool {
		return a.Name == b.Name && slices.Equal(a.URLs, b.URLs) && a.Checksum == b.Checksum &&
			a.Extract == b.Extract && a.Executable == b.Executable && a.UUID == b.UUID && prev.WorkDir(a.Name) == next.WorkDir(b.Name)
	})
}

// sameFiles compares the files: sections, where they go and who owns them. A
// from_file whose content alone changed is not seen: the spec did not change.
func sameFiles(prev, next *spec.Spec) bool {
	return reflect.DeepEqual(prev.Files, next.Files) && prev.Instance.Dir == next.Instance.Dir &&
		reflect.DeepEqual(prev.Instance.Identity(), next.Instance.Identity())
}

// sameInits compares the init containers that run at activation with everything they
// inherit (those with at: install ran when their revision was installed).
func sameInits(prev, next *spec.Spec) bool {
	atActivation := func(s *spec.Spec) []spec.InitContainer {
		return slices.DeleteFunc(slices.Clone(s.InitContainers), func(ic spec.InitContainer) bool { return ic.At == spec.AtInstall })
	}
	return slices.EqualFunc(atActivation(prev), atActivation(next), func(a, b spec.InitContainer) bool {
		return reflect.DeepEqual(a, b) &&
			slices.Equal(prev.ProcessEnvAs(a.Env, a.Identity()), next.ProcessEnvAs(b.Env, b.Identity())) &&
			prev.WorkDir(a.WorkingDir) == next.WorkDir(b.WorkingDir)
	})
}

// stageReprepare is step 1, off the main loop.
func (sv *Supervisor) stageReprepare(ctx context.Context, next *spec.Spec) reloadStep {
	st, err := sv.resourceManager().StageStatic(ctx, next)
	if err == nil {
		if _, err = resources.ReadFiles(next); err != nil {
			st.Abandon()
		}
	}
	if err != nil {
		return reloadStep{fetched: next, err: err}
	}
	return reloadStep{reprep: &reprep{next: next, static: st}}
}

// beginReprepare is step 2, on the main loop.
func (sv *Supervisor) beginReprepare(rp *reprep) {
	old := sv.current()
	for i := range rp.next.Containers {
		cs := &rp.next.Containers[i]
		c, err := sv.newContainer(rp.next, cs, stoppedByRequest(old, cs.Name))
		if err != nil {
			for _, built := range rp.list {
				built.Discard()
			}
			rp.static.Abandon()
			sv.installFailed(rp.next, err)
			sv.reloadFailed(err, "reload failed; nothing changed")
			sv.finishReload()
			return
		}
		rp.list = append(rp.list, c)
	}
	sv.log.Info().Int("stopping", len(old)).Msg("re-preparing the instance")
	rp.done = make(chan struct{})
	sv.reprep = rp
	now := time.Now()
	prev := sv.spec
	sv.setInstance(status.InstancePreparing, func() {
		sv.spec = rp.next
		sv.revision = rp.next.Revision()
		sv.reloadErr = ""
		sv.installed.Set(false, status.ReasonPreparing, "", now)
		sv.inits = nil
		for _, ic := range rp.next.InitContainers {
			sv.inits = append(sv.inits, status.InitContainer{Name: ic.Name, State: status.Waiting})
		}
	})
	sv.switched(prev, rp.next)
	sv.stopInOrder(old, context.Background(), func(*container.Container) bool { return false })
	sv.saveRevisions() // before anything of rp.next is put in place
	go sv.runReprepare(rp, old)
}

// stoppedByRequest reports whether the container name of cs was stopped by `tend
// stop`: it stays stopped across the re-prepare, as across any reload.
func stoppedByRequest(cs []*container.Container, name string) bool {
	for _, c := range cs {
		if c.Name() == name {
			return c.Status().StoppedByRequest
		}
	}
	return false
}

// runReprepare is step 3, off the main loop: it waits for old to exit, puts the new
// resources and files in place and runs the init containers, then hands the result
// back. Shutdown cancels it through reloadCtx and waits for rp.done.
func (sv *Supervisor) runReprepare(rp *reprep, old []*container.Container) {
	defer close(rp.done)
	for _, c := range old {
		<-c.Done()
	}
	ctx, cancel := context.WithCancel(sv.reloadCtx)
	if t := spec.Ms(rp.next.Instance.InitTimeoutMs); t > 0 {
		ctx, cancel = context.WithTimeout(sv.reloadCtx, t)
	}
	defer cancel()
	var err error
	if err = ctx.Err(); err != nil {
		rp.static.Abandon() // shutting down: nothing new goes in place now
	} else {
		err = rp.static.Commit()
	}
	if err == nil {
		sv.resourceManager().ReloadDynamic(ctx, rp.next, nil) // nothing runs to be notified
		err = sv.prepareFiles(ctx, rp.next)
	}
	if err == nil {
		err = sv.runInitContainers(ctx, rp.next, true)
	}
	step := reloadStep{reprep: rp, prepared: true, err: err}
	select {
	case sv.reloadSteps <- step:
	case <-sv.reloadCtx.Done():
		sv.abandon(step) // the shutdown may no longer read reloadSteps
	}
}

// endReprepare is step 4, on the main loop. A failed re-prepare ends tend with exit
// code 1, as a failed first prepare does; one cut short by the shutdown ends quietly.
func (sv *Supervisor) endReprepare(rp *reprep, err error) *ending {
	sv.reprep = nil
	if err != nil {
		for _, c := range rp.list {
			c.Discard()
		}
		if errors.Is(err, context.Canceled) {
			return &ending{code: 0}
		}
		return sv.prepared(err)
	}
	sv.prepared(nil)
	sv.swap(rp.list)
	return nil
}
