package supervisor

import (
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// succeeded reports whether a container finished its work: completed with exit 0. It
// is not ready (its process exited) but holds the instance back no more than a
// removed one does: a stack with a migrate job becomes ready once the job is done.
func succeeded(st status.Container) bool {
	return st.State == status.Completed && st.LastExit != nil && st.LastExit.Code == 0
}

// jobFinished reports, in job mode (every container never or on_failure), whether no
// container can run again, and the exit code: the final exit of the first container
// in spec order that did not end with 0.
func (sv *Supervisor) jobFinished() (int, bool) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if len(sv.containers) == 0 {
		return 0, false
	}
	for _, c := range sv.containers {
		// A scheduled container runs again at its next time (docs/reference.md "Schedules").
		if c.Spec().RestartPolicy.Mode == spec.ModeAlways || c.Spec().Schedule != "" {
			return 0, false
		}
	}
	code := 0
	for _, c := range sv.containers {
		st := c.Status()
		// A completed container's last exit is its final one; so is that of one
		// stopped through the API (a job stopped in backoff after exit 3 did not
		// succeed). One that never ran has none. A failed one (a restart limit, a
		// dependency that failed) ran its last: its last exit code, 1 when it has
		// none or it was 0.
		switch {
		case st.State == status.Failed:
			if code == 0 {
				code = failedCode(st)
			}
		case st.State == status.Completed || st.State == status.Stopped && st.TargetState == spec.TargetRemoved:
			if code == 0 && st.LastExit != nil && st.LastExit.Code != 0 {
				code = st.LastExit.Code
			}
		default:
			return 0, false
		}
	}
	return code, true
}

// failedCode is the exit code tend ends with for a failed container: its last exit
// code (128+N for a signal), or 1 if it never ran or its last exit was 0.
func failedCode(st status.Container) int {
	if st.LastExit == nil || st.LastExit.Code == 0 {
		return 1
	}
	return st.LastExit.Code
}

// gaveUp finds the first container whose restart limit gave up (state failed, not by
// a dependency) and whose restart_policy.on_give_up is shutdown, and the exit code
// of tend then (docs/reference.md "Restart limits and deadlines").
func (sv *Supervisor) gaveUp() (string, int, bool) {
	for _, c := range sv.current() {
		if c.Spec().RestartPolicy.OnGiveUp != spec.GiveUpShutdown {
			continue
		}
		if st := c.Status(); st.State == status.Failed && st.Ready.Reason != status.ReasonDependencyFailed {
			return c.Name(), failedCode(st), true
		}
	}
	return "", 0, false
}
