package cgroup

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Usage is what a container uses now (docs/reference.md "Cgroups and limits").
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
// readSlots bounds the groups read at once. Reading a group is a series of blocking
// system calls (the first opens its files: a kernfs lookup each), and the Go runtime
// gives a goroutine blocked in one a thread of its own, which it keeps for good: a
// hundred containers starting together, each noting its group's counts, left tend
// with 9 to 24 threads 15 s later; two slots, as for starts (proc.startSlots).
var readSlots = make(chan struct{}, 2)

// Usage is safe to call from any goroutine, alongside Kill and Remove (the instance's
// sampler reads every group while each container's own goroutine kills and removes
// its). It reads through descriptors kept open (see read), so the sampler's cost is
// that of the reads, not of a lookup per file. After Remove, or with the group's
// directory removed meanwhile, it is an error.
func (g *Group) Usage() (Usage, error) {
	if g.mode == ModeOff {
		return Usage{}, nil
	}
	readSlots <- struct{}{}
	defer func() { <-readSlots }()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return Usage{}, fmt.Errorf("usage of cgroup %s: %w", g.path, errRemoved)
	}
	buf := readBufs.Get().(*[]byte)
	defer readBufs.Put(buf)
	switch {
	case g.mode == ModeV2:
		return g.usageV2(g.places[0].dir, buf)
	case g.unified != "":
		return g.usageHybrid(buf)
	}
	return g.usageV1(g.places, buf)
}

// OOMKills is the group's count of OOM kills as Usage reads it, and nothing else: what
// a container's exit notes (Container.exited), where Usage also read the CPU time,
// the processes and their memory for nothing. On a hybrid host the count is the v1
// memory group's, which only a memory limit makes: without one there is nothing to
// read, and it is 0.
func (g *Group) OOMKills() (int64, error) {
	places := g.places
	switch {
	case g.mode == ModeOff:
		return 0, nil
	case g.mode == ModeV2:
	case g.unified != "":
		places = g.joined
		if dirOf(places, "memory") == "" {
			return 0, nil
		}
	}
	readSlots <- struct{}{}
	defer func() { <-readSlots }()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return 0, fmt.Errorf("OOM kills of cgroup %s: %w", g.path, errRemoved)
	}
	buf := readBufs.Get().(*[]byte)
	defer readBufs.Put(buf)
	if g.mode == ModeV2 {
		return g.readKey(g.places[0].dir, "memory.events", "oom_kill", buf)
	}
	if dir := dirOf(places, "memory"); dir != "" {
		return g.readKey(dir, "memory.oom_control", "oom_kill", buf)
	}
	return 0, nil
}

// stillCounts are a group's counts that change only when one of its processes runs:
// its processes (a fork, an exit) and its OOM kills (the OOM killer runs in the
// process that allocates, and its victim runs to exit). While the group's CPU time
// reads the same, none of its processes ran, and Usage takes them from the last
// sample instead of reading their files again: a third of an idle container's reads
// (tend top turns on the sampling of every container, each second). The kernel adds
// a running process's time at the latest at its next tick, so a fork shows at the
// latest one sample later, as its CPU time does.
type stillCounts struct {
	cpu     int64 // the CPU time (in its file's unit) plus 1 they were read at; 0: none kept
	pids    int64
	ooms    int64
	members bool // hybrid: g.members are the group's processes at cpu

	kind int64 // the kind's CPU time plus 1 at which usec was read (cpuUsec); 0: none
	usec int64
}

// kindCPU is the CPU time of every group of a kind (<start>/containers, <start>/init
// on cgroup2: cpu.stat's usage_usec counts the groups below), read at most once in
// kindCPUFresh for all of them. While it reads the same, none of their processes ran:
// a sample takes each group's CPU time from its last reading instead of its own
// cpu.stat (of an idle instance's reads, a half on the hybrid host, one in five on
// v2). Safe for concurrent use.
type kindCPU struct {
	dir string

	mu   sync.Mutex
	fd   int // cpu.stat kept open; -1 before the first read or after close
	at   time.Time
	usec int64
	ok   bool // the last read worked
	buf  []byte
}

// kindCPUFresh is how long a reading of a kind's CPU time serves: one pass of the
// sampler over every group, not a second one (a pass is at least half a second after
// the one before).
var kindCPUFresh = 100 * time.Millisecond

// read returns the kind's CPU time, in µs, as read at most kindCPUFresh ago; false
// when it cannot be read (nothing is then taken from an earlier reading). It is read
// before the groups it serves are: what they read after it is at least as new.
func (k *kindCPU) read() (int64, bool) {
	if k == nil {
		return 0, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if now.Sub(k.at) < kindCPUFresh {
		return k.usec, k.ok
	}
	k.at, k.ok = now, false
	if k.fd < 0 {
		fd, err := openKept(k.dir, "cpu.stat")
		if err != nil || fd == missing {
			return 0, false
		}
		k.fd = fd
	}
	data, err := preadAll(k.fd, &k.buf, k.dir, "cpu.stat")
	if err != nil {
		return 0, false
	}
	v, found := valueOf(data, "usage_usec")
	if !found {
		return 0, false
	}
	if k.usec, err = atoi(v); err != nil {
		return 0, false
	}
	k.ok = true
	return k.usec, true
}

// close closes the kept cpu.stat.
func (k *kindCPU) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fd >= 0 {
		unix.Close(k.fd)
		k.fd = -1
	}
	k.at = time.Time{}
}

