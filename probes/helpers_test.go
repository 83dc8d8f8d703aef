package probes

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// limits is a time_limit in milliseconds; every field is set, as after spec.Load.
type limits struct {
	initialDelay, minPeriod, maxPeriod, scale, maxExecution int64
	backOff                                                 float64
}

// fixed is a fixed period with no initial delay and a 1s execution limit.
func fixed(periodMs int64) limits {
	return limits{minPeriod: periodMs, maxPeriod: periodMs, backOff: 1, maxExecution: 1000}
}

func probeSpec(h spec.Handler, l limits, failureThreshold, successThreshold int) *spec.Probe {
	return &spec.Probe{
		Handler: h,
		TimeLimit: &spec.TimeLimit{
			InitialDelayMs:       spec.Some(l.initialDelay),
			MinRestartPeriodMs:   spec.Some(l.minPeriod),
			MaxRestartPeriodMs:   spec.Some(l.maxPeriod),
			RestartPeriodScaleMs: spec.Some(l.scale),
			RestartPeriodBackOff: spec.Some(l.backOff),
			MaxExecutionTimeMs:   spec.Some(l.maxExecution),
		},
		FailureThreshold: spec.Some(failureThreshold),
		SuccessThreshold: spec.Some(successThreshold),
	}
}

// hostPort splits a listener address into the host and port strings of a handler.
func hostPort(t *testing.T, addr net.Addr) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// httpGet is an http_get handler aimed at server s.
func httpGet(t *testing.T, s *httptest.Server, path string) *spec.HTTPGet {
	host, port := hostPort(t, s.Listener.Addr())
	return &spec.HTTPGet{Host: host, Port: port, Path: path}
}

// freePort returns a port on 127.0.0.1 and ::1 with nothing listening (it was just
// released, so nothing else is likely to take it during the test).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port := hostPort(t, l.Addr())
	l.Close()
	return port
}

// listenIPv6 listens on [::1] or skips the test when the machine has no IPv6 loopback.
func listenIPv6(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback on this machine (listen [::1]: %v); the ::1 default of tcp_socket cannot be tested", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// hits records the time of every request a test server receives and lets a test
// wait for the nth one.
type hits struct {
	mu    sync.Mutex
	times []time.Time
	more  chan struct{} // receives after every hit, never blocks the server
}

func newHits() *hits { return &hits{more: make(chan struct{}, 1)} }

// add records a hit and returns its 0-based index.
func (h *hits) add() int {
	h.mu.Lock()
	h.times = append(h.times, time.Now())
	n := len(h.times) - 1
	h.mu.Unlock()
	select {
	case h.more <- struct{}{}:
	default:
	}
	return n
}

func (h *hits) snapshot() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.times...)
}

// wait returns the first n hit times, failing the test if they do not arrive in time.
func (h *hits) wait(t *testing.T, n int, within time.Duration) []time.Time {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		if got := h.snapshot(); len(got) >= n {
			return got[:n]
		}
		select {
		case <-h.more:
		case <-deadline.C:
			t.Fatalf("waited %v for %d requests, got %d", within, n, len(h.snapshot()))
		}
	}
}

// nextEvent receives one event or fails the test after within.
func nextEvent(t *testing.T, events <-chan Event, within time.Duration) Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(within):
		t.Fatalf("no probe event within %v", within)
		return Event{}
	}
}

// started runs Start with a cancel registered as cleanup and waits for the probe
// goroutine to exit at the end of the test.
func started(t *testing.T, kind Kind, p *spec.Probe, target Target, run uint64) (<-chan Event, context.CancelFunc, <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan Event)
	done := Start(ctx, kind, p, target, run, events, nil)
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("probe goroutine still running 5s after cancel")
		}
	})
	return events, cancel, done
}

var names atomic.Int64

// unique makes a container name no other test and no earlier -count run has used,
// since the probe metrics keep counting across them.
func unique(prefix string) string { return prefix + "-" + strconv.FormatInt(names.Add(1), 10) }

// hangingServer answers no request: its handler waits until the request is cancelled
// or the test ends.
func hangingServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(server.Close)
	t.Cleanup(func() { close(release) }) // runs first: handlers return, Close does not wait
	return server
}
