package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Limits are what a container (or the instance, all containers together) may use
// (SPEC §12.2). 0 is no limit.
type Limits struct {
	CPU    float64 // cores
	Memory int64   // bytes
	Pids   int64   // processes and threads at once
}

// LimitError is a limit that could not be applied, and why.
type LimitError struct {
	Limit string // "cpu", "memory" or "pids"
	Err   error
}

func (e LimitError) Error() string { return e.Limit + ": " + e.Err.Error() }

// cfsPeriod is the CPU period in microseconds, 100 ms as the kernel's default and
// kubelet's; cfsMinQuota is the kernel's smallest quota, which kubelet raises smaller
// limits to as well.
const (
	cfsPeriod   = 100000
	cfsMinQuota = 1000
)

// SetLimits writes the group's limits: cpu to cpu.max (v2) or cpu.cfs_quota_us (v1),
// memory to memory.max or memory.limit_in_bytes with no swap on top, pids to pids.max.
// On v2 memory.oom.group is set so an OOM kill takes the container as a whole.
func (g *Group) SetLimits(l Limits) []LimitError {
	return setLimits(g.mode, g.reason, g.places, l, true)
}

// setLimits writes l into places. oomGroup is for a container's own group only: on
// tend's starting cgroup it would let one OOM kill take tend and every container.
func setLimits(mode Mode, reason string, places []place, l Limits, oomGroup bool) []LimitError {
	var errs []LimitError
	try := func(limit string, set bool, write func(dir string) error) {
		if !set {
			return
		}
		dir := dirOf(places, limit)
		var err error
		switch {
		case mode == ModeOff:
			err = fmt.Errorf("cgroups are off: %s", reason)
		case dir == "":
			err = fmt.Errorf("no %s controller for the cgroup (%s)", limit, missingWhy(mode))
		default:
			err = write(dir)
		}
		if err != nil {
			errs = append(errs, LimitError{limit, err})
		}
	}
	try("cpu", l.CPU > 0, func(dir string) error { return writeCPU(mode, dir, l.CPU) })
	try("memory", l.Memory > 0, func(dir string) error { return writeMemory(mode, dir, l.Memory, oomGroup) })
	try("pids", l.Pids > 0, func(dir string) error { return writeFile(dir, "pids.max", itoa(l.Pids)) })
	return errs
}

func missingWhy(mode Mode) string {
	if mode == ModeV2 {
		return "not enabled in the parent's cgroup.subtree_control"
	}
	return "its v1 hierarchy is not mounted or not writable"
}

func writeCPU(mode Mode, dir string, cores float64) error {
	quota := max(int64(cores*cfsPeriod+0.5), cfsMinQuota)
	if mode == ModeV2 {
		return writeFile(dir, "cpu.max", fmt.Sprintf("%d %d", quota, cfsPeriod))
	}
	if err := writeFile(dir, "cpu.cfs_period_us", itoa(cfsPeriod)); err != nil {
		return err
	}
	return writeFile(dir, "cpu.cfs_quota_us", itoa(quota))
}

// writeMemory sets the memory limit with no swap on top. On v1 the kernel keeps
// memory.memsw.limit_in_bytes ≥ memory.limit_in_bytes at every write, so raising
// writes memsw first and lowering writes it last: memsw first, and if the kernel refuses
// (it is below the current limit), the limit first.
func writeMemory(mode Mode, dir string, bytes int64, oomGroup bool) error {
	v := itoa(bytes)
	if mode == ModeV2 {
		err := writeFile(dir, "memory.max", v)
		if err == nil && exists(filepath.Join(dir, "memory.swap.max")) {
			err = writeFile(dir, "memory.swap.max", "0")
		}
		if err == nil && oomGroup {
			err = writeFile(dir, "memory.oom.group", "1")
		}
		return err
	}
	if !exists(filepath.Join(dir, "memory.memsw.limit_in_bytes")) {
		return writeFile(dir, "memory.limit_in_bytes", v)
	}
	if err := writeFile(dir, "memory.memsw.limit_in_bytes", v); err == nil {
		return writeFile(dir, "memory.limit_in_bytes", v)
	}
	if err := writeFile(dir, "memory.limit_in_bytes", v); err != nil {
		return err
	}
	return writeFile(dir, "memory.memsw.limit_in_bytes", v)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
