package container

import (
	"context"
	"strings"
	"syscall"
	"time"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/proc"
)

// groupKillTimeout bounds the kill of what a run left in its cgroup. A kill that does
// not empty the group in that time (a process stuck in the kernel, D state) is a
// warning: the loop goes on rather than hang the container.
const groupKillTimeout = 5 * time.Second

// OpenCgroup creates the container's cgroup, <start>/containers/NAME, and writes its
// limits once (docs/reference.md "Cgroups and limits"). The supervisor calls it just before Run, when no
// container of the same name runs any more: a reload builds a changed container while
// the old one still runs, and Tree.Group kills what it finds in an existing group.
// Each limit not applied is a warning here and makes limits_applied false; they are
// returned for `cgroups: required`. An error means no group: the container runs
// without one.
func (c *Container) OpenCgroup(tree *cgroup.Tree) ([]cgroup.LimitError, error) {
	g, err := tree.Group(cgroup.KindContainers, c.Name())
	if err != nil {
		reason := ""
		if c.cfg.Spec.Limits.IsSet() {
			reason = "no cgroup: " + err.Error()
		}
		c.setCgroupStatus("", reason)
		return nil, err
	}
	c.group, c.freshGroup = g, g.Fresh()
	cpu, memory, pids := c.cfg.Spec.Limits.Values()
	errs := g.SetLimits(cgroup.Limits{CPU: cpu, Memory: memory, Pids: pids})
	if g.Path() != "" {
		// After SetLimits: on a hybrid host the limits decide the v1 groups to join.
		c.placed.Store(&proc.Cgroup{FD: g.FD(), ProcsFiles: g.ProcsFiles()})
	}
	for _, e := range errs {
		c.cfg.Log.Warn().Str("container", c.Name()).Str("limit", e.Limit).Str("reason", e.Err.Error()).Msg("limit not applied")
	}
	var reasons []string
	for _, e := range errs {
		reasons = append(reasons, e.Error())
	}
	c.setCgroupStatus(g.Path(), strings.Join(reasons, "; "))
	return errs, nil
}

// setCgroupStatus shows the cgroup and whether the limits apply: why not, or "" when
// they do. Only before Run: afterwards the loop owns the status.
func (c *Container) setCgroupStatus(path, notApplied string) {
	st := *c.status.Load()
	st.Cgroup, st.LimitsApplied, st.LimitsReason = path, notApplied == "", notApplied
	c.status.Store(&st)
}

// Placement is how the container's processes start in its cgroup; nil: no cgroup,
// or it was removed. Safe from any goroutine (the notify actions of resources).
func (c *Container) Placement() *proc.Cgroup { return c.placed.Load() }

// exited is closed once p has exited and everything else of its run has been killed
// (docs/reference.md "Cgroups and limits"): the loop learns of the exit only then, so no exit count,
// restart or destroy policy runs while a leftover of the run (a setsid daemon) lives
// on: the run's process group, and with a cgroup everything in it; without one (or
// while a start-first update shares it with the other run) every process that carries
// the run's mark. The kill runs in a goroutine of its own, begun at the exit,
// so the loop never blocks on it and nothing waits while the process runs; Kill only
// reads the group, which the loop does not change while it runs.
func (c *Container) exited(p *proc.Process, mark string) <-chan struct{} {
	placed := c.Placement() != nil
	done := make(chan struct{})
	p.OnExit(func() {
		if !placed {
			// Whatever the process left behind in its group dies with it, as an init
			// container's leftovers do and as a Kubernetes container's would:
			// otherwise every restart would leave processes, and the output pipes
			// they hold open (each read end in proc's output poller), behind. Then
			// what left the group, by its mark. Neither waits on the reaper's
			// goroutine: the mark kill reports when it is done.
			_ = p.SignalGroup(syscall.SIGKILL)
			c.killMarkedThen(mark, func() { close(done) })
			return
		}
		go func() {
			c.noteExitOOMs()
			_ = p.SignalGroup(syscall.SIGKILL)
			if !c.overlap.Load() {
				c.killCgroup()
			} else {
				// A start-first update whose other run shares the cgroup and must
				// live: this run's marked processes go.
				c.killMarked(mark)
			}
			close(done)
		}()
	})
	return done
}

// newRunMark is the TEND_RUN of a new run of the container, or of one of its init
// commands.
func (c *Container) newRunMark() string { return proc.NewRunMark(c.cfg.Instance, c.Name()) }

// killMarked kills every process that carries mark, for at most groupKillTimeout.
func (c *Container) killMarked(mark string) {
	done := make(chan struct{})
	c.killMarkedThen(mark, func() { close(done) })
	<-done
}

// killMarkedThen is killMarked without the wait: then runs once it is done, on the
// mark sweeper's goroutine, and must not block.
func (c *Container) killMarkedThen(mark string, then func()) {
	proc.KillMarkedThen(mark, groupKillTimeout, func(n int) {
		if n > 0 {
			c.cfg.Log.Info().Str("container", c.Name()).Int("processes", n).Str("mark", mark).Msg("killed what the run left")
		}
		then()
	})
}

// endInitRun kills what a run of an init command, marked mark, left: everything in
// the container's cgroup (nothing else of the container runs yet), unless a
// start-first update's other run shares it, and every process with the mark.
func (c *Container) endInitRun(mark string) {
	if c.Placement() != nil && !c.overlap.Load() {
		c.killCgroup()
	}
	c.killMarked(mark)
}

// noteExitOOMs keeps the group's OOM kills as the run's root process exited, before
// what is left is killed, for the loop to tell an OOM kill (usageRunEnd). Unreadable,
// the count of the run's start stays: no OOM kill is named. Only the count is read
// (Group.OOMKills): the whole usage cost every container's exit at a shutdown a read
// of its CPU time and a list of its processes.
func (c *Container) noteExitOOMs() {
	if n, err := c.group.OOMKills(); err == nil {
		c.exitOOMs.Store(n)
	}
}

// killCgroup kills every process in the container's cgroup, for at most
// groupKillTimeout.
func (c *Container) killCgroup() {
	ctx, cancel := context.WithTimeout(context.Background(), groupKillTimeout)
	defer cancel()
	if err := c.group.Kill(ctx); err != nil {
		c.cfg.Log.Warn().Str("container", c.Name()).Err(err).Msg("cannot kill what is left in the cgroup")
	}
}

// removeCgroup kills what is left in the container's cgroup (an exec handler or
// probe still running when the loop ended) and removes it: the loop has ended for
// good. Between runs the group stays (docs/design.md "Cgroups"). The exit of the last
// run killed what was in it, so it is removed first and killed only if the kernel
// says it is not empty: at a shutdown every container's group went through a list of
// its processes, found empty, before its removal.
func (c *Container) removeCgroup() {
	if c.placed.Swap(nil) == nil {
		return
	}
	if removed, err := c.group.RemoveEmpty(); removed {
		if err != nil {
			c.cfg.Log.Warn().Str("container", c.Name()).Err(err).Msg("cannot remove the cgroup")
		}
		return
	}
	c.killCgroup()
	if err := c.group.Remove(); err != nil {
		c.cfg.Log.Warn().Str("container", c.Name()).Err(err).Msg("cannot remove the cgroup")
	}
}