// cpuUsec is cpu.stat's usage_usec of the group's directory dir (cgroup2): its last
// reading while the CPU time of its kind has not moved since, else read now.
func (g *Group) cpuUsec(dir string, buf *[]byte) (int64, error) {
	kind, ok := g.kind.read()
	if ok && g.still.kind == kind+1 {
		return g.still.usec, nil
	}
	usec, err := g.readKey(dir, "cpu.stat", "usage_usec", buf)
	g.still.kind, g.still.usec = 0, usec
	if ok && err == nil {
		g.still.kind = kind + 1
	}
	return usec, err
}

// stillAt reports whether the counts kept were read at CPU time cpu.
func (s *stillCounts) stillAt(cpu int64) bool { return s.cpu == cpu+1 }

// keep keeps pids and ooms as read at CPU time cpu, or nothing if a read failed.
func (s *stillCounts) keep(cpu, pids, ooms int64, err error) {
	s.cpu, s.pids, s.ooms = 0, pids, ooms
	if err == nil {
		s.cpu = cpu + 1
	}
}

// usageHybrid reads CPU time from the cgroup2 group's cpu.stat (there without any
// controller), memory and OOM kills from the v1 memory group and pids from the v1 pids
// group where a limit joined them; without those, memory (resident set size, as
// UsageFromProc) and pids come from /proc over the cgroup2 group's processes.
func (g *Group) usageHybrid(buf *[]byte) (Usage, error) {
	usec, err := g.cpuUsec(g.unified, buf)
	if err != nil {
		return Usage{}, err // gone: the v1 groups, made and removed with it, are too
	}
	u, err := g.usageV1(g.joined, buf)
	u.CPUSeconds = float64(usec) / 1e6
	memory, pids := dirOf(g.joined, "memory") != "", dirOf(g.joined, "pids") != ""
	if memory && pids {
		return u, err
	}
	members, err2 := g.members, error(nil)
	if !g.still.stillAt(usec) || !g.still.members {
		members, err2 = g.pids(buf)
		g.still.keep(usec, 0, 0, err2)
		g.still.members = err2 == nil
	}
	p := g.usageOfPids("/proc", members, buf)
	if !memory {
		u.MemoryBytes = p.MemoryBytes
	}
	if !pids {
		u.Pids = p.Pids
	}
	return u, errors.Join(err, err2)
}

func (g *Group) usageV2(dir string, buf *[]byte) (Usage, error) {
	usec, err := g.cpuUsec(dir, buf)
	if err != nil {
		return Usage{}, err // gone, most likely: the rest would say so four times more
	}
	current, err2 := g.readInt(dir, "memory.current", buf)
	inactive, err3 := g.readKey(dir, "memory.stat", "inactive_file", buf)
	pids, ooms := g.still.pids, g.still.ooms
	var err4, err5 error
	if !g.still.stillAt(usec) {
		pids, err4 = g.readInt(dir, "pids.current", buf)
		ooms, err5 = g.readKey(dir, "memory.events", "oom_kill", buf)
		g.still.keep(usec, pids, ooms, errors.Join(err4, err5))
	}
	u := Usage{
		CPUSeconds:  float64(usec) / 1e6,
		MemoryBytes: max(current-inactive, 0),
		Pids:        pids,
		OOMKills:    ooms,
	}
	return u, errors.Join(err2, err3, err4, err5)
}

func (g *Group) usageV1(places []place, buf *[]byte) (Usage, error) {
	var u Usage
	var errs []error
	if dir := dirOf(places, "cpuacct"); dir != "" {
		ns, err := g.readInt(dir, "cpuacct.usage", buf)
		u.CPUSeconds, errs = float64(ns)/1e9, append(errs, err)
	}
	if dir := dirOf(places, "memory"); dir != "" {
		usage, err1 := g.readInt(dir, "memory.usage_in_bytes", buf)
		inactive, err2 := g.readKey(dir, "memory.stat", "total_inactive_file", buf)
		ooms, err3 := g.readKey(dir, "memory.oom_control", "oom_kill", buf)
		u.MemoryBytes, u.OOMKills = max(usage-inactive, 0), ooms
		errs = append(errs, err1, err2, err3)
	}
	if dir := dirOf(places, "pids"); dir != "" {
		n, err := g.readInt(dir, "pids.current", buf)
		u.Pids, errs = n, append(errs, err)
	}
	return u, errors.Join(errs...)
}
