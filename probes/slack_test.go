package probes

import (
	"testing"
	"time"
)

func TestSlack(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct{ period, want time.Duration }{
		{10 * ms, 0}, // under 16 ms: checks run on time
		{15 * ms, 0},
		{16 * ms, 1 * ms},
		{50 * ms, 2 * ms},
		{100 * ms, 4 * ms},
		{511 * ms, 16 * ms},
		{512 * ms, 32 * ms},
		{1000 * ms, 32 * ms},
		{60000 * ms, 32 * ms}, // capped
	}
	for _, tt := range tests {
		if got := slack(tt.period); got != tt.want {
			t.Errorf("slack(%v) = %v, want %v", tt.period, got, tt.want)
		}
	}
}

func TestCoalesce(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name              string
		wait, grid, since time.Duration
		want              time.Duration
	}{
		{"ends on the grid already", 1000 * ms, 32 * ms, 24 * ms, 1000 * ms}, // 1024 = 32×32
		{"one past the grid", 1000 * ms, 32 * ms, 25 * ms, 1031 * ms},
		{"one short of the grid", 999 * ms, 32 * ms, 24 * ms, 1000 * ms},
		{"no grid", 999 * ms, 0, 24 * ms, 999 * ms},
		{"overran its period: at once", 0, 32 * ms, 25 * ms, 0},
	}
	for _, tt := range tests {
		if got := coalesce(tt.wait, tt.grid, tt.since); got != tt.want {
			t.Errorf("%s: coalesce(%v, %v, %v) = %v, want %v", tt.name, tt.wait, tt.grid, tt.since, got, tt.want)
		}
	}
	// Whatever the phase: never early, less than one grid step late, on the grid.
	for since := time.Duration(0); since < 100*ms; since += 7 * ms / 3 {
		got := coalesce(1000*ms, 32*ms, since)
		if got < 1000*ms || got-1000*ms >= 32*ms || (since+got)%(32*ms) != 0 {
			t.Errorf("coalesce(1s, 32ms, %v) = %v", since, got)
		}
	}
}
