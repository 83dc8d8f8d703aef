package proc

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
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
func KillMarked(mark string, timeout time.Duration) int {
	if mark == "" {
		return 0
	}
	return killMarked(func(v string) bool { return v == mark }, candidates, timeout)
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

// candidates are the processes a mark is looked for on: tend's descendants where
// orphans come to it, else every process.
func candidates() []int {
	if self := os.Getpid(); self == 1 || subreaper.Load() {
		return Descendants(self)
	}
	return allPids()
}

// allPids lists every process in /proc but tend.
func allPids() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
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
		for _, p := range pids() {
			// The pidfd first: the process checked is the process killed, even if its
			// pid is reused meanwhile.
			fd, err := unix.PidfdOpen(p, 0)
			if err != nil {
				continue
			}
			if !marked(p, &buf, match) || unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) != nil {
				unix.Close(fd)
				continue
			}
			killed[p] = true
			fds = append(fds, fd)
		}
		if len(fds) == 0 {
			break
		}
		waitPidfds(fds, time.Until(deadline))
	}
	return len(killed)
}

// maxEnviron bounds how much of a process's environment is read.
const maxEnviron = 1 << 20

// marked says whether the environment of p holds a TEND_RUN that match accepts.
func marked(p int, buf *[]byte, match func(string) bool) bool {
	fd, err := unix.Open("/proc/"+strconv.Itoa(p)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	b := (*buf)[:0]
	for len(b) < maxEnviron {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b))
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if n <= 0 || err != nil {
			break
		}
		b = b[:len(b)+n]
	}
	*buf = b
	prefix := []byte(RunMarkVar + "=")
	for len(b) > 0 {
		var kv []byte
		kv, b, _ = bytes.Cut(b, []byte{0})
		if v, ok := bytes.CutPrefix(kv, prefix); ok && match(string(v)) {
			return true
		}
	}
	return false
}
