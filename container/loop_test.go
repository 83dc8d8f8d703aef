package container

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// The loop's state machine, driven directly (no Run goroutine): each case brings a
// loop into a state with real processes, delivers one event, and checks the state
// that follows and what the loop will do next.

const loopSpec = `
containers:
  - name: c
    command: [sleep, "600"]
    restart_policy: {mode: %s, min_period_ms: 60000, max_jitter_ms: 0}
    stop_policy: {term_timeout_ms: 5000}
%s`

// newTestLoop builds a loop for a container with restart mode and extra spec lines.
func newTestLoop(t *testing.T, mode, extra string) *loop {
	t.Helper()
	c := newTestContainer(t, mode, extra)
	l := newLoop(c)
	t.Cleanup(func() {
		l.stopTimer()
		l.stopHealth()
		if l.initCancel != nil {
			l.initCancel()
		}
		if l.proc != nil {
			_ = l.proc.SignalGroup(syscall.SIGKILL)
			<-l.procDone
		}
		l.dropOld()
		close(c.done) // releases a stop sequence still sending events
	})
	return l
}

// newTestContainer builds a container with restart mode and extra spec lines.
func newTestContainer(t *testing.T, mode, extra string) *Container {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(loopSpec, mode, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, spec.Options{Environ: os.Environ(), Hostname: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Spec: &s.Containers[0], Env: s.ProcessEnv(nil), Dir: dir, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exitNow kills the running process and hands its exit to the loop.
func exitNow(t *testing.T, l *loop) {
	t.Helper()
	if l.proc == nil {
		t.Fatal("no process to exit")
	}
	_ = l.proc.SignalGroup(syscall.SIGKILL)
	<-l.procDone
	l.onExit()
}

// settle handles the stop sequence's events, its timer and the exit until the loop
// leaves stopping; it reports whether the loop finished.
func settle(t *testing.T, l *loop) bool {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for stateToStatus(l.state) == status.Stopping {
		select {
		case <-l.procDone:
			if l.onExit() {
				return true
			}
		case <-l.timerC:
			l.onTimer()
		case ev := <-l.stopSteps:
			if l.onStopEvent(ev) {
				return true
			}
		case <-deadline:
			t.Fatalf("still stopping (step %q)", l.st.StopStep)
		}
	}
	return false
}

// into brings l into state.
func into(t *testing.T, l *loop, s state) {
	t.Helper()
	switch s {
	case stateRunning:
		l.begin()
	case stateBackoff, stateCompleted:
		l.begin()
		exitNow(t, l)
	case stateStopping, stateRestarting, stateShuttingDown:
		l.begin()
		l.beginStop(StopOp{}, s)
	case stateDeadlineStopping:
		l.begin()
		l.onDeadline()
	case stateStopped:
		l.begin()
		l.beginStop(StopOp{}, stateStopping)
		settle(t, l)
	case stateInitializing:
		l.begin() // the spec has a slow init command
	case stateWaiting:
		// A new loop waits until it begins (a held container until Proceed).
	case stateFailed:
		l.onCommand(&command{kind: cmdFail, reason: "db failed"})
	case stateRollout, stateRetiring:
		// The spec has update: start_first, and for rollout a readiness probe that
		// has not passed.
		l.begin()
		l.onCommand(&command{kind: cmdRestart, request: true})
	}
	if l.state != s {
		t.Fatalf("could not bring the loop into %s: it is %s", s, l.state)
	}
}

type event struct {
	name string
	do   func(l *loop) bool // reports whether the loop finished
}

var (
	evTimer    = event{"timer", func(l *loop) bool { l.onTimer(); return false }}
	evStart    = event{"start", func(l *loop) bool { return l.onCommand(&command{kind: cmdStart, request: true}) }}
	evStop     = event{"stop", func(l *loop) bool { return l.onCommand(&command{kind: cmdStop, request: true}) }}
	evRestart  = event{"restart", func(l *loop) bool { return l.onCommand(&command{kind: cmdRestart, request: true}) }}
	evShutdown = event{"shutdown", func(l *loop) bool { return l.onCommand(&command{kind: cmdShutdown}) }}
	evHold     = event{"hold", func(l *loop) bool { return l.onCommand(&command{kind: cmdHold, waitingFor: []string{"db: ready"}}) }}
	evProceed  = event{"proceed", func(l *loop) bool { return l.onCommand(&command{kind: cmdProceed}) }}
	evFail     = event{"fail", func(l *loop) bool { return l.onCommand(&command{kind: cmdFail, reason: "db failed"}) }}
	evLateLive = event{"late liveness failure", func(l *loop) bool {
		l.onProbe(probes.Event{Kind: probes.Liveness, Run: l.runID - 1, Failed: true, Result: probes.Result{Detail: "HTTP 500"}})
		return false
	}}
	evDeadline = event{"deadline", func(l *loop) bool { return l.onDeadline() }}
	// evMemory is memory_restart's third sample in a row above the limit.
	evMemory = event{"memory above memory_restart", func(l *loop) bool {
		l.usage.mem = restart.MemoryWatch{Limit: 1, Above: restart.MemorySamples - 1}
		pid := 0
		if l.proc != nil {
			pid = l.proc.Pid()
		}
		l.onSample(Sample{Pid: pid, At: time.Now(), Usage: cgroup.Usage{MemoryBytes: 2}})
		return false
	}}

	// A reload hands the loop a changed spec (here the same one, as built anew).
	evUpdate = event{"update", func(l *loop) bool {
		return l.onCommand(&command{kind: cmdUpdate, update: l.c, reply: make(chan bool, 1)})
	}}

	allEvents = []event{evTimer, evStart, evStop, evRestart, evShutdown, evHold, evProceed, evFail, evLateLive, evDeadline, evMemory, evUpdate}
)

// outcome is what an event leads to.
type outcome struct {
	want      state
	finished  bool
	afterStop state // for a stopping state: the state once the stop ends
}

// stoppingThen is the outcome of an event that leaves the loop in the stopping state
// s, ending in afterStop.
func stoppingThen(s, afterStop state) outcome { return outcome{want: s, afterStop: afterStop} }

// all is the same outcome for every event but those in except.
func all(o outcome, except map[string]outcome) map[string]outcome {
	m := map[string]outcome{}
	for _, ev := range allEvents {
		m[ev.name] = o
	}
	for name, e := range except {
		m[name] = e
	}
	return m
}

// machine is the map of the loop's state machine: for every state, what each event
// leads to. TestStateByEvent fails on a state or an event missing from it.
var machine = map[state]map[string]outcome{
	stateWaiting: all(outcome{want: stateWaiting}, map[string]outcome{
		"stop": {want: stateStopped}, "restart": {want: stateRunning},
		"shutdown": {want: stateStopped, finished: true},
		"proceed":  {want: stateRunning}, "fail": {want: stateFailed},
	}),
	stateInitializing: all(outcome{want: stateInitializing}, map[string]outcome{
		"stop": {want: stateStopped}, "shutdown": {want: stateStopped, finished: true},
	}),
	stateRunning: all(outcome{want: stateRunning}, map[string]outcome{
		"stop":                        stoppingThen(stateStopping, stateStopped),
		"restart":                     stoppingThen(stateRestarting, stateRunning),
		"shutdown":                    stoppingThen(stateShuttingDown, stateStopped),
		"deadline":                    stoppingThen(stateDeadlineStopping, stateBackoff),
		"memory above memory_restart": stoppingThen(stateRestarting, stateRunning),
		// Start first: the new spec's process, ready at once (no readiness probe),
		// is running, the old one stopping.
		"update": {want: stateRetiring},
	}),
	stateBackoff: all(outcome{want: stateBackoff}, map[string]outcome{
		"timer": {want: stateRunning}, "start": {want: stateRunning},
		"stop": {want: stateStopped}, "restart": {want: stateRunning},
		"shutdown": {want: stateStopped, finished: true},
	}),
	stateCompleted: all(outcome{want: stateCompleted}, map[string]outcome{
		"start": {want: stateRunning}, "stop": {want: stateStopped}, "restart": {want: stateRunning},
		"shutdown": {want: stateStopped, finished: true}, "hold": {want: stateWaiting},
	}),
	stateStopping: all(stoppingThen(stateStopping, stateStopped), map[string]outcome{
		"start":    stoppingThen(stateRestarting, stateRunning),
		"restart":  stoppingThen(stateRestarting, stateRunning),
		"shutdown": stoppingThen(stateShuttingDown, stateStopped),
	}),
	stateRestarting: all(stoppingThen(stateRestarting, stateRunning), map[string]outcome{
		"stop":     stoppingThen(stateStopping, stateStopped),
		"shutdown": stoppingThen(stateShuttingDown, stateStopped),
	}),
	// A shutdown in progress is never undone.
	stateShuttingDown: all(stoppingThen(stateShuttingDown, stateStopped), nil),
	stateDeadlineStopping: all(stoppingThen(stateDeadlineStopping, stateBackoff), map[string]outcome{
		"stop":     stoppingThen(stateStopping, stateStopped),
		"restart":  stoppingThen(stateRestarting, stateRunning),
		"shutdown": stoppingThen(stateShuttingDown, stateStopped),
	}),
	stateStopped: all(outcome{want: stateStopped}, map[string]outcome{
		"start": {want: stateRunning}, "restart": {want: stateRunning},
		"shutdown": {want: stateStopped, finished: true}, "hold": {want: stateWaiting},
	}),
	stateFailed: all(outcome{want: stateFailed}, map[string]outcome{
		"start": {want: stateRunning}, "stop": {want: stateStopped}, "restart": {want: stateRunning},
		"shutdown": {want: stateStopped, finished: true}, "hold": {want: stateWaiting},
	}),
	// A stop during an update ends the overlap first (the new process, not ready,
	// or the old one, stopping already, is killed) and stops the other. The timer
	// of a rollout kills the new process; its exit brings the rollback.
	stateRollout: all(outcome{want: stateRollout}, map[string]outcome{
		"stop":     stoppingThen(stateStopping, stateStopped),
		"shutdown": stoppingThen(stateShuttingDown, stateStopped),
	}),
	stateRetiring: all(outcome{want: stateRetiring}, map[string]outcome{
		"stop":     stoppingThen(stateStopping, stateStopped),
		"shutdown": stoppingThen(stateShuttingDown, stateStopped),
	}),
}

var allStates = []state{stateWaiting, stateInitializing, stateRunning, stateBackoff, stateCompleted,
	stateStopping, stateRestarting, stateShuttingDown, stateDeadlineStopping, stateStopped, stateFailed,
	stateRollout, stateRetiring}

func TestStateByEvent(t *testing.T) {
	for _, from := range allStates {
		for _, ev := range allEvents {
			out, ok := machine[from][ev.name]
			if !ok {
				t.Errorf("the machine has no outcome for %s × %s", from, ev.name)
				continue
			}
			t.Run(from.String()+" × "+ev.name, func(t *testing.T) { checkEvent(t, from, ev, out) })
		}
	}
}

// checkEvent brings a new loop into from, delivers ev and checks its outcome.
func checkEvent(t *testing.T, from state, ev event, out outcome) {
	mode, extra := "always", ""
	switch from {
	case stateCompleted:
		mode = "never"
	case stateInitializing:
		extra = "    init: [{command: [sleep, \"600\"]}]\n"
	case stateRollout:
		extra = startFirst + notReady
	case stateRetiring:
		extra = startFirst
	}
	l := newTestLoop(t, mode, extra)
	into(t, l, from)
	finished := ev.do(l)
	if l.state != out.want || l.st.State != stateToStatus(out.want) || finished != out.finished {
		t.Fatalf("state %s (published %s), finished %v; want %s, finished %v", l.state, l.st.State, finished, out.want, out.finished)
	}
	if stateToStatus(out.want) != status.Stopping {
		return
	}
	finished = settle(t, l)
	if l.state != out.afterStop || finished != (out.want == stateShuttingDown) {
		t.Errorf("once stopped: %s, finished %v; want %s", l.state, finished, out.afterStop)
	}
}

// A shutdown while a stop without a destroy runs keeps the shutdown (a later restart
// cannot undo it) and runs the destroy after the stop.
func TestShutdownJoinsStopAndDestroysAfter(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "destroyed")
	l := newTestLoop(t, "always", fmt.Sprintf("    destroy_policy: {exec: {command: [touch, %q]}}\n", marker))
	into(t, l, stateStopping)
	l.onCommand(&command{kind: cmdShutdown, op: StopOp{Destroy: true}})
	l.onCommand(&command{kind: cmdRestart, request: true})
	if l.state != stateShuttingDown || l.destroyAfter == nil {
		t.Fatalf("state %s, destroy after %v; want shutting down with a destroy", l.state, l.destroyAfter)
	}
	if !settle(t, l) {
		t.Fatal("the loop did not finish")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the destroy policy did not run: %v", err)
	}
}

// A liveness failure of the current run kills the process; its exit then carries the
// probe's reason and goes to backoff.
func TestLivenessFailureKillsAndRestarts(t *testing.T) {
	l := newTestLoop(t, "always", "")
	into(t, l, stateRunning)
	l.onProbe(probes.Event{Kind: probes.Liveness, Run: l.runID, Failed: true, Failures: 1, Result: probes.Result{Detail: "HTTP 500"}})
	<-l.procDone
	l.onExit()
	if l.state != stateBackoff || l.st.LastExit == nil || l.st.LastExit.Reason != "liveness probe failed: HTTP 500" {
		t.Fatalf("state %s, last exit %+v", l.state, l.st.LastExit)
	}
	if l.st.LastExit.Signal != "SIGKILL" {
		t.Errorf("signal %q, want SIGKILL", l.st.LastExit.Signal)
	}
}

// An idle running container without probes, notify socket or log_line has made
// none of the channels its helpers report on (each was a buffer and one more case
// for every idle container's select to wait on): a run makes what it needs, a stop
// in a goroutine its own (a plain one, the loop's, none), and each works once made.
func TestHelperChannelsMadeWhenNeeded(t *testing.T) {
	l := newTestLoop(t, "always", "")
	into(t, l, stateRunning)
	if l.probeEvents != nil || l.notifyMsgs != nil || l.readySignals != nil || l.stopSteps != nil {
		t.Fatal("a running container without probes made a helper channel")
	}
	l.beginStop(StopOp{}, stateStopping)
	if l.stopSteps != nil {
		t.Fatal("a plain stop sequence, run by the loop, made a channel of steps")
	}
	settle(t, l)
	if l.state != stateStopped {
		t.Fatalf("state %s after the stop, want stopped", l.state)
	}
	h := newTestLoop(t, "always", "    term_barrier: WAIT\n") // not plain: a goroutine's
	into(t, h, stateRunning)
	h.beginStop(StopOp{}, stateStopping)
	if h.stopSteps == nil {
		t.Fatal("a stop sequence in a goroutine has no channel to report on")
	}
	settle(t, h)
	if h.state != stateStopped {
		t.Fatalf("state %s after the stop in a goroutine, want stopped", h.state)
	}

	p := newTestLoop(t, "always", "    readiness_probe: {exec: {command: \"true\"}, period: 50ms, initial_delay: 0s}\n")
	into(t, p, stateRunning)
	if p.probeEvents == nil || p.readySignals != nil {
		t.Fatalf("a run with an exec readiness probe: want the probes' channel alone (%v, %v, state %s)", p.probeEvents != nil, p.readySignals != nil, p.state)
	}
	select {
	case ev := <-p.probeEvents:
		p.onProbe(ev)
	case <-time.After(10 * time.Second):
		t.Fatal("no probe result in 10 s")
	}
	if !p.st.Ready.True() {
		t.Fatalf("not ready after a passing check: %+v", p.st.Ready)
	}

	m := newTestLoop(t, "always", "    readiness_probe: {log_line: never}\n")
	into(t, m, stateRunning)
	if m.readySignals == nil || m.probeEvents != nil {
		t.Fatal("a run with a log_line readiness probe: want the readiness signals' channel alone")
	}
}
