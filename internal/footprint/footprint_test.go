package footprint

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// restore puts the runtime settings back as the test found them.
func restore(t *testing.T) {
	gc := debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		debug.SetGCPercent(gc)
		runtime.GOMAXPROCS(procs)
	})
}

func TestSettledAfterStartup(t *testing.T) {
	for _, name := range []string{"GOGC", "GOMAXPROCS"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Skipf("%s=%s is set in the environment", name, v)
		}
	}
	restore(t)
	defer func(d time.Duration) { startupGrace = d }(startupGrace)
	startupGrace = time.Millisecond
	debug.SetGCPercent(100)
	runtime.GOMAXPROCS(2)
	SettleAfterStartup()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gc := debug.SetGCPercent(-1)
		debug.SetGCPercent(gc)
		procs := runtime.GOMAXPROCS(0)
		if gc == steadyGCPercent && procs == steadyProcs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after start-up GOGC = %d, GOMAXPROCS = %d; want %d and %d", gc, procs, steadyGCPercent, steadyProcs)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline: nothing announces the change
	}
}

func TestEnvironmentWins(t *testing.T) {
	restore(t)
	t.Setenv("GOGC", "100")
	t.Setenv("GOMAXPROCS", "2")
	debug.SetGCPercent(100)
	runtime.GOMAXPROCS(2)
	settle()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC = %d with GOGC=100 in the environment, want 100", got)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS = %d with GOMAXPROCS=2 in the environment, want 2", got)
	}
}
