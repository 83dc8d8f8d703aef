package cgroup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
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
	s := NewProcSampler(root)
	defer s.Close()
	byGroup, err := s.Read(map[int]bool{pgid: true})
	return byGroup[pgid], err
}

// maxKeptStats bounds the /proc/PID/stat descriptors a ProcSampler keeps open: far
// below tend's limit of open files (Go raises the soft limit to the hard one, rarely
// under 4096), so that the containers' processes can never starve the rest of tend.
// Processes beyond it are opened at each sample, as before descriptors were kept.
const maxKeptStats = 1024

// ProcSampler is UsageFromProc of many process groups, read again and again (the
// instance's sampler, once a second): one pass over /proc serves every container.
// Between passes it keeps what made a pass expensive: a process of a group asked about
// keeps its stat open (read by pread at offset 0: the open of a /proc file costs more
// than the read), and any other process is read once, when it first appears, and then
// only listed. A kept descriptor never reads another process that reused the pid (the
// read fails, ESRCH, and the pid is dropped). A process that joins a group by setpgid
// after it was first read is read again when that group is first asked about: that is
// how a container's first process is seen if a pass listed it between its fork and the
// setpgid that made its group (it had tend's group then). One that joins a group asked
// about before is missed: no container's process does that.
// Not safe for concurrent use: the sampler's goroutine owns it.
type ProcSampler struct {
	proc   string // root/proc
	dir    int    // proc, kept open and listed again from offset 0; -1 until the first Read
	procs  map[int]procEntry
	pass   uint64       // counts Reads, to drop the pids the last listing did not have
	kept   int          // descriptors kept open in procs
	asked  map[int]bool // the groups of the last Read
	rescan bool         // this Read asks about a group the last did not: read every pid
	sums   map[int]statSum
	usage  map[int]Usage
	dirBuf []byte
	buf    []byte
}

// procEntry is what a ProcSampler knows of a pid /proc listed.
type procEntry struct {
	pgrp int    // at the last read
	fd   int    // its stat kept open, or -1
	pass uint64 // the last Read that listed it
}

// NewProcSampler returns a ProcSampler of /proc under root. Close releases it.
func NewProcSampler(root string) *ProcSampler {
	return &ProcSampler{proc: filepath.Join(root, "proc"), dir: -1, procs: map[int]procEntry{}, sums: map[int]statSum{},
		asked: map[int]bool{}, usage: map[int]Usage{}, dirBuf: make([]byte, 8192), buf: make([]byte, 1024)}
}

// Read returns the usage of every process group in groups that has a process now, by
// pgid. The map is the sampler's own, valid until the next Read. A Read over the same
// processes as the last allocates nothing.
func (s *ProcSampler) Read(groups map[int]bool) (map[int]Usage, error) {
	s.pass++
	clear(s.sums)
	s.rescan = false
	for pgid := range groups {
		if !s.asked[pgid] {
			s.rescan = true
			break
		}
	}
	if s.rescan || len(s.asked) != len(groups) {
		clear(s.asked)
		for pgid := range groups {
			s.asked[pgid] = true
		}
	}
	err := s.list(func(pid int) {
		if st, ok := s.readPid(pid, groups); ok && groups[st.pgrp] {
			sum := s.sums[st.pgrp]
			sum.add(st)
			s.sums[st.pgrp] = sum
		}
	})
	for pid, e := range s.procs {
		if e.pass != s.pass {
			s.forget(pid) // exited
		}
	}
	clear(s.usage)
	for pgid, sum := range s.sums {
		s.usage[pgid] = sum.usage()
	}
	return s.usage, err
}

// Close closes every descriptor the sampler keeps.
func (s *ProcSampler) Close() {
	for pid := range s.procs {
		s.forget(pid)
	}
	if s.dir >= 0 {
		unix.Close(s.dir)
		s.dir = -1
	}
}

// list calls each with every pid in /proc, read again from the start.
func (s *ProcSampler) list(each func(pid int)) error {
	dir := s.proc
	if s.dir < 0 {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("usage from %s: %w", dir, err)
		}
		s.dir = fd
	} else if _, err := unix.Seek(s.dir, 0, io.SeekStart); err != nil {
		return fmt.Errorf("usage from %s: %w", dir, err)
	}
	for {
		n, err := unix.Getdents(s.dir, s.dirBuf)
		if err != nil {
			return fmt.Errorf("usage from %s: %w", dir, err)
		}
		if n == 0 {
			return nil
		}
		// linux_dirent64: inode (8 bytes), offset (8), record length (2), type (1),
		// then the name, NUL-terminated.
		for b := s.dirBuf[:n]; len(b) > 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if pid, ok := parsePid(b[19:reclen]); ok {
				each(pid)
			}
			b = b[reclen:]
		}
	}
}

// parsePid reads a NUL-terminated /proc entry name as a pid; false for the entries
// that are not processes ("self", "meminfo", ...).
func parsePid(name []byte) (int, bool) {
	pid := 0
	for _, c := range name {
		if c == 0 {
			break
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return pid, pid > 0
}

// readPid reads the stat of pid, a process the listing has now: through its kept
// descriptor, or opened when it is new or was seen in a group asked about. false when
// there is nothing to read: it exited, or was read before in a group not asked about.
func (s *ProcSampler) readPid(pid int, groups map[int]bool) (procStat, bool) {
	e, known := s.procs[pid]
	e.pass = s.pass
	if known && e.fd < 0 && !groups[e.pgrp] && !s.rescan {
		s.procs[pid] = e
		return procStat{}, false
	}
	opened := e.fd < 0 || !known
	if opened {
		fd, err := unix.Open(filepath.Join(s.proc, strconv.Itoa(pid), "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return procStat{}, false // exited since the listing
		}
		e.fd = fd
	}
	data, err := preadAll(e.fd, &s.buf, "/proc", "stat")
	st, ok := procStat{}, false
	if err == nil {
		st, ok = parseStat(data)
	}
	if !ok {
		if opened {
			unix.Close(e.fd)
		}
		s.forget(pid) // exited: the pid, if listed again, is another process
		return procStat{}, false
	}
	e.pgrp = st.pgrp
	s.procs[pid] = s.keep(e, opened, groups[st.pgrp])
	return st, true
}

// keep decides whether e's descriptor stays open: while its process is in a group
// asked about and there is room. opened: e.fd was opened by this read, not kept.
func (s *ProcSampler) keep(e procEntry, opened, wanted bool) procEntry {
	switch {
	case wanted && !opened:
		return e
	case wanted && s.kept < maxKeptStats:
		s.kept++
		return e
	case !opened:
		s.kept-- // left the group: read like any other process from now on
	}
	unix.Close(e.fd)
	e.fd = -1
	return e
}

// forget drops pid, closing its kept descriptor.
func (s *ProcSampler) forget(pid int) {
	if e, ok := s.procs[pid]; ok && e.fd >= 0 {
		unix.Close(e.fd)
		s.kept--
	}
	delete(s.procs, pid)
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
