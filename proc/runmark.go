package proc

import (
	"bytes"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// RunMarkVar is the variable that marks every process of a container's run (its
// command, what that starts, its init commands, probes and handlers) and of an init
// container's run: TEND_RUN=<instance>/<name>/<run id>, the instance being its real
// instance.dir (docs/reference.md "Cgroups and limits"). Without cgroups it is how tend finds, when the run ends,
// the processes that left the run's process group (setsid, a double fork).
const RunMarkVar = "TEND_RUN"

// ownPid is tend's pid, read once: os.Getpid is a system call each time, and every
// run's end (its scan for marks) asked for it.
var ownPid = os.Getpid()

// runIDs numbers the runs of this tend.
var runIDs atomic.Uint64

// NewRunMark is the mark of a new run of name (a container or init container) of
// instance: unique in this tend's life. An earlier tend's marks are gone before the
// first (KillInstanceMarked).
func NewRunMark(instance, name string) string {
	return instance + "/" + name + "/" + strconv.FormatUint(runIDs.Add(1), 10)
}

// WithRunMark is a copy of env with TEND_RUN=mark in place of any TEND_RUN there (an
// outer tend's, when tend runs below another).
func WithRunMark(env []string, mark string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, RunMarkVar+"=") {
			out = append(out, kv)
		}
	}
	return append(out, RunMarkVar+"="+mark)
}

// markRounds bounds the scans of a kill by mark: each round kills what it finds and
// waits for it to exit; a process forked meanwhile carries the mark to the next.
const markRounds = 20

// KillMarked kills every process that carries mark and that tend can see below itself
// (as a child subreaper or PID 1 every orphan of its runs comes to it; else every
// process), until a scan finds none or timeout passes. It returns how many it killed.
// It reads the environment of each process looked at: call it when a run ends, not on
// a hot path.
//
// Runs that end together (every container at a stop) share their scans: the calls
// waiting are served by one sweeper goroutine, whose each scan looks for every mark
// asked for until then. A scan reads every process tend can see, so one per run made
// a stop with N containers cost N scans of up to N processes: SIGTERM → exit with 100
// idle containers took 345 ms against 149 before the marks; with the scans shared and
// other runs' processes skipped (markCandidates), 167 ms (interleaved, on a loaded
// 2-CPU machine).
func KillMarked(mark string, timeout time.Duration) int {
	done := make(chan int, 1)
	KillMarkedThen(mark, timeout, func(n int) { done <- n })
	return <-done
}

// KillMarkedThen is KillMarked without the wait: then gets how many it killed, on the
// sweeper's goroutine (or the caller's, for no mark), and must not block. The exit of
// a run without a cgroup needs no goroutine of its own to wait (Container.exited).
func KillMarkedThen(mark string, timeout time.Duration, then func(killed int)) {
	if mark == "" {
		then(0)
		return
	}
	k := &markKill{mark: mark, deadline: time.Now().Add(timeout), killed: map[int]bool{}, then: then}
	sweep.mu.Lock()
	sweep.pending = append(sweep.pending, k)
	if !sweep.running {
		sweep.running = true
		go sweepMarks()
	}
	sweep.mu.Unlock()
}

// markKill is one KillMarkedThen call waiting for the sweeper.
type markKill struct {
	mark     string
	deadline time.Time
	rounds   int
	killed   map[int]bool
	then     func(killed int) // called when a scan found none of its processes, or at the deadline
}

func (k *markKill) finish() { k.then(len(k.killed)) }

// sweep holds the calls no scan has looked for yet; running says a sweeper goroutine
// is at work (it takes them at its next scan).
var sweep struct {
	mu      sync.Mutex
	pending []*markKill
	running bool
}

// sweepScanned is called at the start of each scan of the sweeper (a test counts them).
var sweepScanned = func() {}

