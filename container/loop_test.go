package container

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/probes"
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
		close(c.done) // releases a stop sequence still sending events
	})
	return l
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

// settle handles the stop sequence's events (and the exit) until the loop leaves
// stopping; it reports whether the loop finished.
func settle(t *testing.T, l *loop) bool {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for l.state == status.Stopping {
		select {
		case <-l.procDone:
			l.onExit()
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
func into(t *testing.T, l *loop, state status.State) {
	t.Helper()
	switch state {
	case status.Running:
		l.begin()
	case status.Backoff, status.Completed:
		l.begin()
		exitNow(t, l)
	case status.Stopping:
		l.begin()
		l.beginStop(StopOp{}, stayStopped)
	case status.Stopped:
		l.begin()
		l.beginStop(StopOp{}, stayStopped)
		settle(t, l)
	case status.Initializing:
		l.begin() // the spec has a slow init command
	case status.Waiting:
		// A new loop waits until it begins (a held container until Proceed).
	case status.Failed:
		l.onCommand(command{kind: cmdFail, reason: "db failed"})
	}
	if l.state != state {
		t.Fatalf("could not bring the loop into %s: it is %s", state, l.state)
	}
}

type event struct {
	name string
	do   func(l *loop) bool // reports whether the loop finished
}

var (
	evTimer    = event{"timer", func(l *loop) bool { l.onTimer(); return false }}
	evStart    = event{"start", func(l *loop) bool { return l.onCommand(command{kind: cmdStart, request: true}) }}
	evStop     = event{"stop", func(l *loop) bool { return l.onCommand(command{kind: cmdStop, request: true}) }}
	evRestart  = event{"restart", func(l *loop) bool { return l.onCommand(command{kind: cmdRestart, request: true}) }}
	evShutdown = event{"shutdown", func(l *loop) bool { return l.onCommand(command{kind: cmdShutdown}) }}
	evHold     = event{"hold", func(l *loop) bool { return l.onCommand(command{kind: cmdHold, waitingFor: []string{"db: ready"}}) }}
	evProceed  = event{"proceed", func(l *loop) bool { return l.onCommand(command{kind: cmdProceed}) }}
	evFail     = event{"fail", func(l *loop) bool { return l.onCommand(command{kind: cmdFail, reason: "db failed"}) }}
	evLateLive = event{"late liveness failure", func(l *loop) bool {
		l.onProbe(probes.Event{Kind: probes.Liveness, Run: l.runID - 1, Failed: true, Result: probes.Result{Detail: "HTTP 500"}})
		return false
	}}
	evDeadline = event{"deadline", func(l *loop) bool { return l.onDeadline() }}

	allEvents = []event{evTimer, evStart, evStop, evRestart, evShutdown, evHold, evProceed, evFail, evLateLive, evDeadline}
)

// outcome is what an event leads to.
type outcome struct {
	want      status.State
	wantNext  after // for want == stopping: what follows the stop
	finished  bool
	afterStop status.State // for want == stopping: the state once the stop ends
}

// machine is the map of the loop's state machine: for every state, what each event
// leads to. TestStateByEvent fails on a state or an event missing from it.
var machine = map[status.State]map[string]outcome{
	status.Waiting: {
		"timer": {want: status.Waiting}, "start": {want: status.Waiting},
		"stop": {want: status.Stopped}, "restart": {want: status.Running},
		"shutdown": {want: status.Stopped, finished: true}, "hold": {want: status.Waiting},
		"proceed": {want: status.Running}, "fail": {want: status.Failed},
		"late liveness failure": {want: status.Waiting}, "deadline": {want: status.Waiting},
	},
	status.Initializing: {
		"timer": {want: status.Initializing}, "start": {want: status.Initializing},
		"stop": {want: status.Stopped}, "restart": {want: status.Initializing},
		"shutdown": {want: status.Stopped, finished: true}, "hold": {want: status.Initializing},
		"proceed": {want: status.Initializing}, "fail": {want: status.Initializing},
		"late liveness failure": {want: status.Initializing}, "deadline": {want: status.Initializing},
	},
	status.Running: {
		"timer": {want: status.Running}, "start": {want: status.Running},
		"stop":     {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"restart":  {want: status.Stopping, wantNext: startAgain, afterStop: status.Running},
		"shutdown": {want: status.Stopping, wantNext: finish, afterStop: status.Stopped},
		"hold":     {want: status.Running}, "proceed": {want: status.Running}, "fail": {want: status.Running},
		"late liveness failure": {want: status.Running},
		"deadline":              {want: status.Stopping, wantNext: afterDeadline, afterStop: status.Backoff},
	},
	status.Backoff: {
		"timer": {want: status.Running}, "start": {want: status.Running},
		"stop": {want: status.Stopped}, "restart": {want: status.Running},
		"shutdown": {want: status.Stopped, finished: true}, "hold": {want: status.Backoff},
		"proceed": {want: status.Backoff}, "fail": {want: status.Backoff},
		"late liveness failure": {want: status.Backoff}, "deadline": {want: status.Backoff},
	},
	status.Completed: {
		"timer": {want: status.Completed}, "start": {want: status.Running},
		"stop": {want: status.Stopped}, "restart": {want: status.Running},
		"shutdown": {want: status.Stopped, finished: true}, "hold": {want: status.Waiting},
		"proceed": {want: status.Completed}, "fail": {want: status.Completed},
		"late liveness failure": {want: status.Completed}, "deadline": {want: status.Completed},
	},
	status.Stopping: {
		"timer":                 {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"start":                 {want: status.Stopping, wantNext: startAgain, afterStop: status.Running},
		"stop":                  {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"restart":               {want: status.Stopping, wantNext: startAgain, afterStop: status.Running},
		"shutdown":              {want: status.Stopping, wantNext: finish, afterStop: status.Stopped},
		"hold":                  {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"proceed":               {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"fail":                  {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"late liveness failure": {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
		"deadline":              {want: status.Stopping, wantNext: stayStopped, afterStop: status.Stopped},
	},
	status.Stopped: {
		"timer": {want: status.Stopped}, "start": {want: status.Running},
		"stop": {want: status.Stopped}, "restart": {want: status.Running},
		"shutdown": {want: status.Stopped, finished: true}, "hold": {want: status.Waiting},
		"proceed": {want: status.Stopped}, "fail": {want: status.Stopped},
		"late liveness failure": {want: status.Stopped}, "deadline": {want: status.Stopped},
	},
	status.Failed: {
		"timer": {want: status.Failed}, "start": {want: status.Running},
		"stop": {want: status.Stopped}, "restart": {want: status.Running},
		"shutdown": {want: status.Stopped, finished: true}, "hold": {want: status.Waiting},
		"proceed": {want: status.Failed}, "fail": {want: status.Failed},
		"late liveness failure": {want: status.Failed}, "deadline": {want: status.Failed},
	},
}

var allStates = []status.State{status.Waiting, status.Initializing, status.Running, status.Backoff,
	status.Completed, status.Stopping, status.Stopped, status.Failed}

func TestStateByEvent(t *testing.T) {
	for _, from := range allStates {
		for _, ev := range allEvents {
			out, ok := machine[from][ev.name]
			if !ok {
				t.Errorf("the machine has no outcome for %s × %s", from, ev.name)
				continue
			}
			t.Run(string(from)+" × "+ev.name, func(t *testing.T) { checkEvent(t, from, ev, out) })
		}
	}
}

// checkEvent brings a new loop into from, delivers ev and checks its outcome.
func checkEvent(t *testing.T, from status.State, ev event, out outcome) {
	mode, extra := "always", ""
	switch from {
	case status.Completed:
		mode = "never"
	case status.Initializing:
		extra = "    init: [{command: [sleep, \"600\"]}]\n"
	}
	l := newTestLoop(t, mode, extra)
	into(t, l, from)
	finished := ev.do(l)
	if l.state != out.want || l.st.State != out.want || finished != out.finished {
		t.Fatalf("state %s (published %s), finished %v; want %s, finished %v", l.state, l.st.State, finished, out.want, out.finished)
	}
	if out.want != status.Stopping {
		return
	}
	if l.then.next != out.wantNext {
		t.Errorf("after the stop: %d, want %d", l.then.next, out.wantNext)
	}
	finished = settle(t, l)
	if l.state != out.afterStop || finished != (out.wantNext == finish) {
		t.Errorf("once stopped: %s, finished %v; want %s", l.state, finished, out.afterStop)
	}
}

// A shutdown while a stop without a destroy runs keeps the shutdown (a later restart
// cannot undo it) and runs the destroy after the stop.
func TestShutdownJoinsStopAndDestroysAfter(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "destroyed")
	l := newTestLoop(t, "always", fmt.Sprintf("    destroy_policy: {exec: {command: [touch, %q]}}\n", marker))
	into(t, l, status.Stopping)
	l.onCommand(command{kind: cmdShutdown, op: StopOp{Destroy: true}})
	l.onCommand(command{kind: cmdRestart, request: true})
	if l.then.next != finish || l.then.destroy == nil {
		t.Fatalf("then = %+v, want finish with a destroy", l.then)
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
	into(t, l, status.Running)
	l.onProbe(probes.Event{Kind: probes.Liveness, Run: l.runID, Failed: true, Failures: 1, Result: probes.Result{Detail: "HTTP 500"}})
	<-l.procDone
	l.onExit()
	if l.state != status.Backoff || l.st.LastExit == nil || l.st.LastExit.Reason != "liveness probe failed: HTTP 500" {
		t.Fatalf("state %s, last exit %+v", l.state, l.st.LastExit)
	}
	if l.st.LastExit.Signal != "SIGKILL" {
		t.Errorf("signal %q, want SIGKILL", l.st.LastExit.Signal)
	}
}
