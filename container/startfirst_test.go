package container

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/probes"
)

// Spec lines of the start_first tests.
const (
	startFirst = "    update: start_first\n"
	notReady   = "    readiness_probe: {exec: {command: [\"false\"]}, time_limit: {initial_delay_ms: 60000}}\n"
)

// waitOld hands the old process's exit to the loop, as its select would.
func waitOld(t *testing.T, l *loop) {
	t.Helper()
	select {
	case <-l.ro.oldDone:
		l.onOldExit()
	case <-time.After(10 * time.Second):
		t.Fatal("the old process did not exit")
	}
}

// A restart starts the new process beside the old one (status: both pids); once it
// is ready the old one is stopped by its stop policy and the overlap ends.
func TestStartFirstStopsTheOldOnceTheNewIsReady(t *testing.T) {
	l := newTestLoop(t, "always", startFirst+"    readiness_probe: {log_line: never}\n")
	into(t, l, stateRunning)
	oldPid := l.proc.Pid()
	l.onCommand(command{kind: cmdRestart, request: true})
	if l.state != stateRollout || l.st.OldPid == nil || *l.st.OldPid != oldPid || *l.st.Pid == oldPid {
		t.Fatalf("state %s, pid %v, old_pid %v; want rollout with old_pid %d", l.state, l.st.Pid, l.st.OldPid, oldPid)
	}
	if err := syscall.Kill(oldPid, 0); err != nil {
		t.Fatalf("the old process is gone before the new one is ready: %v", err)
	}
	l.onReadySignal(readySignal{run: l.runID, what: "test"})
	if l.state != stateRetiring {
		t.Fatalf("state %s after the new process became ready, want retiring", l.state)
	}
	waitOld(t, l)
	if l.state != stateRunning || l.st.OldPid != nil || l.proc == nil {
		t.Fatalf("state %s, old_pid %v; want running with no old_pid", l.state, l.st.OldPid)
	}
}

// A new process that exits before it is ready is not restarted: the old one keeps
// running, with its pid, and last_exit says why.
func TestStartFirstKeepsTheOldWhenTheNewFails(t *testing.T) {
	l := newTestLoop(t, "always", startFirst+notReady)
	into(t, l, stateRunning)
	oldPid := l.proc.Pid()
	l.onCommand(command{kind: cmdRestart, request: true})
	exitNow(t, l) // the new one
	if l.state != stateRunning || l.proc == nil || l.proc.Pid() != oldPid || *l.st.Pid != oldPid || l.st.OldPid != nil {
		t.Fatalf("state %s, pid %v, old_pid %v; want running with the old pid %d", l.state, l.st.Pid, l.st.OldPid, oldPid)
	}
	if x := l.st.LastExit; x == nil || !strings.Contains(x.Reason, "the new process failed (killed by SIGKILL); the old one keeps running") {
		t.Fatalf("last_exit %+v", x)
	}
	if l.timerC != nil {
		t.Errorf("a timer is set: the failed process would start again")
	}
	if !l.st.Alive.True() {
		t.Errorf("the old process is not alive in status: %+v", l.st.Alive)
	}
}

// A startup probe that fails kills the new process; the old one goes on. Without a
// startup probe, the rollout's timer does the same.
func TestStartFirstStartupProbeFailureOrTimeout(t *testing.T) {
	for _, tc := range []struct{ name, extra, want string }{
		{"startup probe", "    startup_probe: {exec: {command: [\"false\"]}, time_limit: {initial_delay_ms: 60000}}\n", "startup probe failed: boom"},
		{"timeout", notReady, "not ready within 1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLoop(t, "always", startFirst+tc.extra)
			into(t, l, stateRunning)
			if tc.name == "startup probe" {
				l.startupPassed("test")
			}
			oldPid := l.proc.Pid()
			l.onCommand(command{kind: cmdRestart, request: true})
			if tc.name == "startup probe" {
				l.onProbe(probes.Event{Kind: probes.Startup, Run: l.runID, Failed: true, Result: probes.Result{Detail: "boom"}})
			} else {
				l.onTimer()
			}
			<-l.procDone
			l.onExit()
			if l.state != stateRunning || l.proc.Pid() != oldPid || !strings.Contains(l.st.LastExit.Reason, tc.want) {
				t.Fatalf("state %s, pid %d (old %d), last_exit %+v", l.state, l.proc.Pid(), oldPid, l.st.LastExit)
			}
		})
	}
}
