package restart

import (
	"context"
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
