package supervisor

import (
	"testing"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// OnReady is called each time the instance turns ready, and not for a status that
// stays ready.
func TestOnReadyWhenTheInstanceTurnsReady(t *testing.T) {
	calls := 0
	sv := &Supervisor{opts: Options{OnReady: func() { calls++ }}, state: status.InstanceRunning}
	sv.installed.Set(true, "Installed", "", time.Now())
	ready := status.Container{Name: "web", AffectsReadiness: true}
	ready.Ready.Set(true, "Running", "", time.Now())
	notReady := status.Container{Name: "web", AffectsReadiness: true}
	notReady.Ready.Set(false, "Starting", "", time.Now())

	for i, step := range []struct {
		cs   status.Container
		want int
	}{
		{notReady, 0},
		{ready, 1},
		{ready, 1}, // still ready: not again
		{notReady, 1},
		{ready, 2},
	} {
		sv.mu.Lock()
		sv.refreshReadyLocked([]status.Container{step.cs}, time.Now())
		sv.mu.Unlock()
		if calls != step.want {
			t.Fatalf("step %d: OnReady called %d times, want %d", i, calls, step.want)
		}
	}
}

// The instance's ready condition leaves out a container with affects_readiness:
// false, whatever its own condition says, and names only the counted ones.
func TestReadyLeavesOutUncountedContainers(t *testing.T) {
	now := time.Now()
	container := func(name string, counts, ready bool) status.Container {
		c := status.Container{Name: name, AffectsReadiness: counts}
		c.Ready.Set(ready, "Exited", "exit code 1", now)
		return c
	}
	tests := []struct {
		name string
		cs   []status.Container
		want bool
		msg  string
	}{
		{"a counted container not ready → not ready", []status.Container{container("web", true, true), container("shipper", true, false)}, false, "shipper: exit code 1"},
		{"an uncounted container not ready → ready", []status.Container{container("web", true, true), container("shipper", false, false)}, true, ""},
		{"only uncounted containers, none ready → ready", []status.Container{container("shipper", false, false)}, true, ""},
		{"counted web not ready, uncounted shipper not ready → names web only", []status.Container{container("web", true, false), container("shipper", false, false)}, false, "web: exit code 1"},
	}
	for _, tt := range tests {
		sv := &Supervisor{state: status.InstanceRunning}
		sv.installed.Set(true, "Installed", "", now)
		sv.mu.Lock()
		sv.refreshReadyLocked(tt.cs, now)
		sv.mu.Unlock()
		if sv.ready.True() != tt.want || sv.ready.Message != tt.msg {
			t.Errorf("%s: ready %v %q, want %v %q", tt.name, sv.ready.True(), sv.ready.Message, tt.want, tt.msg)
		}
	}
}

// While the containers are being made, those not made yet show their waiting
// statuses: the instance is not ready before every container exists. A read between
// the end of preparing and the first container made saw none and an instance ready
// (a reload taken then left the first revision never stable).
func TestNotReadyWhileTheContainersAreMade(t *testing.T) {
	now := time.Now()
	sv := &Supervisor{state: status.InstanceRunning}
	sv.installed.Set(true, "Prepared", "", now)
	for _, name := range []string{"web", "db"} {
		sv.waiting = append(sv.waiting, container.InitialStatus(&spec.Container{Name: name, TargetState: spec.TargetActive}, now))
	}
	sv.mu.Lock()
	cs := sv.snapshotsLocked()
	sv.refreshReadyLocked(cs, now)
	sv.mu.Unlock()
	if len(cs) != 2 || sv.ready.True() {
		t.Fatalf("running, no container made yet: %d containers shown, ready %v (%s); want the 2 waiting, not ready", len(cs), sv.ready.True(), sv.ready.Message)
	}
}
