package lowmem

import (
	"os"
	"runtime/debug"
	"testing"
	"time"
)

// waitGCPercent polls the collector's setting (nothing announces the change) until it
// is want or a generous deadline passes, and restores the default.
func waitGCPercent(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := debug.SetGCPercent(100)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC after start-up = %d, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSteadyGCPercentAfterStartup(t *testing.T) {
	defer func(d time.Duration) { startupGrace = d }(startupGrace)
	startupGrace = time.Millisecond
	if v, ok := os.LookupEnv("GOGC"); ok {
		t.Skipf("GOGC=%s is set in the environment", v)
	}
	debug.SetGCPercent(100)
	ReleaseAfterStartup()
	waitGCPercent(t, steadyGCPercent)
}

func TestGOGCFromEnvironmentWins(t *testing.T) {
	defer func(d time.Duration) { startupGrace = d }(startupGrace)
	startupGrace = time.Millisecond
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(100)
	ReleaseAfterStartup()
	time.Sleep(100 * time.Millisecond) // the release has run by then; nothing to wait on
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC = %d with GOGC=100 in the environment, want 100", got)
	}
}
