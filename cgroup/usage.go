package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Usage is what a container uses now (SPEC §12.4).
type Usage struct {
	CPUSeconds  float64 // CPU time of all its processes, live and exited
	MemoryBytes int64   // working set: memory in use minus inactive file pages
	Pids        int64   // processes and threads
	OOMKills    int64   // processes the kernel's OOM killer killed
}

// Usage reads the group's usage. Memory is the working set as kubelet reports it (usage
// minus inactive file pages, which the kernel reclaims before it OOM-kills): page cache
// a container read once is not memory it needs. A controller tend does not have reads 0.
//
// Unlike the other methods, Usage is safe to call from any goroutine, alongside Kill
// and Remove: it only reads files under paths fixed at creation (the instance's
// sampler reads every group while each container's own goroutine kills and removes
// its). A group removed meanwhile reads as an error (v2) or zeros (v1).
func (g *Group) Usage() (Usage, error) {
	switch g.mode {
	case ModeOff:
		return Usage{}, nil
	case ModeV2:
		return usageV2(g.places[0].dir)
	}
	if g.unified != "" {
		return g.usageHybrid()
	}
	return usageV1(g.places)
}

// usageHybrid reads CPU time from the cgroup2 group's cpu.stat (there without any
// controller), memory and OOM kills from the v1 memory group and pids from the v1 pids
// group where a limit joined them; without those, memory (resident set size, as
// UsageFromProc) and pids come from /proc over the cgroup2 group's processes.
func (g *Group) usageHybrid() (Usage, error) {
	if !exists(g.unified) {
		return Usage{}, fmt.Errorf("cgroup %s is gone", g.unified)
	}
	u, err := usageV1(g.joined)
	usec, err2 := readKey(g.unified, "cpu.stat", "usage_usec")
	u.CPUSeconds = float64(usec) / 1e6
	memory, pids := dirOf(g.joined, "memory") != "", dirOf(g.joined, "pids") != ""
	if memory && pids {
		return u, errors.Join(err, err2)
	}
	members, err3 := g.pids()
	p := usageOfPids("/proc", members)
	if !memory {
		u.MemoryBytes = p.MemoryBytes
	}
	if !pids {
		u.Pids = p.Pids
	}
	return u, errors.Join(err, err2, err3)
}

func usageV2(dir string) (Usage, error) {
	if !exists(dir) {
		return Usage{}, fmt.Errorf("cgroup %s is gone", dir)
	}
	usec, err1 := readKey(dir, "cpu.stat", "usage_usec")
	current, err2 := readInt(dir, "memory.current")
	inactive, err3 := readKey(dir, "memory.stat", "inactive_file")
	pids, err4 := readInt(dir, "pids.current")
	ooms, err5 := readKey(dir, "memory.events", "oom_kill")
	u := Usage{
		CPUSeconds:  float64(usec) / 1e6,
		MemoryBytes: max(current-inactive, 0),
		Pids:        pids,
		OOMKills:    ooms,
	}
	return u, errors.Join(err1, err2, err3, err4, err5)
}

func usageV1(places []place) (Usage, error) {
	var u Usage
	var errs []error
	if dir := dirOf(places, "cpuacct"); dir != "" {
		ns, err := readInt(dir, "cpuacct.usage")
		u.CPUSeconds, errs = float64(ns)/1e9, append(errs, err)
	}
	if dir := dirOf(places, "memory"); dir != "" {
		usage, err1 := readInt(dir, "memory.usage_in_bytes")
		inactive, err2 := readKey(dir, "memory.stat", "total_inactive_file")
		ooms, err3 := readKey(dir, "memory.oom_control", "oom_kill")
		u.MemoryBytes, u.OOMKills = max(usage-inactive, 0), ooms
		errs = append(errs, err1, err2, err3)
	}
	if dir := dirOf(places, "pids"); dir != "" {
		n, err := readInt(dir, "pids.current")
		u.Pids, errs = n, append(errs, err)
	}
	return u, errors.Join(errs...)
}

// readInt reads a file holding one integer; a missing file (a controller not enabled)
// is 0.
func readInt(dir, name string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return n, nil
}

// readKey reads the integer after key in a flat-keyed file ("key value" lines); a
// missing file or key is 0.
func readKey(dir, name, key string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", filepath.Join(dir, name), key, err)
			}
			return n, nil
		}
	}
	return 0, nil
}
