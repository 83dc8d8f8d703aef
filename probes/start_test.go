package probes

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/internal/promtext"
	"github.com/tend-sh/tend/spec"
)

// scripted serves 200 "All ok" or 500 by the index of the request in answers
// (true: healthy); requests past the end repeat the last answer. Every request is
// recorded in the returned hits.
func scripted(t *testing.T, answers ...bool) (*httptest.Server, *hits) {
	t.Helper()
	h := newHits()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := h.add()
		if i >= len(answers) {
			i = len(answers) - 1
		}
		if !answers[i] {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "error")
			return
		}
		fmt.Fprint(w, "All ok")
	}))
	t.Cleanup(server.Close)
	return server, h
}

func allOK(t *testing.T, server *httptest.Server) spec.Handler {
	h := httpGet(t, server, "/healthz")
	h.ExpectedAnswer = "All ok"
	return spec.Handler{HTTPGet: h}
}

// pod_agent's HTTP liveness example: the server answers "All ok" for a while and
// then 500, so the probe turns healthy and then unhealthy.
func TestPodAgentHTTPLiveness(t *testing.T) {
	var broken atomic.Bool
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			w.WriteHeader(500)
			fmt.Fprint(w, "error: 10.5")
			return
		}
		fmt.Fprint(w, "All ok")
	}))
	defer server.Close()
	p := probeSpec(allOK(t, server), fixed(20), 1, 1)
	events, _, _ := started(t, Liveness, p, Target{Container: "web"}, 7)

	ev := nextEvent(t, events, 5*time.Second)
	if !ev.Result.OK || !ev.Healthy || ev.Kind != Liveness || ev.Run != 7 {
		t.Fatalf("first event %+v, want a healthy liveness success of run 7", ev)
	}
	broken.Store(true)
	for {
		ev = nextEvent(t, events, 5*time.Second)
		if !ev.Result.OK {
			break
		}
	}
	if ev.Healthy || !ev.Failed || ev.Result.Detail != "HTTP 500" {
		t.Errorf("event after the server broke %+v, want unhealthy, failed, \"HTTP 500\"", ev)
	}
}

func TestThresholds(t *testing.T) {
	// failure_threshold 3, success_threshold 2.
	answers := []bool{true, true, false, false, false, true, true, false}
	wantHealthy := []bool{false, true, true, true, false, false, true, true}
	wantFailed := []bool{false, false, false, false, true, false, false, false}
	server, _ := scripted(t, answers...)
	p := probeSpec(allOK(t, server), fixed(5), 3, 2)
	events, _, _ := started(t, Readiness, p, Target{}, 1)
	for i, ok := range answers {
		ev := nextEvent(t, events, 5*time.Second)
		if ev.Result.OK != ok || ev.Healthy != wantHealthy[i] || ev.Failed != wantFailed[i] {
			t.Fatalf("check %d: {OK: %v, Healthy: %v, Failed: %v}, want {OK: %v, Healthy: %v, Failed: %v} (%+v)",
				i, ev.Result.OK, ev.Healthy, ev.Failed, ok, wantHealthy[i], wantFailed[i], ev)
		}
		if ev.Kind != Readiness {
			t.Fatalf("check %d: kind %v, want readiness", i, ev.Kind)
		}
	}
}

func TestFailuresBeforeFirstSuccess(t *testing.T) {
	server, _ := scripted(t, false)
	p := probeSpec(allOK(t, server), fixed(5), 2, 1)
	events, _, _ := started(t, Liveness, p, Target{}, 1)
	first, second := nextEvent(t, events, 5*time.Second), nextEvent(t, events, 5*time.Second)
	if first.Healthy || first.Failed || first.Failures != 1 {
		t.Errorf("first failure %+v, want not healthy, not yet failed, 1 failure", first)
	}
	if second.Healthy || !second.Failed || second.Failures != 2 {
		t.Errorf("second failure %+v, want failed with 2 failures", second)
	}
}

