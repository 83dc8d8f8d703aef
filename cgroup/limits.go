package cgroup

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
)

// Limits are what a container (or the instance, all containers together) may use
// (docs/reference.md "Cgroups and limits"). 0 is no limit.
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
// On a hybrid host it first makes the v1 groups of the limits set, which ProcsFiles then
// names: a container joins a v1 hierarchy only for a limit, its own or the instance's.
func (g *Group) SetLimits(l Limits) []LimitError {
	if g.unified == "" {
		return setLimits(g.mode, g.reason, g.places, l, true)
	}
	g.mu.Lock() // joined changes what Usage and Kill read
	defer g.mu.Unlock()
	g.closeFiles()
	g.joined = nil
	bound := g.tree.bound // set before the first Group (Tree.SetLimits)
	if g.places == nil && (l.any() || bound.any()) {
		places, err := g.tree.v1Places()
		if err != nil {
			return l.failed(err)
		}
		g.places = under(places, g.sub)
	}
	var errs []LimitError
	for _, p := range g.places {
		limited := slices.DeleteFunc(slices.Clone(p.controllers), func(c string) bool { return !l.has(c) && !bound.has(c) })
		if len(limited) == 0 {
			continue
		}
		err := g.tree.makeKinds(filepath.Dir(filepath.Dir(p.dir))) // <start>/<kind>/<name>
		if err == nil {
			err = mkdir(p.dir)
		}
		if err != nil {
			for _, c := range limited {
				errs = append(errs, LimitError{c, fmt.Errorf("cgroup %s: %w", p.dir, err)})
				l = l.without(c)
			}
			continue
		}
		g.joined = append(g.joined, p)
	}
	return append(errs, setLimits(g.mode, g.reason, g.joined, l, true)...)
}

// any says whether l sets any limit.
func (l Limits) any() bool { return l.CPU > 0 || l.Memory > 0 || l.Pids > 0 }

// failed is one LimitError with err for each limit l sets.
func (l Limits) failed(err error) []LimitError {
	var errs []LimitError
	for _, c := range limitControllers {
		if l.has(c) {
			errs = append(errs, LimitError{c, err})
		}
	}
	return errs
}

// has says whether l limits controller c.
func (l Limits) has(c string) bool {
	switch c {
	case "cpu":
		return l.CPU > 0
	case "memory":
		return l.Memory > 0
	case "pids":
		return l.Pids > 0
	}
	return false
}

// without is l with no limit for controller c.
func (l Limits) without(c string) Limits {
	switch c {
	case "cpu":
		l.CPU = 0
	case "memory":
		l.Memory = 0
	case "pids":
		l.Pids = 0
	}
	return l
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
