package footprint

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
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

// The footprint is trimmed once after start-up, and once more after the instance is
// first ready if that comes after the first trim; never more.
func TestTrimmedAgainAfterLateReadiness(t *testing.T) {
	defer func(grace, ready time.Duration, f, k func()) {
		startupGrace, readyGrace, trim, keepTrimmed = grace, ready, f, k
	}(startupGrace, readyGrace, trim, keepTrimmed)
	keepTrimmed = func() {}
	startupGrace, readyGrace = 5*time.Millisecond, 5*time.Millisecond
	var trims atomic.Int32
	trim = func() { trims.Add(1) }
	waitTrims := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for trims.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d trims, want %d", trims.Load(), want)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // ten graces: no further trim comes
		if got := trims.Load(); got != want {
			t.Fatalf("%d trims, want %d", got, want)
		}
	}

	// Ready before the first trim: that trim comes after the first checks anyway.
	trims.Store(0)
	startupGrace = 30 * time.Millisecond
	ready := SettleAfterStartup()
	ready()
	waitTrims(1)

	// Ready after it, twice: one more trim.
	trims.Store(0)
	startupGrace = 5 * time.Millisecond
	ready = SettleAfterStartup()
	waitTrims(1)
	ready()
	ready()
	waitTrims(2)
}

// keepTrimmedEvery collects and hands memory back after a period in which tend
// allocated, and not after one in which it did not.
func TestKeptTrimmedWhenAllocating(t *testing.T) {
	forced := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	count := func() uint64 { metrics.Read(forced); return forced[0].Value.Uint64() }
	go keepTrimmedEvery(20 * time.Millisecond) // runs until the test binary exits

	before := count()
	deadline := time.Now().Add(5 * time.Second)
	for count() == before {
		if time.Now().After(deadline) {
			t.Fatal("no collection forced within 5 s of allocating 4 MB every 10 ms")
		}
		sink = make([]byte, 4<<20)
		time.Sleep(10 * time.Millisecond)
	}
	sink = nil
	time.Sleep(100 * time.Millisecond) // a trim may follow what was allocated above
	before = count()
	time.Sleep(200 * time.Millisecond) // ten periods without allocating
	if n := count() - before; n > 0 {
		t.Errorf("%d collections forced while nothing was allocated", n)
	}
}

var sink []byte

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
