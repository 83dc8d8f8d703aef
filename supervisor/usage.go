package supervisor

import (
	"context"
	"time"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/container"
)

// samplePeriod is how often every container's usage is read: status shows usage at
// most 2 s old, and memory_restart counts samples 1 s apart (SPEC §12.4).
const samplePeriod = time.Second

// sampleUsage is the instance's one usage sampler: every samplePeriod it reads each
// running container's usage and hands it to the container's loop, until ctx ends.
// One goroutine and one timer for the instance, not one per container; and without
// cgroups one pass over /proc for all of them.
func (sv *Supervisor) sampleUsage(ctx context.Context) {
	tick := time.NewTicker(samplePeriod)
	defer tick.Stop()
	u := &usageSampler{procs: cgroup.NewProcSampler("/"), groups: map[int]bool{}}
	defer u.procs.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			sv.sampleOnce(u, now)
		}
	}
}

// usageSampler is what the sampler keeps from one sample to the next, so that a sample
// allocates nothing: garbage made every second would have the collector grow tend's
// heap to its goal (GOGC) for nothing.
type usageSampler struct {
	procs      *cgroup.ProcSampler
	groups     map[int]bool // the process groups read from /proc this sample
	containers []*container.Container
}

// sampleOnce reads and hands out one sample of every running container.
func (sv *Supervisor) sampleOnce(u *usageSampler, now time.Time) {
	u.containers = sv.appendCurrent(u.containers[:0])
	clear(u.groups)
	for _, c := range u.containers {
		if pgid, ok := c.ProcGroup(); ok {
			u.groups[pgid] = true
		}
	}
	var procs map[int]cgroup.Usage
	if len(u.groups) > 0 {
		var err error
		if procs, err = u.procs.Read(u.groups); err != nil {
			sv.log.Debug().Err(err).Msg("cannot read usage")
		}
	}
	for _, c := range u.containers {
		if s, ok := c.ReadUsage(procs, now); ok {
			c.Sample(s)
		}
	}
	clear(u.containers) // holds no container past the sample
}
