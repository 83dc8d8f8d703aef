package supervisor

import (
	"context"
	"time"

	"github.com/tend-sh/tend/cgroup"
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
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			sv.sampleOnce(now)
		}
	}
}

// sampleOnce reads and hands out one sample of every running container.
func (sv *Supervisor) sampleOnce(now time.Time) {
	var procs map[int]cgroup.Usage
	readProcs := func() map[int]cgroup.Usage {
		if procs == nil {
			var err error
			if procs, err = cgroup.ProcUsage("/"); err != nil {
				sv.log.Debug().Err(err).Msg("cannot read usage")
				procs = map[int]cgroup.Usage{}
			}
		}
		return procs
	}
	for _, c := range sv.current() {
		if s, ok := c.ReadUsage(readProcs, now); ok {
			c.Sample(s)
		}
	}
}
