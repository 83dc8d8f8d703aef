package restart

import (
	"context"
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestPolicyDelay(t *testing.T) {
	p := Policy{MinPeriod: 1000 * ms, MaxPeriod: 60000 * ms, Backoff: 2, MaxJitter: 1000 * ms, StableAfter: 60000 * ms}
	tests := []struct {
		name  string
		p     Policy
		fails int
		rnd   float64
		want  time.Duration
	}{
		{"stable run restarts at once", p, 0, 0.5, 0},
		{"first short run: min period", p, 1, 0, 1000 * ms},
		{"first short run with half jitter", p, 1, 0.5, 1500 * ms},
		{"second short run doubles", p, 2, 0, 2000 * ms},
		{"fourth short run", p, 4, 0.25, 8250 * ms},
		{"capped at max period", p, 7, 0, 60000 * ms},
		{"jitter adds under max", p, 6, 0.999, 32999 * ms},
		{"huge fails does not overflow", p, 100000, 0.5, 60000 * ms},
		{"zero min period, zero jitter: no delay", Policy{MaxPeriod: time.Minute, Backoff: 2}, 3, 0.7, 0},
		{"backoff 1 keeps the period", Policy{MinPeriod: 300 * ms, MaxPeriod: time.Minute, Backoff: 1}, 9, 0, 300 * ms},
	}
	for _, tt := range tests {
		got := tt.p.Delay(tt.fails, func() float64 { return tt.rnd })
		if got > tt.want+time.Microsecond || got < tt.want-time.Microsecond {
			t.Errorf("%s: Delay(%d, %v) = %v, want %v", tt.name, tt.fails, tt.rnd, got, tt.want)
		}
	}
}

func TestPolicyFails(t *testing.T) {
	p := Policy{StableAfter: 60 * time.Second}
	if got := p.Fails(3, 59*time.Second); got != 4 {
		t.Errorf("short run: fails = %d, want 4", got)
	}
	if got := p.Fails(3, 60*time.Second); got != 0 {
		t.Errorf("run of exactly stable_after resets: fails = %d, want 0", got)
	}
	if got := (Policy{}).Fails(5, 0); got != 0 {
		t.Errorf("stable_after 0 makes every run stable: fails = %d, want 0", got)
	}
}

func TestTimeLimitPeriod(t *testing.T) {
	fixed := TimeLimit{MinPeriod: 5000 * ms, MaxPeriod: 60000 * ms, BackOff: 1}
	growing := TimeLimit{MinPeriod: 1000 * ms, MaxPeriod: 20000 * ms, Scale: 500 * ms, BackOff: 3}
	tests := []struct {
		name    string
		tl      TimeLimit
		counter int
		want    time.Duration
	}{
		{"default probe period is fixed", fixed, 0, 5000 * ms},
		{"fixed after many successes", fixed, 40, 5000 * ms},
		{"counter 0: step 0", growing, 0, 1500 * ms},
		{"counter 1: step 0", growing, 1, 1500 * ms},
		{"counter 2: step 1", growing, 2, 2500 * ms},
		{"counter 3: step 2", growing, 3, 5500 * ms},
		{"counter 4: step 3", growing, 4, 14500 * ms},
		{"counter 5: capped", growing, 5, 20000 * ms},
		{"overflow is capped", growing, 1 << 20, 20000 * ms},
		{"max below min: max wins", TimeLimit{MinPeriod: 10 * time.Second, MaxPeriod: time.Second, BackOff: 1}, 0, time.Second},
	}
	for _, tt := range tests {
		if got := tt.tl.Period(tt.counter); got != tt.want {
			t.Errorf("%s: Period(%d) = %v, want %v", tt.name, tt.counter, got, tt.want)
		}
	}
}

func TestTimeLimitWait(t *testing.T) {
	tl := TimeLimit{MinPeriod: time.Second, MaxPeriod: time.Minute, BackOff: 1}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := tl.Wait(0, start, start.Add(300*ms)); got != 700*ms {
		t.Errorf("short run: Wait = %v, want 700ms", got)
	}
	if got := tl.Wait(0, start, start.Add(5*time.Second)); got != 0 {
		t.Errorf("run longer than the period: Wait = %v, want 0", got)
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), 0) {
		t.Error("Sleep(0) with a live context = false, want true")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep(1ms) = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep(1h) with a cancelled context = true, want false at once")
	}
	if Sleep(ctx, 0) {
		t.Error("Sleep(0) with a cancelled context = true, want false")
	}
}