// The period grows with consecutive successes (min 10, scale 10, back_off 3, max
// 400: 20, 40, 100, 280, 400 ms) and snaps back to the minimum after a failure.
func TestPeriodGrowsAndResets(t *testing.T) {
	server, hits := scripted(t, true, true, true, true, true, false, true, true)
	l := limits{minPeriod: 10, maxPeriod: 400, scale: 10, backOff: 3, maxExecution: 1000}
	p := probeSpec(allOK(t, server), l, 1, 1)
	events := make(chan Event, 16) // nobody needs to read them
	ctx, cancel := context.WithCancel(context.Background())
	begin := time.Now() // the first check is due no earlier
	done := Start(ctx, Readiness, p, Target{}, 1, events, nil)
	defer func() { cancel(); <-done }()

	times := hits.wait(t, 8, 10*time.Second)
	// periods[i] follows check i; successes after it: 1..5, then 0 (the failure), 1.
	periods := []time.Duration{20, 40, 100, 280, 400, 20, 20}
	// A check is due a period after the one before it was due, and is never early; a
	// late one (a loaded machine) is followed by an early one, so a single gap may be
	// short, but each check comes at least the sum of the periods before it after Start.
	var due time.Duration
	for i, period := range periods {
		due += period * time.Millisecond
		if got := times[i+1].Sub(begin); got < due {
			t.Errorf("check %d came %v after Start, before the sum of the periods before it (%v); times %v", i+1, got, due, times)
		}
	}
	// And not much later: a loaded machine delays checks, but not by the 400 ms of a
	// period that started at the maximum or did not snap back to the minimum.
	const slackForLoad = 400 * time.Millisecond
	if took := times[3].Sub(times[0]); took > 160*time.Millisecond+slackForLoad {
		t.Errorf("the first three periods took %v, want about 160ms (20, 40, 100)", took)
	}
	if took := times[7].Sub(times[5]); took > 40*time.Millisecond+slackForLoad {
		t.Errorf("the two periods after the failure took %v, want about 40ms (back to the minimum)", took)
	}
}

// A check that takes longer than the period is followed at once after its answer:
// neither a period later nor before the answer.
func TestSlowCheckFollowedAtOnce(t *testing.T) {
	const period, length = time.Second, 1200 * time.Millisecond
	asked, answered := newHits(), newHits()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.add()
		select { // a slow answer, not synchronisation
		case <-time.After(length):
		case <-r.Context().Done():
			return
		}
		answered.add() // before the answer leaves: the next check cannot come before this
	}))
	defer server.Close()
	l := fixed(period.Milliseconds())
	l.maxExecution = 10 * length.Milliseconds()
	p := probeSpec(spec.Handler{HTTPGet: httpGet(t, server, "/")}, l, 1, 1)
	events := make(chan Event, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := Start(ctx, Readiness, p, Target{}, 1, events, nil)
	defer func() { cancel(); <-done }()

	starts := asked.wait(t, 3, 20*time.Second)
	ends := answered.snapshot()
	for i := 1; i < len(starts); i++ {
		// At once: a little after the answer. Waiting a period after it would be 1s.
		if wait := starts[i].Sub(ends[i-1]); wait < 0 || wait > period/2 {
			t.Errorf("check %d started %v after the answer to check %d, want at once (under %v)", i, wait, i-1, period/2)
		}
	}
}

func TestInitialDelay(t *testing.T) {
	server, hits := scripted(t, true)
	l := fixed(10)
	l.initialDelay = 200
	p := probeSpec(allOK(t, server), l, 1, 1)
	start := time.Now()
	events, _, _ := started(t, Readiness, p, Target{}, 1)
	nextEvent(t, events, 5*time.Second)
	if first := hits.snapshot()[0].Sub(start); first < 200*time.Millisecond {
		t.Errorf("first check %v after Start, before the initial delay of 200ms", first)
	}
}

