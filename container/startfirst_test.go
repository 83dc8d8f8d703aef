package container

import (
	"fmt"
	"os"
	"path/filepath"
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
	l.onCommand(&command{kind: cmdRestart, request: true})
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
	l.onCommand(&command{kind: cmdRestart, request: true})
	exitNow(t, l) // the new one
	if l.state != stateRunning || l.proc == nil || l.proc.Pid() != oldPid || *l.st.Pid != oldPid || l.st.OldPid != nil {
		t.Fatalf("state %s, pid %v, old_pid %v; want running with the old pid %d", l.state, l.st.Pid, l.st.OldPid, oldPid)
	}
	if x := l.st.LastExit; x == nil || !strings.Contains(string(x.Reason), "the new process failed (killed by SIGKILL); the old one keeps running") {
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
			l.onCommand(&command{kind: cmdRestart, request: true})
			if tc.name == "startup probe" {
				l.onProbe(probes.Event{Kind: probes.Startup, Run: l.runID, Failed: true, Result: probes.Result{Detail: "boom"}})
			} else {
				l.onTimer()
			}
			<-l.procDone
			l.onExit()
			if l.state != stateRunning || l.proc.Pid() != oldPid || !strings.Contains(string(l.st.LastExit.Reason), tc.want) {
				t.Fatalf("state %s, pid %d (old %d), last_exit %+v", l.state, l.proc.Pid(), oldPid, l.st.LastExit)
			}
		})
	}
}

// update hands the loop the spec of a container built with extra spec lines, as a
// reload does, and reports whether the loop took it.
func update(t *testing.T, l *loop, extra string) (*Container, bool) {
	t.Helper()
	next := newTestContainer(t, "always", extra)
	reply := make(chan bool, 1)
	l.onCommand(&command{kind: cmdUpdate, update: next, reply: reply})
	return next, <-reply
}

// A reload's update of a running container runs the new spec's init commands, then
// its process beside the old one; once it is ready the old one is stopped and the
// container runs the new spec.
func TestStartFirstUpdateRollsOutTheNewSpec(t *testing.T) {
	l := newTestLoop(t, "always", startFirst)
	into(t, l, stateRunning)
	oldPid := l.proc.Pid()
	marker := filepath.Join(t.TempDir(), "init-ran")
	next, took := update(t, l, startFirst+fmt.Sprintf("    init: [{command: [touch, %q]}]\n", marker))
	if !took || l.state != stateRollout || l.proc != nil || l.c.Spec() != next.Spec() {
		t.Fatalf("took %v, state %s, spec %p (new %p); want rollout of the new spec, its init first", took, l.state, l.c.Spec(), next.Spec())
	}
	select {
	case err := <-l.initDone:
		l.onInitDone(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the init commands did not finish")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the new spec's init command did not run: %v", err)
	}
	if l.state != stateRetiring || l.proc == nil || l.proc.Pid() == oldPid || l.st.OldPid == nil || *l.st.OldPid != oldPid {
		t.Fatalf("state %s, old_pid %v; want retiring with old_pid %d", l.state, l.st.OldPid, oldPid)
	}
	waitOld(t, l)
	if l.state != stateRunning || l.sc != next.Spec() || l.st.OldPid != nil {
		t.Fatalf("state %s, old_pid %v; want running the new spec", l.state, l.st.OldPid)
	}
}

// A new spec whose process fails is rolled back: the old process keeps running with
// the old spec (a later reload of the same spec tries again), and last_exit says so.
func TestStartFirstUpdateRollbackKeepsTheOldSpec(t *testing.T) {
	l := newTestLoop(t, "always", startFirst)
	into(t, l, stateRunning)
	oldPid, oldSpec := l.proc.Pid(), l.sc
	if _, took := update(t, l, startFirst+notReady); !took {
		t.Fatal("a running container did not take the update")
	}
	exitNow(t, l) // the new one
	if l.state != stateRunning || l.proc.Pid() != oldPid || l.sc != oldSpec || l.c.Spec() != oldSpec || l.sc.ReadinessProbe != nil {
		t.Fatalf("state %s, pid %d (old %d), spec kept %v; want the old process with the old spec", l.state, l.proc.Pid(), oldPid, l.sc == oldSpec)
	}
	if x := l.st.LastExit; x == nil || !strings.Contains(string(x.Reason), "the old one keeps running with the old spec") {
		t.Fatalf("last_exit %+v", x)
	}
}

// A stop that comes while the new spec's init commands run cancels them; the old
// process, the only one, is stopped.
func TestStartFirstUpdateStopDuringInit(t *testing.T) {
	l := newTestLoop(t, "always", startFirst)
	into(t, l, stateRunning)
	if _, took := update(t, l, startFirst+"    init: [{command: [sleep, \"600\"]}]\n"); !took || l.proc != nil {
		t.Fatal("the update did not wait for its init commands")
	}
	l.onCommand(&command{kind: cmdStop, request: true})
	if l.state != stateStopping || l.initCancel != nil {
		t.Fatalf("state %s; want stopping with the init commands cancelled", l.state)
	}
	settle(t, l)
	if l.state != stateStopped {
		t.Fatalf("state %s after the stop, want stopped", l.state)
	}
}

// A container that is not running declines an update: the reload replaces it.
func TestStartFirstUpdateDeclinedWhenNotRunning(t *testing.T) {
	l := newTestLoop(t, "always", startFirst)
	into(t, l, stateBackoff)
	if _, took := update(t, l, startFirst); took || l.state != stateBackoff {
		t.Fatalf("took %v, state %s; a container in backoff must decline", took, l.state)
	}
}

// While the new process of a rollout is not ready, status shows the old one's ready
// condition: it serves meanwhile, and the instance must not drop out of service. A
// rollback keeps it, though a polled readiness probe starts over not ready.
func TestStartFirstStaysReadyWhileTheOldServes(t *testing.T) {
	l := newTestLoop(t, "always", startFirst+notReady)
	into(t, l, stateRunning)
	l.st.Ready.Set(true, "Probed", "", time.Now()) // the old one's readiness probe passed
	l.publish()
	l.onCommand(&command{kind: cmdRestart, request: true})
	if shown := l.c.status.Load().Ready; l.state != stateRollout || l.st.Ready.True() || !shown.True() {
		t.Fatalf("state %s, the new one's ready %+v, shown %+v; want rollout, not ready, shown ready", l.state, l.st.Ready, shown)
	}
	exitNow(t, l) // the new one fails
	if shown := l.c.status.Load().Ready; l.state != stateRunning || !l.st.Ready.True() || !shown.True() {
		t.Fatalf("after the rollback: state %s, ready %+v, shown %+v; want running and ready", l.state, l.st.Ready, shown)
	}
}
