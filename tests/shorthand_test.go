package tests

import (
	"path/filepath"
	"testing"
	"time"
)

// A probe written with the shorthand runs at its period: period: 200ms checks about
// ten times in two seconds (the default period, 5 s, would check at most once), and
// initial_delay: 100ms lets the first check come long before the default 5 s.
func TestProbeShorthandPeriod(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, `
containers:
  - name: app
    command: sleep 600
    readiness_probe:
      exec: {command: "sh -c 'echo check >> {DIR}/checks'"}
      period: 200ms
      initial_delay: 100ms
      timeout: 1s
`)
	checks := filepath.Join(tp.dir, "checks")
	waitFile(t, 3*time.Second, checks)
	before := len(lines(t, checks))
	time.Sleep(2 * time.Second)
	n := len(lines(t, checks)) - before
	// Generous bounds: a loaded machine delays checks, but never by half the run.
	if n < 5 || n > 15 {
		t.Errorf("%d checks in 2 s with period: 200ms, want about 10", n)
	}
	termAndWait(t, tp, 10*time.Second)
}
