package container

import (
	"fmt"
	"time"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/status"
)

// Sample is one reading of a running container's usage by the instance's sampler,
// which reads every container in turn (supervisor/usage.go) and hands each its own.
type Sample struct {
	Pid int       // the root process of the run it is about
	At  time.Time // when it was read
	// Usage as read: a cgroup's CPU time and OOM kills count every run since the
	// group was made; the loop makes them the current run's.
	Usage cgroup.Usage
	// Taken, when set, is called once the loop has taken the sample, or a newer one
	// replaced it: a reader that asked for fresh usage waits for it.
	Taken func()
}

// ProcGroup is the process group whose usage ReadUsage takes from the sampler's pass
// over /proc: the running process's, which leads its run's group, when the container
// has no cgroup. false: it reads its cgroup, or nothing runs.
func (c *Container) ProcGroup() (int, bool) {
	pid := c.status.Load().Pid
	if pid == nil || c.Placement() != nil {
		return 0, false
	}
	return *pid, true
}

// ReadUsage reads the usage of the container's running process: from its cgroup, or
// without one from procs (the sampler's one pass over /proc, by process group, of the
// groups ProcGroup named). false: nothing runs, or it cannot be read now.
func (c *Container) ReadUsage(procs map[int]cgroup.Usage, now time.Time) (Sample, bool) {
	pid := c.status.Load().Pid
	if pid == nil {
		return Sample{}, false
	}
	s := Sample{Pid: *pid, At: now}
	if c.Placement() == nil {
		u, ok := procs[*pid] // the root process leads the run's process group
		s.Usage = u
		return s, ok
	}
	u, err := c.group.Usage()
	if err != nil {
		c.cfg.Log.Debug().Str("container", c.Name()).Err(err).Msg("cannot read usage")
		return s, false
	}
	s.Usage = u
	return s, true
}

// Sample hands s to the container's loop. It never blocks the sampler: a sample the
// loop has not taken yet is replaced by this one.
//
// The sample waits in a field, announced on a channel of struct{}, not sent over a
// channel of Sample: a value received in the loop's select takes a slot in its frame,
// and the frame of an idle loop decides whether the collector can shrink its stack
// from 8 KiB back to 4 KiB (runtime.shrinkstack: below a quarter used), which for
// 100 containers is 400 KiB of tend's memory.
func (c *Container) Sample(s Sample) {
	c.sampleMu.Lock()
	replaced := c.sample
	c.sample, c.sampleNew = s, true
	c.sampleMu.Unlock()
	if replaced.Taken != nil {
		replaced.Taken()
	}
	select {
	case c.sampled <- struct{}{}:
	default:
	}
}

// takeSample is the sample Sample announced last; false when the loop took it
// already (a sample that replaced another was announced twice).
func (c *Container) takeSample() (Sample, bool) {
	c.sampleMu.Lock()
	defer c.sampleMu.Unlock()
	s, ok := c.sample, c.sampleNew
	c.sample.Taken, c.sampleNew = nil, false
	return s, ok
}

// runUsage is the loop's account of its runs' usage.
type runUsage struct {
	base  cgroup.Usage // the group's counts when the run started
	last  Sample       // the previous sample of the run (at first: its start)
	shown status.Usage // what status shows
	mem   restart.MemoryWatch
}

// usageRunStart notes the group's counts before a run starts, so the run's CPU time
// and whether the OOM killer struck during it can be told apart from earlier runs'.
func (l *loop) usageRunStart(now time.Time) {
	var base cgroup.Usage
	if l.c.freshGroup {
		l.c.freshGroup = false // the first run in a new group: its counts are zero
	} else if l.c.Placement() != nil {
		u, err := l.c.group.Usage()
		if err != nil {
			l.log.Debug().Err(err).Msg("cannot read usage")
		}
		base = u
	}
	l.c.exitOOMs.Store(base.OOMKills) // until the exit reads it (Container.exited)
	l.usage.base = base
	l.usage.last = Sample{At: now, Usage: base}
	l.usage.mem = restart.MemoryWatch{Limit: l.sc.MemoryRestart.Get()}
}

// takeSample shows a sample of the current run and reports whether memory_restart
// should restart it now.
func (l *loop) takeSample(s Sample) bool {
	u := &l.usage
	cpu := max(s.Usage.CPUSeconds-u.base.CPUSeconds, 0)
	prevCPU := max(u.last.Usage.CPUSeconds-u.base.CPUSeconds, 0)
	percent := 0.0
	if d := s.At.Sub(u.last.At).Seconds(); d > 0 {
		percent = max(cpu-prevCPU, 0) / d * 100
	}
	u.last = s
	u.shown = status.Usage{CPUSeconds: cpu, MemoryBytes: s.Usage.MemoryBytes, Pids: s.Usage.Pids,
		OOMKills: max(s.Usage.OOMKills, u.shown.OOMKills), CPUPercent: percent}
	l.publishUsage()
	return u.mem.Observe(s.Usage.MemoryBytes)
}

// usageRunEnd shows a run as ended (no memory, no processes) and reports whether the
// kernel's OOM killer killed its root process: SIGKILL, and the group's OOM kills
// grew during the run (read at the exit, before what was left was killed).
func (l *loop) usageRunEnd(sigkilled bool) bool {
	u := &l.usage
	ooms := l.c.exitOOMs.Load()
	u.shown.MemoryBytes, u.shown.Pids, u.shown.CPUPercent = 0, 0, 0
	u.shown.OOMKills = max(ooms, u.shown.OOMKills)
	l.publishUsage()
	return sigkilled && ooms > u.base.OOMKills
}

// memoryRestart restarts the running container through its stop policy: its memory
// stayed above memory_restart.
func (l *loop) memoryRestart() {
	msg := fmt.Sprintf("memory %s above memory_restart %s at %d samples in a row: restarting",
		status.HumanBytes(l.usage.shown.MemoryBytes), status.HumanBytes(l.usage.mem.Limit), restart.MemorySamples)
	l.log.Warn().Int64("memory_bytes", l.usage.shown.MemoryBytes).Int64("memory_restart", l.usage.mem.Limit).Msg("memory above memory_restart: restarting")
	l.record(status.Warning, status.ReasonMemoryRestart, msg)
	l.usage.mem.Above = 0
	l.killReason = status.ExitMemoryRestart
	l.beginStop(StopOp{}, stateRestarting) // never ends the loop: a restart follows
}

// publishUsage stores a copy of the usage shown for readers: the loop goes on
// changing its own.
func (l *loop) publishUsage() {
	shown := l.usage.shown
	l.c.usage.Store(&shown)
}