// A probe whose check hangs does not delay another probe.
func TestSlowProbeDoesNotDelayOthers(t *testing.T) {
	slow := hangingServer(t)
	fast, fastHits := scripted(t, true)
	events := make(chan Event)
	ctx, cancel := context.WithCancel(context.Background())
	slowProbe := probeSpec(spec.Handler{HTTPGet: httpGet(t, slow, "/")}, limits{minPeriod: 5, maxPeriod: 5, backOff: 1}, 1, 1)
	doneSlow := Start(ctx, Liveness, slowProbe, Target{}, 1, events, nil)
	doneFast := Start(ctx, Readiness, probeSpec(allOK(t, fast), fixed(5), 1, 1), Target{}, 2, events, nil)
	defer func() { cancel(); <-doneSlow; <-doneFast }()
	// The fast probe reports its first success (later ones are no news) and keeps
	// checking while the slow one hangs.
	if ev := nextEvent(t, events, 5*time.Second); ev.Run != 2 || !ev.Result.OK {
		t.Fatalf("event %+v, want a success of the fast probe", ev)
	}
	fastHits.wait(t, 5, 5*time.Second)
	select {
	case ev := <-events:
		t.Fatalf("unexpected event %+v: the slow probe must still hang, the fast one has no news", ev)
	default:
	}
}

// Cancelling stops the probe goroutine promptly in every place it can wait: in a
// check with no time limit, between checks, and sending an event nobody reads.
func TestCancelStopsPromptly(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hanging.Close()
	defer close(release)
	healthy, _ := scripted(t, true)
	unread, unreadHits := scripted(t, true)
	before := runtime.NumGoroutine()

	cases := []struct {
		name    string
		probe   *spec.Probe
		reached func(t *testing.T, events <-chan Event, container string)
	}{
		{
			name:  "in a check",
			probe: probeSpec(spec.Handler{HTTPGet: httpGet(t, hanging, "/")}, limits{minPeriod: 10, maxPeriod: 10, backOff: 1}, 1, 1),
			reached: func(t *testing.T, events <-chan Event, container string) {
				select {
				case <-entered:
				case <-time.After(5 * time.Second):
					t.Fatal("the check never reached the server")
				}
			},
		},
		{
			name:  "between checks",
			probe: probeSpec(allOK(t, healthy), fixed(60000), 1, 1),
			reached: func(t *testing.T, events <-chan Event, container string) {
				nextEvent(t, events, 5*time.Second)
			},
		},
		{
			name:    "before the first check",
			probe:   probeSpec(allOK(t, healthy), limits{initialDelay: 60000, minPeriod: 10, maxPeriod: 10, backOff: 1}, 1, 1),
			reached: func(t *testing.T, events <-chan Event, container string) {},
		},
		{
			name:  "sending an event",
			probe: probeSpec(allOK(t, unread), fixed(10), 1, 1),
			reached: func(t *testing.T, events <-chan Event, container string) {
				// Nobody reads: once the first result is counted, it is being sent.
				unreadHits.wait(t, 1, 5*time.Second)
				waitCounter(t, container, Liveness, "success", 1)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			events := make(chan Event)
			container := unique("cancel-" + tc.name)
			done := Start(ctx, Liveness, tc.probe, Target{Container: container}, 1, events, nil)
			tc.reached(t, events, container)
			cancelled := time.Now()
			cancel()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				t.Fatal("probe goroutine still running 2s after cancel")
			}
			if took := time.Since(cancelled); took > time.Second {
				t.Errorf("the goroutine exited %v after cancel, want promptly", took)
			}
			select {
			case ev := <-events:
				t.Errorf("event %+v after cancel", ev)
			default:
			}
			if tc.name == "in a check" {
				// The cancelled check is no result: neither reported nor counted.
				if n := checks(container, Liveness, "failure"); n != 0 {
					t.Errorf("the cancelled check was counted as a failure (%d)", n)
				}
			}
		})
	}

	// Nothing is left behind: the probe goroutines and their connections are gone.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after the probes stopped:\n%s",
				before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		<-time.After(10 * time.Millisecond) // polling with a deadline: goroutines announce no exit
	}
}

