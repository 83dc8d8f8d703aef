package supervisor

import (
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// OnReady is called each time the instance turns ready, and not for a status that
// stays ready.
func TestOnReadyWhenTheInstanceTurnsReady(t *testing.T) {
	calls := 0
	sv := &Supervisor{opts: Options{OnReady: func() { calls++ }}, state: status.InstanceRunning}
	sv.installed.Set(true, "Installed", "", time.Now())
	ready := status.Container{Name: "web"}
	ready.Ready.Set(true, "Running", "", time.Now())
	notReady := status.Container{Name: "web"}
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