// TestPolicyDelayHugeCounts: the delay after very many short runs is the formula's,
// not the maximum: 0 * 2^1024 used to be NaN, which capped turned into max_period_ms.
func TestPolicyDelayHugeCounts(t *testing.T) {
	zero := Policy{MaxPeriod: time.Minute, Backoff: 2}
	fixed := Policy{MinPeriod: 300 * ms, MaxPeriod: time.Minute, Backoff: 1}
	growing := Policy{MinPeriod: ms, MaxPeriod: time.Minute, Backoff: 1.5, MaxJitter: time.Second}
	tests := []struct {
		name  string
		p     Policy
		fails int
		rnd   float64
		want  time.Duration
	}{
		{"min 0 after 1024 fails", zero, 1025, 0, 0},
		{"min 0 after 1025 fails", zero, 1026, 0.99, 0},
		{"min 0 after MaxInt fails", zero, math.MaxInt, 0, 0},
		{"min 0 with jitter after MaxInt fails", Policy{MaxPeriod: time.Minute, Backoff: 2, MaxJitter: time.Second}, math.MaxInt, 0.5, 500 * ms},
		{"backoff 1 after MaxInt fails", fixed, math.MaxInt, 0, 300 * ms},
		{"growth reaches the max", growing, 100, 0, time.Minute},
		{"growth past +Inf is the max", growing, 5000, 0.5, time.Minute},
		{"growth after MaxInt fails is the max", growing, math.MaxInt, 0.99, time.Minute},
		{"largest durations", Policy{MinPeriod: math.MaxInt64, MaxPeriod: math.MaxInt64, Backoff: math.MaxFloat64, MaxJitter: math.MaxInt64}, math.MaxInt, 0.99, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := tt.p.Delay(tt.fails, func() float64 { return tt.rnd }); got != tt.want {
			t.Errorf("%s: Delay(%d, %v) = %v, want %v", tt.name, tt.fails, tt.rnd, got, tt.want)
		}
	}
}

// TestTimeLimitPeriodHugeCounts: a scale of 0 keeps the period at its minimum
// however many the runs (0 * back_off^step used to be NaN, hence the maximum).
func TestTimeLimitPeriodHugeCounts(t *testing.T) {
	tl := TimeLimit{MinPeriod: 5 * time.Second, MaxPeriod: time.Minute, BackOff: 2}
	for _, counter := range []int{1025, 1 << 20, math.MaxInt} {
		if got := tl.Period(counter); got != 5*time.Second {
			t.Errorf("scale 0: Period(%d) = %v, want 5s", counter, got)
		}
	}
	tl.Scale = time.Second
	if got := tl.Period(math.MaxInt); got != time.Minute {
		t.Errorf("scale 1s: Period(MaxInt) = %v, want 1m0s", got)
	}
}

// FuzzDelay checks Delay over its whole input space: never negative, never above
// max_period_ms, no panic; and for a policy validation accepts and no jitter, never
// shorter after one more failure.
func FuzzDelay(f *testing.F) {
	f.Add(int64(0), int64(60000), 2.0, int64(0), 1025, 0.0)
	f.Add(int64(1000), int64(60000), 2.0, int64(1000), 7, 0.5)
	f.Add(int64(1), int64(math.MaxInt64), 1.0000001, int64(0), math.MaxInt, 0.999)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), math.MaxFloat64, int64(math.MaxInt64), 3, 0.0)
	f.Add(int64(-5), int64(-1), math.NaN(), int64(-7), -1, -0.5)
	f.Fuzz(func(t *testing.T, minNs, maxNs int64, backoff float64, jitterNs int64, fails int, rnd float64) {
		p := Policy{MinPeriod: time.Duration(minNs), MaxPeriod: time.Duration(maxNs), Backoff: backoff, MaxJitter: time.Duration(jitterNs)}
		got := p.Delay(fails, func() float64 { return rnd })
		if got < 0 || got > max(0, p.MaxPeriod) {
			t.Fatalf("%+v: Delay(%d, %v) = %v, want within [0, %v]", p, fails, rnd, got, max(0, p.MaxPeriod))
		}
		valid := minNs >= 0 && maxNs >= minNs && backoff >= 1 && !math.IsInf(backoff, 0)
		if !valid || fails <= 0 || fails == math.MaxInt {
			return
		}
		p.MaxJitter = 0
		now, next := p.Delay(fails, func() float64 { return 0 }), p.Delay(fails+1, func() float64 { return 0 })
		if next < now {
			t.Fatalf("%+v: Delay(%d) = %v but Delay(%d) = %v: shorter after one more failure", p, fails, now, fails+1, next)
		}
	})
}
