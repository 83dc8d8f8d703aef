package cgroup

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
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
// The caller holds g.mu.
func (g *Group) usageOfPids(procDir string, pids []int, buf *[]byte) Usage {
	if g.statPid != 0 && !slices.Contains(pids, g.statPid) {
		g.dropStat()
	}
	var sum statSum
	for _, pid := range pids {
		if st, ok := g.readStat(procDir, pid, buf); ok {
			sum.add(st)
		}
	}
	return sum.usage()
}

// readStat reads /proc/PID/stat of a process of the group; false when it exited
// meanwhile. One process's file stays open: the first read while none is, most often
// the run's root process, which lives as long as the run (and in a container of one
// process is all there is); the others are opened each time, since a descriptor per
// process could run into tend's limit of open files. A kept descriptor of a process
// that exited fails (it never reads a new process that took the pid): the file is
// opened again.
func (g *Group) readStat(procDir string, pid int, buf *[]byte) (procStat, bool) {
	kept := pid == g.statPid
	fd := g.statFD
	if !kept {
		var err error
		fd, err = unix.Open(filepath.Join(procDir, strconv.Itoa(pid), "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return procStat{}, false
		}
		if g.statPid == 0 && !g.removed {
			g.statPid, g.statFD = pid, fd
		} else {
			defer unix.Close(fd)
		}
	}
	data, err := preadAll(fd, buf, procDir, "stat")
	if err != nil && kept {
		g.dropStat()
		return g.readStat(procDir, pid, buf)
	}
	if err != nil {
		return procStat{}, false
	}
	return parseStat(data)
}

// dropStat closes the kept /proc/PID/stat. The caller holds g.mu.
func (g *Group) dropStat() {
	if g.statPid != 0 {
		unix.Close(g.statFD)
		g.statPid = 0
	}
}

// readStat reads and parses dir/stat; false when the process exited meanwhile.
func readStat(dir string) (procStat, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procStat{}, false
	}
	return parseStat(data)
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

// parseStat reads /proc/PID/stat (proc(5)) without allocating. The command name, in
// parentheses, may hold spaces and parentheses itself, so fields are counted from the
// last ")".
func parseStat(s []byte) (procStat, bool) {
	i := bytes.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	// Field N of proc(5) is the (N-2)th after the ")": field 3, state, is the first.
	var f [25]int64 // f[N] is field N, for the fields read (5 to 24)
	n, rest := 2, s[i+1:]
	for n < 24 {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			return procStat{}, false
		}
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		n++
		if n >= 5 {
			f[n], _ = atoi(rest[:end])
		}
		rest = rest[end:]
	}
	return procStat{
		pgrp:     int(f[5]),
		ticks:    f[14] + f[15] + f[16] + f[17],
		threads:  f[20],
		rssPages: f[24],
	}, true
}
