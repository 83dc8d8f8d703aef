// Package lowmem keeps tend's resident set small. The kernel maps file pages around
// every page fault ("fault-around", 64 KiB at a time), so a Go binary whose code is
// touched here and there ends up almost wholly resident; for a PID 1 that sits beside
// the real workload, that is megabytes of RSS for code it never runs. Marking the
// executable's mappings MADV_RANDOM turns fault-around off for them.
package lowmem

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// AdviseExecutable marks every mapping of the running executable MADV_RANDOM and
// drops the pages already mapped, so only the pages actually used come back. Errors
// are ignored: it is an optimisation only.
func AdviseExecutable() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		madvise(uintptr(start), uintptr(end-start), unix.MADV_RANDOM)
		madvise(uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}

func madvise(addr, length uintptr, advice int) {
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice))
}

// startupGrace is how long after start-up the memory that only start-up needed (the
// spec's parse tree, first allocations of every container) is handed back.
var startupGrace = 2 * time.Second

// steadyGCPercent is the GOGC tend runs with once started, unless GOGC is set. The
// runtime's smallest heap goal is 4 MB × GOGC/100; a supervisor's live heap is a
// megabyte or two, so at the default 100 half the heap is garbage waiting for a
// collection. At 50 the goal is 2 MB: 1–1.5 MiB less RSS under 200 probes a second,
// for collections that are cheap at this heap size (no CPU difference measurable).
// Start-up keeps the default: a collection in the middle of it would delay the
// first container.
const steadyGCPercent = 50

// ReleaseAfterStartup trims tend's resident set once, a little after start (not
// before: the first container's exec must not wait for it): it returns the heap that
// start-up used to the kernel (the Go runtime would otherwise keep it for reuse, and a
// supervisor's steady state needs far less than its start-up did), and lets only the
// executable's pages that are really used come back; from then on the collector
// keeps a smaller heap (steadyGCPercent).
func ReleaseAfterStartup() {
	time.AfterFunc(startupGrace, func() {
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(steadyGCPercent)
		}
		AdviseExecutable()
		debug.FreeOSMemory()
	})
}
