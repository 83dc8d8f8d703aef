package tests

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// frozenSpecs: a container kept alive by its WATCHDOG=1s, and one by an exec liveness
// probe whose check (a sleep) is nearly always in flight, so that a freeze of tend
// lands in the middle of one: its child exits while tend is frozen, well within the
// time limit.
var frozenSpecs = map[string]string{
	"pinging": `
containers:
  - name: pinging
    command: ["{SELF}", "READY=1", "pings:100"]
    readiness_probe: {notify: {watchdog_ms: 1000}}
`,
	"probed": `
containers:
  - name: probed
    command: [sleep, "600"]
    liveness_probe:
      exec: {command: [sleep, "0.3"]}
      time_limit: {max_execution_time_ms: 1000, min_restart_period_ms: 20, max_restart_period_ms: 20}
`,
}

// freezeTend SIGSTOPs tend (its own pid, not the PID 1 namespace's unshare) for d, then
// SIGCONTs it; its children run on meanwhile, but for child (a host pid; 0: none),
// which is stopped with tend and continued 300 ms after it.
func freezeTend(t *testing.T, tp *tend, d time.Duration, child int) {
	t.Helper()
	pid := tp.pid()
	for _, p := range []int{child, pid} {
		if p == 0 {
			continue // never kill(0, ...): that is the test's own process group
		}
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %d: %v", p, err)
		}
	}
	time.Sleep(d)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT tend: %v", err)
	}
	if child != 0 {
		time.Sleep(300 * time.Millisecond)
		if err := syscall.Kill(child, syscall.SIGCONT); err != nil {
			t.Fatalf("SIGCONT %d: %v", child, err)
		}
	}
}

// frozenTend runs frozenSpecs[name], freezes tend n times for d, and fails unless
// the container is still its first process, alive, after each.
func frozenTend(t *testing.T, name string, n int, d time.Duration) {
	tp := startLifecycle(t, frozenSpecs[name])
	doc := tp.waitStatus(10*time.Second, name+" up", func(d status.Document) bool {
		c := containerStatus(d, name)
		return c.Alive.True() && c.Pid != nil && (name != "pinging" || c.Ready.True())
	})
	// A first process that took longer than its watchdog period to start (a race-built
	// helper on a loaded machine) was killed before the freezes: count from here. The
	// helper pings at once after READY=1, so a ready one has pinged within its first
	// period: a helper that took 930 ms to its READY=1 on a fresh CI machine, pinging
	// only 100 ms later, was killed between this status and the first freeze.
	pid, restarts := *containerStatus(doc, name).Pid, containerStatus(doc, name).Restarts
	// The pinging process is frozen too, so that tend resumes with its watchdog timer
	// long past and no WATCHDOG=1 waiting (with pings queued, the loop may read one
	// before the late timer, and a tend without stall detection would pass half the
	// time); it pings again 300 ms after tend resumes, within a fresh period.
	child := 0
	if name == "pinging" {
		child = tp.hostPid(pid)
	}
	for i := 0; i < n; i++ {
		freezeTend(t, tp, d, child)
		// Longer than a watchdog period and a check: a kill would have happened.
		time.Sleep(1500 * time.Millisecond)
		doc, ok := tp.status()
		if !ok {
			t.Fatal("tend not answering after the freeze")
		}
		if c := containerStatus(doc, name); c.Restarts != restarts || c.Pid == nil || *c.Pid != pid || !c.Alive.True() {
			t.Fatalf("after freeze %d: restarts %d, last_exit %+v, alive %+v", i+1, c.Restarts, c.LastExit, c.Alive)
		}
	}
	// tend's log reaches stderr through a queue of its own: wait for the line.
	if name == "pinging" {
		waitFor(t, 5*time.Second, "a log line saying tend was frozen", func() (bool, string) {
			return strings.Contains(tp.stderr.String(), "tend was frozen"), tail(tp.stderr.String(), 2000)
		})
	}
}

// A frozen tend (SIGSTOP, a VM pause, a checkpoint and restore) must not kill a
// healthy container when it resumes: its watchdog timer fires late, before any
// WATCHDOG=1 (the pinging process is frozen with it, see frozenTend). It gets a fresh
// period instead.
// Two freezes of 3 s, three watchdog periods each. The period is 1 s, well above the
// first ping's time: the race-built helper took more than 500 ms to reach it on a
// loaded machine, and was killed before the test began.
func TestFrozenTendKeepsWatchdog(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	frozenTend(t, "pinging", 2, 3*time.Second)
}

// Nor may it kill one whose exec check's child exited while tend was frozen: the
// check's time limit fires late, before the exit is reaped.
func TestFrozenTendKeepsExecProbed(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	frozenTend(t, "probed", 3, 2*time.Second)
}
