package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// initKillTimeout bounds the kill of what an init container's run left in its cgroup.
const initKillTimeout = 5 * time.Second

// openCgroups decides where the containers' cgroups go (docs/reference.md "Cgroups and limits"), after removing
// what a crashed tend of this instance left there (docs/reference.md "What a container cannot make tend do"), and writes instance.limits
// to <start>/instance, never to tend's starting cgroup. With `cgroups: required`, no cgroups or a
// limit that cannot be written is an error (tend exits 1); otherwise each is a warning.
func (sv *Supervisor) openCgroups() error {
	want := sv.spec.Instance.Cgroups
	tree, err := cgroup.OpenInstance("/", want, os.Getpid(), realDir(sv.spec.Instance.Dir))
	if err != nil {
		return err
	}
	sv.mu.Lock()
	sv.cgroups = tree
	sv.mu.Unlock()
	if tree.Mode == cgroup.ModeOff {
		// What an earlier tend of the instance left running when it crashed (docs/reference.md
		// "What a container cannot make tend do"; with cgroups Open removed it with its groups). A look at every
		// process, once.
		if n := proc.KillInstanceMarked(realDir(sv.spec.Instance.Dir), initKillTimeout); n > 0 {
			sv.log.Warn().Int("processes", n).Msg("killed the processes an earlier tend of this instance left")
		}
	}
	ev := sv.log.Info().Str("mode", string(tree.Mode))
	if tree.Mode == cgroup.ModeOff {
		if want != spec.CgroupsOff {
			ev = sv.log.Warn().Str("mode", string(tree.Mode)) // e.g. another instance's groups are there
		}
		ev = ev.Str("reason", tree.Reason)
	}
	ev.Msg("cgroups")
	cpu, memory, pids := sv.spec.Instance.Limits.Values()
	errs := tree.SetLimits(cgroup.Limits{CPU: cpu, Memory: memory, Pids: pids})
	if want == spec.CgroupsRequired && len(errs) > 0 {
		return fmt.Errorf("cgroups: required, but instance.limits.%s cannot be applied: %v", errs[0].Limit, errs[0].Err)
	}
	for _, e := range errs {
		sv.log.Warn().Str("limit", "instance.limits."+e.Limit).Str("reason", e.Err.Error()).Msg("limit not applied")
	}
	return nil
}

// closeCgroups removes <start>/containers and <start>/init, once every container's
// group is gone and the strays are killed.
func (sv *Supervisor) closeCgroups() {
	if sv.cgroups == nil {
		return
	}
	if err := sv.cgroups.Close(); err != nil {
		sv.log.Warn().Err(err).Msg("cannot remove the cgroups")
	}
}

// cgroupsStatus is the instance's cgroups section; called with sv.mu held.
func (sv *Supervisor) cgroupsStatus() status.Cgroups {
	if sv.cgroups == nil {
		return status.Cgroups{Mode: status.CgroupsOff, Reason: "not decided yet"}
	}
	return status.Cgroups{Mode: status.CgroupMode(sv.cgroups.Mode), Reason: sv.cgroups.Reason}
}

// openContainerCgroup gives c its cgroup and limits before it runs. With `cgroups:
// required` a group that cannot be made or a limit that cannot be applied is an
// error; otherwise c runs without them (a warning, limits_applied false).
func (sv *Supervisor) openContainerCgroup(c *container.Container) error {
	errs, err := c.OpenCgroup(sv.cgroups)
	required := sv.spec.Instance.Cgroups == spec.CgroupsRequired
	switch {
	case err != nil && required:
		return fmt.Errorf("container %q: %w", c.Name(), err)
	case err != nil:
		sv.log.Warn().Str("container", c.Name()).Err(err).Msg("runs without a cgroup")
	case len(errs) > 0 && required:
		return fmt.Errorf("container %q: cgroups: required, but limits.%s cannot be applied: %v", c.Name(), errs[0].Limit, errs[0].Err)
	}
	return nil
}

// containerCgroup is the placement of the running container name, for its notify
// actions; nil when there is none.
func (sv *Supervisor) containerCgroup(name string) *proc.Cgroup {
	for _, c := range sv.current() {
		if c.Name() == name {
			return c.Placement()
		}
	}
	return nil
}

// initCgroup creates the cgroup of an init container, <start>/init/NAME. Without one
// (cgroups off, or it cannot be made and cgroups are not required) it runs in
// tend's own, as a nil group.
func (sv *Supervisor) initCgroup(name string) (*cgroup.Group, error) {
	g, err := sv.cgroups.Group(cgroup.KindInit, name)
	switch {
	case err != nil && sv.spec.Instance.Cgroups == spec.CgroupsRequired:
		return nil, fmt.Errorf("init container %q: %w", name, err)
	case err != nil:
		sv.log.Warn().Str("init_container", name).Err(err).Msg("runs without a cgroup")
		return nil, nil
	case g.Path() == "":
		return nil, nil
	}
	return g, nil
}

// placeIn is how processes start in g; nil for no group.
func placeIn(g *cgroup.Group) *proc.Cgroup {
	if g == nil {
		return nil
	}
	return &proc.Cgroup{FD: g.FD(), ProcsFiles: g.ProcsFiles()}
}

// emptyInitCgroup kills what a run of an init container left in its group (a setsid
// daemon), before the run counts (docs/reference.md "Cgroups and limits").
func (sv *Supervisor) emptyInitCgroup(g *cgroup.Group, name string) {
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), initKillTimeout)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		sv.log.Warn().Str("init_container", name).Err(err).Msg("cannot kill what is left in the cgroup")
	}
}

// removeInitCgroup empties and removes an init container's group: it succeeded, or
// preparing ended.
func (sv *Supervisor) removeInitCgroup(g *cgroup.Group, name string) {
	if g == nil {
		return
	}
	sv.emptyInitCgroup(g, name)
	if err := g.Remove(); err != nil && !errors.Is(err, os.ErrNotExist) {
		sv.log.Warn().Str("init_container", name).Err(err).Msg("cannot remove the cgroup")
	}
}

// realDir is the instance's identity, its real instance.dir (symlinks resolved), as
// the instance lock and the marks on its cgroups know it.
func realDir(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// killMarked kills what a run of the init container name, marked mark, left that is
// not in its cgroup (cgroups off, or it left it).
func (sv *Supervisor) killMarked(mark, name string) {
	if n := proc.KillMarked(mark, initKillTimeout); n > 0 {
		sv.log.Info().Str("init_container", name).Int("processes", n).Str("mark", mark).Msg("killed what the run left")
	}
}
