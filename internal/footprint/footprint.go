// Package footprint keeps tend's steady state small beside the workload it
// supervises: anonymous memory (the heap it no longer needs goes back to the
// kernel, a lower GC target) and CPU (one P once started).
//
// It does not touch the executable's pages: they are clean, shared with every other
// tend command and reclaimable by the kernel under pressure, so dropping them from
// the page cache saved nothing real and made the first stop and the next `tend`
// command read the binary from disk again (docs/design.md "Performance").
package footprint

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

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

// steadyProcs is the GOMAXPROCS tend runs with once started, unless GOMAXPROCS is
// set. A supervisor's steady work is small bursts (a batch of probe checks, an exit,
// a line of output) that one thread runs in microseconds; with more Ps every burst
// also wakes a second thread to look for work (futex wake, spin, sleep again), which
// costs about as much as the work: 200 probe checks a second take 12-15 % less CPU
// on one P. Start-up keeps every CPU, and a download's rate is the same on one P (it
// reads, hashes and writes in one goroutine).
const steadyProcs = 1

// readyGrace is how long after the instance is first ready its footprint is trimmed
// again, when that is after the first trim.
var readyGrace = time.Second

// SettleAfterStartup trims tend's footprint a little after start (not before: the
// first container's exec must not wait for it): it returns the heap that start-up
// used to the kernel (the Go runtime would otherwise keep it for reuse, and a
// supervisor's steady state needs far less than its start-up did); from then on the collector
// keeps a smaller heap (steadyGCPercent) and Go code runs on steadyProcs threads.
//
// It returns the function to call when the instance turns ready. The first time,
// if the first trim has run by then, tend trims once more readyGrace later: probes
// with an initial delay make their first checks (connections opened, code and data
// read for the first time) only when the instance is about to be ready, and what
// those touch would otherwise stay. With 200 checks a second starting 2 s after
// start, RSS 15 s into the run 10.5-10.9 -> 9.5-9.7 MiB, 35 s into it 11.0 ->
// 10.3-10.4 (bench/README.md in its git history, series 9).
func SettleAfterStartup() (ready func()) {
	var settled atomic.Bool
	trim, again, keep := trim, readyGrace, keepTrimmed
	time.AfterFunc(startupGrace, func() {
		trim()
		settled.Store(true)
		go keep()
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			if settled.Load() {
				time.AfterFunc(again, trim)
			}
		})
	}
}

// trim is settle, and keepTrimmed keepTrimmedEvery; variables for tests.
var (
	trim        = settle
	keepTrimmed = func() { keepTrimmedEvery(trimEvery) }
)

// trimEvery is how often keepTrimmedEvery looks whether tend has allocated enough
// since its last trim (trimAfter) to trim again.
const (
	trimEvery = 10 * time.Second
	trimAfter = 256 << 10
)

// keepTrimmedEvery hands the heap tend no longer uses back to the kernel, every
// period in which tend allocated at least trimAfter bytes: a collection, then every
// free page returned (debug.FreeOSMemory). The runtime's own scavenger does not do it
// here: it leaves alone the free pages of a 4 MB heap chunk that is nearly all in
// use (to keep it one huge page), and a supervisor's whole heap is one or two such
// chunks. What a probe's connections leave when they are replaced every 10 s then
// stayed: with 200 checks a second, RSS 10.2-10.6 MiB from 25 s on, against 8.9
// without the replacements; trimmed, 9.4-9.9 (bench/README.md in its git history, series 9), for a
// collection every 10 s (the same CPU in 35 s windows). An idle tend allocates
// nothing and is never woken for more than the look.
//
// It reads the allocation count with runtime.ReadMemStats, which stops the world for
// microseconds once a period: importing runtime/metrics instead added 0.15-0.25 ms
// to every launch (its package initialisation).
func keepTrimmedEvery(period time.Duration) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	last := m.TotalAlloc
	for range time.Tick(period) {
		runtime.ReadMemStats(&m)
		if m.TotalAlloc-last >= trimAfter {
			debug.FreeOSMemory()
			last = m.TotalAlloc
		}
	}
}

// settle applies the steady-state settings; GOGC and GOMAXPROCS set in the
// environment win.
func settle() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(steadyGCPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(steadyProcs)
	}
	debug.FreeOSMemory()
}
