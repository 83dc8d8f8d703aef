package container

import (
	"fmt"
	"time"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// maxEvents is how many events a container keeps (docs/reference.md "Events").
const maxEvents = 100

// record adds an event; the loop records each where it handles what happened
// (events.go). Every call publishes a new slice, never changed after: readers of
// Describe hold a snapshot, as they do of the status. Events are rare (starts,
// exits, a probe's change), so the copy of at most maxEvents costs nothing that
// matters, and a container holds only the events it has.
func (l *loop) record(typ status.EventType, reason status.Reason, message string) {
	old := l.events
	drop := max(0, len(old)+1-maxEvents)
	next := make([]status.Event, 0, len(old)-drop+1)
	next = append(next, old[drop:]...)
	next = append(next, status.Event{Time: status.At(time.Now()), Type: typ, Reason: reason, Message: message})
	l.events = next
	l.c.events.Store(&next)
}

// recordf records an event whose message is formatted.
func (l *loop) recordf(typ status.EventType, reason status.Reason, format string, args ...any) {
	l.record(typ, reason, fmt.Sprintf(format, args...))
}

// recordProbe records what a check of the current run says about its probe, if it is
// news: a failure that starts a streak of failures or says something else than the
// failure before it, or the first pass after failures. A probe failing every second
// for an hour is one event, and its results show the checks.
func (l *loop) recordProbe(ev probes.Event) {
	last := &l.health.failing[ev.Kind]
	switch {
	case !ev.Result.OK:
		msg := ev.Kind.String() + " probe failed: " + ev.Result.Message()
		if msg != *last {
			*last = msg
			l.record(status.Warning, status.ReasonProbeFailed, msg)
		}
	case *last != "":
		*last = ""
		l.record(status.Normal, status.ReasonProbeRecovered, ev.Kind.String()+" probe passed again")
	}
}

// newHistories makes the result histories of the polled probes of sc.
func newHistories(sc *spec.Container) [3]*probes.History {
	var h [3]*probes.History
	for kind, p := range map[probes.Kind]*spec.Probe{probes.Liveness: sc.LivenessProbe,
		probes.Readiness: sc.ReadinessProbe, probes.Startup: sc.StartupProbe} {
		if probes.Polled(p) {
			h[kind] = new(probes.History)
		}
	}
	return h
}

// history is the result history of the container's probe of kind (nil: none).
func (c *Container) history(kind probes.Kind) *probes.History { return c.histories.Load()[kind] }

// Describe is the container as GET /v1/containers/NAME shows it: its status, its
// events and its probes' last checks.
func (c *Container) Describe() status.ContainerDetail {
	d := status.ContainerDetail{Container: c.Status(), Events: []status.Event{}, Probes: map[string]status.ProbeResults{}}
	if ev := c.events.Load(); ev != nil {
		d.Events = *ev
	}
	for kind, h := range c.histories.Load() {
		if h != nil {
			d.Probes[probes.Kind(kind).String()] = status.ProbeResults{Last: probeResults(h.Last())}
		}
	}
	return d
}

func probeResults(rs []probes.Record) []status.ProbeResult {
	out := make([]status.ProbeResult, len(rs))
	for i, r := range rs {
		res := "success"
		if !r.Result.OK {
			res = "failure"
		}
		out[i] = status.ProbeResult{Time: status.At(r.At), Result: res,
			DurationMs: r.Result.Duration.Milliseconds(), Message: r.Result.Message()}
	}
	return out
}
