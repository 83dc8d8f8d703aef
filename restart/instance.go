package restart

import (
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Container is what the instance's rule reads of one container: its spec and its
// status snapshot (read only when the rule needs it: an instance of a thousand
// always-restarted containers is asked after every change).
type Container interface {
	Name() string
	Spec() *spec.Container
	Status() status.Container
}

// InstanceEnd says whether the instance stops because of how its containers ended,
// and with what exit code.
type InstanceEnd struct {
	Stop bool
	Code int
	// GaveUp names the container whose restart limit gave up with on_give_up
	// shutdown; "" when every container finished (job mode).
	GaveUp string
}

// Instance answers "the containers (in spec order) ended like this: does the
// instance stop?" (docs/reference.md "Job mode", "Restart limits and shutdown"):
//   - a container whose restart limit gave up with on_give_up shutdown stops it,
//     with that container's failed code (FailedCode);
//   - in job mode (no container's mode restarts after success, none scheduled) it stops
//     once no container can run again, with the first non-zero final exit in spec
//     order: a completed container's last exit, that of one stopped through the API
//     (a job stopped in backoff after exit 3 did not succeed), FailedCode of a
//     failed one; one that never ran has none.
func Instance(cs []Container) InstanceEnd {
	for _, c := range cs {
		if c.Spec().RestartPolicy.OnGiveUp != spec.GiveUpShutdown {
			continue
		}
		if st := c.Status(); st.State == status.Failed && st.Ready.Reason != status.ReasonDependencyFailed {
			return InstanceEnd{Stop: true, Code: FailedCode(st), GaveUp: c.Name()}
		}
	}
	if len(cs) == 0 {
		return InstanceEnd{}
	}
	for _, c := range cs {
		// A scheduled container runs again at its next time (docs/reference.md "Schedules").
		if !c.Spec().RestartPolicy.Completes() || c.Spec().Schedule != "" {
			return InstanceEnd{}
		}
	}
	code := 0
	for _, c := range cs {
		st := c.Status()
		switch {
		case st.State == status.Failed:
			if code == 0 {
				code = FailedCode(st)
			}
		case st.State == status.Completed || st.State == status.Stopped && st.TargetState == spec.TargetRemoved:
			if code == 0 && st.LastExit != nil && st.LastExit.Code != 0 {
				code = st.LastExit.Code
			}
		default:
			return InstanceEnd{}
		}
	}
	return InstanceEnd{Stop: true, Code: code}
}

// FailedCode is the exit code tend ends with for a failed container (its restart
// limit gave up, or a dependency failed): its last exit code (128+N for a signal),
// or 1 if it never ran or its last exit was 0.
func FailedCode(st status.Container) int {
	if st.LastExit == nil || st.LastExit.Code == 0 {
		return 1
	}
	return st.LastExit.Code
}
