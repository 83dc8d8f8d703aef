//go:build soak

package tests

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// TestSoakFrozenTend is part of `make soak`: tend is SIGSTOPped for SOAK_FREEZE
// (default 30s) and SIGCONTed, as a paused VM or a checkpointed container would be,
// with containers kept alive by WATCHDOG=1 (3 s watchdog, a ping every 0.5 s) and by
// exec liveness probes (one quick, one nearly always in flight). It prints how many
// were killed after the freeze: it must be 0.
func TestSoakFrozenTend(t *testing.T) {
	freeze := 30 * time.Second
	if v := os.Getenv("SOAK_FREEZE"); v != "" {
		var err error
		if freeze, err = time.ParseDuration(v); err != nil {
			t.Fatalf("SOAK_FREEZE: %v", err)
		}
	}
	tp := startLifecycle(t, `
containers:
  - name: pinging
    command: ["{SELF}", "READY=1", "pings:500"]
    readiness_probe: {notify: {watchdog_ms: 3000}}
  - name: exec-quick
    command: [sleep, "3600"]
    liveness_probe:
      exec: {command: ["true"]}
      time_limit: {max_execution_time_ms: 1000, min_restart_period_ms: 100, max_restart_period_ms: 100}
  - name: exec-in-flight
    command: [sleep, "3600"]
    liveness_probe:
      exec: {command: [sleep, "0.3"]}
      time_limit: {max_execution_time_ms: 1000, min_restart_period_ms: 20, max_restart_period_ms: 20}
`)
	names := []string{"pinging", "exec-quick", "exec-in-flight"}
	doc := tp.waitStatus(10*time.Second, "all up", func(d status.Document) bool {
		for _, n := range names {
			if c := containerStatus(d, n); !c.Alive.True() || c.Pid == nil {
				return false
			}
		}
		return containerStatus(d, "pinging").Ready.True()
	})
	pids := map[string]int{}
	for _, n := range names {
		pids[n] = *containerStatus(doc, n).Pid
	}
	freezeTend(t, tp, freeze, 0)
	time.Sleep(5 * time.Second) // more than a watchdog period and a check
	doc, ok := tp.status()
	if !ok {
		t.Fatal("tend not answering after the freeze")
	}
	killed := 0
	for _, n := range names {
		if c := containerStatus(doc, n); c.Restarts != 0 || c.Pid == nil || *c.Pid != pids[n] || !c.Alive.True() {
			killed++
			t.Errorf("%s was killed: restarts %d, last_exit %+v", n, c.Restarts, c.LastExit)
		}
	}
	fmt.Printf("frozen tend: %v SIGSTOP, then SIGCONT: containers killed %d of %d (must be 0)\n", freeze, killed, len(names))
}
