package probes

import (
	"context"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

const ms = time.Millisecond

func TestSlack(t *testing.T) {
	tests := []struct{ period, want time.Duration }{
		{10 * ms, 0}, // under 16 ms: checks run on time
		{15 * ms, 0},
		{16 * ms, 1 * ms},
		{79 * ms, 1 * ms},
		{80 * ms, 5 * ms},
		{100 * ms, 5 * ms},
		{250 * ms, 10 * ms},
		{500 * ms, 20 * ms},
		{639 * ms, 20 * ms},
		{640 * ms, 40 * ms},
		{1000 * ms, 40 * ms},
		{60000 * ms, 40 * ms}, // at most the largest step
	}
	for _, tt := range tests {
		if got := slack(tt.period); got != tt.want {
			t.Errorf("slack(%v) = %v, want %v", tt.period, got, tt.want)
		}
	}
	// Each step divides the one before it, so that checks of different periods meet.
	for i := 1; i < len(grids); i++ {
		if grids[i-1]%grids[i] != 0 {
			t.Errorf("grid step %v does not divide %v", grids[i], grids[i-1])
		}
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name                   string
		due, period, step, now time.Duration
		want                   time.Duration
	}{
		{"a period that is a multiple of its step stays exact", 1040 * ms, 1000 * ms, 40 * ms, 1041 * ms, 2040 * ms},
		{"otherwise rounded up to the step", 1040 * ms, 1500 * ms, 40 * ms, 1041 * ms, 2560 * ms},
		{"the first check's due time need not be on the grid", 2003 * ms, 1000 * ms, 40 * ms, 2004 * ms, 3040 * ms},
		{"timer latency is not added", 1040 * ms, 1000 * ms, 40 * ms, 1049 * ms, 2040 * ms},
		{"no step: not rounded", 1003 * ms, 1000 * ms, 0, 1004 * ms, 2003 * ms},
		{"outlasted its period: at once", 1040 * ms, 1000 * ms, 40 * ms, 2500 * ms, 2500 * ms},
	}
	for _, tt := range tests {
		if got := next(tt.due, tt.period, tt.step, tt.now); got != tt.want {
			t.Errorf("%s: next(%v, %v, %v, %v) = %v, want %v", tt.name, tt.due, tt.period, tt.step, tt.now, got, tt.want)
		}
	}
	// Whatever the phase: never early, less than one step late, on the grid.
	for due := time.Duration(0); due < 100*ms; due += 7 * ms / 3 {
		got := next(due, 1000*ms, 40*ms, due)
		if late := got - due - 1000*ms; late < 0 || late >= 40*ms || got%(40*ms) != 0 {
			t.Errorf("next(%v, 1s, 40ms, %v) = %v", due, due, got)
		}
	}
}

// HTTP and TCP checks share the grid; exec checks, which fork, keep their own time.
func TestOnlyNetworkChecksAreAligned(t *testing.T) {
	handlers := map[string]struct {
		h    spec.Handler
		want bool
	}{
		"http_get":   {spec.Handler{HTTPGet: &spec.HTTPGet{Port: "80"}}, true},
		"tcp_socket": {spec.Handler{TCPSocket: &spec.TCPSocket{Port: "80"}}, true},
		"exec":       {spec.Handler{Exec: &spec.Exec{Command: spec.Command{String: "true"}}}, false},
	}
	for name, tc := range handlers {
		s := newSchedule(context.Background(), Liveness, probeSpec(tc.h, fixed(1000), 1, 1), Target{Container: unique("aligned")}, 1, nil)
		if s.aligned != tc.want {
			t.Errorf("%s: aligned = %v, want %v", name, s.aligned, tc.want)
		}
	}
}