// sweepMarks scans for the marks of every waiting call at once, kills what carries
// them, waits for it to exit and scans again for the calls it found processes of
// (a process forked meanwhile carries the mark to the next scan), until no call waits.
func sweepMarks() {
	// Let the calls made ready together reach the list first: the reaper runs the
	// callbacks of the exits it reaped one after another, the first starts this
	// sweeper, and the sweeper run at once (on another P, or on one P before the
	// callers' goroutines) would scan for the first alone, then start again for the
	// others. SIGTERM → exit of 50 containers without cgroups: 50 scans, then 4.
	runtime.Gosched()
	var again []*markKill // found processes in the last scan: looked for once more
	buf := make([]byte, 0, 8<<10)
	for {
		sweep.mu.Lock()
		batch := append(again, sweep.pending...)
		sweep.pending = nil
		if len(batch) == 0 {
			sweep.running = false
			sweep.mu.Unlock()
			return
		}
		sweep.mu.Unlock()
		again = nil

		now := time.Now()
		byMark := map[string][]*markKill{}
		for _, k := range batch {
			if k.rounds >= markRounds || !now.Before(k.deadline) {
				k.finish()
				continue
			}
			k.rounds++
			byMark[k.mark] = append(byMark[k.mark], k)
		}
		if len(byMark) == 0 {
			continue
		}
		sweepScanned()
		found := map[string]bool{}
		want := func(v string) bool { return len(byMark[v]) > 0 }
		var fds []int
		for _, c := range killCarriers(markCandidates(byMark), want, &buf, nearest(byMark)) {
			for _, k := range byMark[c.mark] {
				k.killed[c.pid] = true
			}
			found[c.mark] = true
			fds = append(fds, c.fd)
		}
		wait := time.Duration(0)
		for mark, ks := range byMark {
			for _, k := range ks {
				if !found[mark] {
					k.finish()
					continue
				}
				again = append(again, k)
				if d := time.Until(k.deadline); wait == 0 || d < wait {
					wait = d
				}
			}
		}
		if len(fds) > 0 {
			waitPidfds(fds, wait)
		}
	}
}

// KillInstanceMarked kills every process tend can see that carries a mark of
// instance: what an earlier tend of the instance left when it crashed (docs/reference.md "What a container cannot make tend do"). It
// looks at every process (those orphans went elsewhere), once, at start.
func KillInstanceMarked(instance string, timeout time.Duration) int {
	return killMarked(func(v string) bool { return markInstance(v) == instance }, allPids, timeout)
}

// markInstance is the instance of a mark "<instance>/<name>/<id>" ("" if it is not one).
func markInstance(v string) string {
	i := strings.LastIndexByte(v, '/')
	if i <= 0 {
		return ""
	}
	j := strings.LastIndexByte(v[:i], '/')
	if j <= 0 {
		return ""
	}
	return v[:j]
}

// subreaper says whether orphans come to tend (BecomeSubreaper, or PID 1).
var subreaper atomic.Bool

// markCandidates are the processes the marks of looking can be on. Where orphans come
// to tend, what a run that ended left is below tend: the orphans reparented to it,
// and the processes it started with that run's mark (its probes and handlers), with
// everything below them. A child it started with another mark is the root of another
// run, or of one of its probes, and every process below it is that run's: its
// environment is not read (a stop of N containers read every container's environment
// at each of their exits). Elsewhere it is every process.
//
// The processes tend started are its registered children (running). An orphan is
// handed to the first living thread of tend, its main thread (the kernel's
// find_new_reaper; the Go runtime never ends the main thread), so only that thread's
// children are read, not every thread's: a scan at each run's end read a children
// file per thread of tend.
func markCandidates(looking map[string][]*markKill) []int {
	self := ownPid
	if self != 1 && !subreaper.Load() {
		return allPids()
	}
	buf := make([]byte, 0, 512)
	data, err := readChildren(&buf)
	if err != nil {
		return Descendants(self) // no children files (CONFIG_PROC_CHILDREN): every process below
	}
	var roots []int
	reapMu.RLock()
	runningMu.Lock()
	for pid, p := range running {
		if looking[p.mark] != nil {
			roots = append(roots, pid)
		}
	}
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil && running[c] == nil {
			roots = append(roots, c) // an orphan
		}
	}
	runningMu.Unlock()
	reapMu.RUnlock()
	var out []int
	for _, r := range roots {
		out = append(out, r)
		out = append(out, Descendants(r)...)
	}
	return out
}

// childrenFile is the children file of tend's main thread, opened once (openChildren,
// when the reaper starts) and read again from its start at each scan: its open was
// most of what a scan of a few children cost, 0.1 ms of a stop of one container.
var childrenFile struct {
	once sync.Once
	path string
	fd   int
	err  error
}

func openChildren() {
	childrenFile.once.Do(func() {
		p := "/proc/" + strconv.Itoa(ownPid) + "/task/" + strconv.Itoa(ownPid) + "/children"
		childrenFile.path = p
		childrenFile.fd, childrenFile.err = unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	})
}

