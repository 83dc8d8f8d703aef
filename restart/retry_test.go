package restart

import (
	"slices"
	"testing"
	"time"
)

func TestRetry(t *testing.T) {
	growing := TimeLimit{InitialDelay: 700 * ms, MinPeriod: 1000 * ms, MaxPeriod: 20000 * ms, Scale: 500 * ms, BackOff: 3}
	tests := []struct {
		name      string
		tl        TimeLimit
		maxTries  int
		succeedAt int // 0: never
		stopAfter int // wait reports false on this call (0: never)
		wantOK    bool
		wantTries int
		wantWaits []time.Duration
	}{
		{"first try succeeds", growing, 3, 1, 0, true, 1, []time.Duration{700 * ms}},
		{"period grows with failures", growing, 4, 0, 0, false, 4, []time.Duration{700 * ms, 1500 * ms, 2500 * ms, 5500 * ms}},
		{"third try succeeds", growing, 5, 3, 0, true, 3, []time.Duration{700 * ms, 1500 * ms, 2500 * ms}},
		{"max_tries 0 still tries once", TimeLimit{MinPeriod: time.Second, MaxPeriod: time.Minute, BackOff: 1}, 0, 0, 0, false, 1, nil},
		{"a wait that gives up ends it", growing, 5, 0, 2, false, 1, []time.Duration{700 * ms, 1500 * ms}},
		{"giving up during the initial delay: no try", growing, 5, 0, 1, false, 0, []time.Duration{700 * ms}},
	}
	for _, tt := range tests {
		var waits []time.Duration
		tries := 0
		ok := Retry(tt.tl, tt.maxTries, func(d time.Duration) bool {
			// The tries take no time here, so each wait is the full period (rounded
			// against the clock's progress between the try and the wait).
			waits = append(waits, d.Round(100*ms))
			return len(waits) != tt.stopAfter
		}, func(n int) bool {
			tries++
			if n != tries {
				t.Errorf("%s: try numbered %d, want %d", tt.name, n, tries)
			}
			return n == tt.succeedAt
		})
		if ok != tt.wantOK || tries != tt.wantTries || !slices.Equal(waits, tt.wantWaits) {
			t.Errorf("%s: ok=%v tries=%d waits=%v; want ok=%v tries=%d waits=%v", tt.name, ok, tries, waits, tt.wantOK, tt.wantTries, tt.wantWaits)
		}
	}
}
