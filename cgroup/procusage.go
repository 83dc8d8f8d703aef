package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of CPU times in /proc/PID/stat: 100 on every Linux
// architecture tend builds for (sysconf(_SC_CLK_TCK) would need cgo).
const clockTicks = 100

// UsageFromProc is Usage without cgroups, from /proc under root over every process of
// process group pgid (a container's processes, unless one left its group with setsid).
// CPU adds the times of exited children those processes waited for; memory is resident
// set size; pids counts threads, as pids.current does; OOMKills is 0: the kernel names
// no OOM kill outside a memory cgroup.
func UsageFromProc(pgid int, root string) (Usage, error) {
	byGroup, err := ProcUsage(root)
	return byGroup[pgid], err
}

// ProcUsage is UsageFromProc of every process group at once, by pgid: one pass over
// /proc serves every container of an instance, where one pass each would read every
// process's stat once per container.
func ProcUsage(root string) (map[int]Usage, error) {
	entries, err := os.ReadDir(filepath.Join(root, "proc"))
	if err != nil {
		return nil, fmt.Errorf("usage from %s: %w", filepath.Join(root, "proc"), err)
	}
	sums := map[int]*statSum{}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, ok := readStat(filepath.Join(root, "proc", e.Name()))
		if !ok {
			continue
		}
		if sums[st.pgrp] == nil {
			sums[st.pgrp] = &statSum{}
		}
		sums[st.pgrp].add(st)
	}
	byGroup := make(map[int]Usage, len(sums))
	for pgid, sum := range sums {
		byGroup[pgid] = sum.usage()
	}
	return byGroup, nil
}

// usageOfPids is UsageFromProc over the processes pids, with /proc at procDir: the
// memory and pids of a hybrid host's group that joined no v1 memory or pids group.
func usageOfPids(procDir string, pids []int) Usage {
	var sum statSum
	for _, pid := range pids {
		if st, ok := readStat(filepath.Join(procDir, strconv.Itoa(pid))); ok {
			sum.add(st)
		}
	}
	return sum.usage()
}

// readStat reads and parses dir/stat; false when the process exited meanwhile.
func readStat(dir string) (procStat, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procStat{}, false
	}
	return parseStat(string(data))
}

// statSum adds up the processes' /proc/PID/stat.
type statSum struct{ ticks, pages, threads int64 }

func (s *statSum) add(st procStat) {
	s.ticks += st.ticks
	s.pages += st.rssPages
	s.threads += st.threads
}

func (s statSum) usage() Usage {
	return Usage{
		CPUSeconds:  float64(s.ticks) / clockTicks,
		MemoryBytes: s.pages * int64(os.Getpagesize()),
		Pids:        s.threads,
	}
}

type procStat struct {
	pgrp     int
	ticks    int64 // utime + stime + cutime + cstime
	threads  int64
	rssPages int64
}

// parseStat reads /proc/PID/stat (proc(5)). The command name, in parentheses, may hold
// spaces and parentheses itself, so fields are counted from the last ")".
func parseStat(s string) (procStat, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	// f[0] is field 3 (state): field N of proc(5) is f[N-3].
	f := strings.Fields(s[i+1:])
	if len(f) < 22 {
		return procStat{}, false
	}
	num := func(n int) int64 {
		v, _ := strconv.ParseInt(f[n-3], 10, 64)
		return v
	}
	return procStat{
		pgrp:     int(num(5)),
		ticks:    num(14) + num(15) + num(16) + num(17),
		threads:  num(20),
		rssPages: num(24),
	}, true
}