func TestMetrics(t *testing.T) {
	// Two successes, a failure, then a check that hangs until the end of the test, so
	// that the counters stand still while they are read.
	var requests atomic.Int32
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch requests.Add(1) {
		case 1, 2:
			fmt.Fprint(w, "All ok")
		case 3:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	defer server.Close()
	defer close(release)
	container := unique(`metrics-"test"`)
	l := fixed(5)
	l.maxExecution = 0
	p := probeSpec(allOK(t, server), l, 1, 1)
	events, cancel, done := started(t, Liveness, p, Target{Container: container}, 1)
	// Events: the first success, then the failure (the second success is no news).
	if ev := nextEvent(t, events, 5*time.Second); !ev.Result.OK {
		t.Fatalf("first event %+v, want a success", ev)
	}
	if ev := nextEvent(t, events, 5*time.Second); ev.Result.OK || ev.Failures != 1 {
		t.Fatalf("second event %+v, want the failure of the third check", ev)
	}
	defer func() { cancel(); <-done }() // before the server closes: its handler waits for us
	var buf bytes.Buffer
	WriteMetrics(&buf)
	text := buf.String()
	labels := `container="` + promtext.EscapeLabel(container) + `",probe="liveness"`
	// The label value is escaped for the text format.
	if !strings.Contains(text, `{container="metrics-\"test\"-`) {
		t.Errorf("metrics lack the escaped container label:\n%s", text)
	}
	for _, line := range []string{
		`tend_probe_checks_total{` + labels + `,result="success"} 2`,
		`tend_probe_checks_total{` + labels + `,result="failure"} 1`,
		`tend_probe_duration_seconds_count{` + labels + `} 3`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("metrics lack %q:\n%s", line, text)
		}
	}
}

func TestKindString(t *testing.T) {
	if Liveness.String() != "liveness" || Readiness.String() != "readiness" {
		t.Errorf("kinds are %q and %q", Liveness, Readiness)
	}
}

// checks reads the checks_total counter of one probe.
func checks(container string, kind Kind, result string) uint64 {
	name := `tend_probe_checks_total{container="` + promtext.EscapeLabel(container) + `",probe="` + kind.String() + `",result="` + result + `"}`
	return checkCounts.Counter(name).Get()
}

// waitCounter waits until the checks_total counter of one probe reaches want.
func waitCounter(t *testing.T, container string, kind Kind, result string, want uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for checks(container, kind, result) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s %s checks of %q: %d after 5s, want %d", kind, result, container, checks(container, kind, result), want)
		}
		<-tick.C
	}
}

// Between checks a probe holds no goroutine (and so no stack): a hundred probes
// waiting for their next check add only their timers.
func TestIdleProbesHoldNoGoroutines(t *testing.T) {
	server, h := scripted(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan Event, 1000)
	before := runtime.NumGoroutine()
	const n = 100
	dones := make([]<-chan struct{}, n)
	for i := range dones {
		p := probeSpec(allOK(t, server), fixed(60000), 1, 1)
		dones[i] = Start(ctx, Readiness, p, Target{Container: unique("idle")}, 1, events, nil)
	}
	h.wait(t, n, 5*time.Second) // every probe has made its first check
	for range n {
		nextEvent(t, events, 5*time.Second) // and reported it
	}
	deadline := time.Now().Add(5 * time.Second)
	// The server's handlers and kept connections come and go; the probes must not stay.
	for runtime.NumGoroutine() >= before+n/2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before %d idle probes, %d now", before, n, runtime.NumGoroutine())
		}
		<-time.After(10 * time.Millisecond)
	}
	cancel()
	for _, done := range dones {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatal("an idle probe did not end 2s after cancel")
		}
	}
}