// readChildren reads the children of tend's main thread into *buf.
func readChildren(buf *[]byte) ([]byte, error) {
	openChildren()
	if err := childrenFile.err; err != nil {
		return nil, &fs.PathError{Op: "open", Path: childrenFile.path, Err: err}
	}
	return preadAll(childrenFile.fd, childrenFile.path, buf)
}

// envMark is the TEND_RUN of env ("" if none).
func envMark(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, RunMarkVar+"="); ok {
			return v
		}
	}
	return ""
}

// allPids lists every process in /proc but tend.
func allPids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := ownPid
	var out []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil && p != self && p != 1 {
			out = append(out, p)
		}
	}
	return out
}

func killMarked(match func(string) bool, pids func() []int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	killed := map[int]bool{}
	buf := make([]byte, 0, 8<<10)
	for round := 0; round < markRounds && time.Now().Before(deadline); round++ {
		var fds []int
		for _, c := range killCarriers(pids(), match, &buf, deadline) {
			killed[c.pid] = true
			fds = append(fds, c.fd)
		}
		if len(fds) == 0 {
			break
		}
		waitPidfds(fds, time.Until(deadline))
	}
	return len(killed)
}

// carrier is a process killed for its mark: fd is its pidfd, to wait for its exit.
type carrier struct {
	pid, fd int
	mark    string
}

// execRetries are the waits before each new read of an environment found empty.
var execRetries = []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}

// killCarriers sends SIGKILL to each of pids whose mark want accepts (it is given
// the pidfd first: the process checked is the process killed, even if its pid is
// reused meanwhile). A process in the middle of an exec shows an empty environment
// for a moment (the kernel sets up the new one after it has switched to the new
// memory map: a leftover caught by the scan then escaped it), so a process with an
// empty environment that is not a kernel thread or a zombie is read again a few
// times (execRetries, until deadline).
func killCarriers(pids []int, want func(string) bool, buf *[]byte, deadline time.Time) []carrier {
	var out []carrier
	var empty []carrier // read again: mid-exec, or an environment that is empty
	check := func(p, fd int) (again bool) {
		v, st := markOf(p, buf)
		switch {
		case st == markEmpty && execing(p):
			return true
		case st == markFound && want(v) && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil:
			out = append(out, carrier{pid: p, fd: fd, mark: v})
		default:
			unix.Close(fd)
		}
		return false
	}
	for _, p := range pids {
		fd, err := unix.PidfdOpen(p, 0)
		if err != nil {
			continue
		}
		if check(p, fd) {
			empty = append(empty, carrier{pid: p, fd: fd})
		}
	}
	for _, d := range execRetries {
		if len(empty) == 0 || time.Until(deadline) < d {
			break
		}
		time.Sleep(d)
		still := empty[:0]
		for _, c := range empty {
			if check(c.pid, c.fd) {
				still = append(still, c)
			}
		}
		empty = still
	}
	for _, c := range empty {
		unix.Close(c.fd)
	}
	return out
}

// execing says whether p, whose environment reads empty, may be in the middle of an
// exec: it has an executable (a kernel thread or a zombie has none).
func execing(p int) bool {
	var b [1]byte
	_, err := unix.Readlink("/proc/"+strconv.Itoa(p)+"/exe", b[:])
	return err == nil
}

// nearest is the earliest deadline of the calls waiting on marks.
func nearest(byMark map[string][]*markKill) time.Time {
	var t time.Time
	for _, ks := range byMark {
		for _, k := range ks {
			if t.IsZero() || k.deadline.Before(t) {
				t = k.deadline
			}
		}
	}
	return t
}

// What markOf found in an environment.
type markState int

const (
	markNone  markState = iota // no mark, or the environment cannot be read
	markFound                  // a TEND_RUN
	markEmpty                  // an empty environment
)

// maxEnviron bounds how much of a process's environment is read.
const maxEnviron = 1 << 20

// markOf is the TEND_RUN in the environment of p.
func markOf(p int, buf *[]byte) (string, markState) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(p)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", markNone
	}
	defer unix.Close(fd)
	b := (*buf)[:0]
	for len(b) < maxEnviron {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			if err != nil && len(b) == 0 {
				return "", markNone
			}
			break
		}
		b = b[:len(b)+n]
	}
	*buf = b
	if len(b) == 0 {
		return "", markEmpty
	}
	prefix := []byte(RunMarkVar + "=")
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), markFound
		}
	}
	return "", markNone
}
