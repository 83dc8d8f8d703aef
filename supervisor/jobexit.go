package supervisor

import (
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/status"
)

// succeeded reports whether a container finished its work: completed with exit 0. It
// is not ready (its process exited) but holds the instance back no more than a
// removed one does: a stack with a migrate job becomes ready once the job is done.
func succeeded(st status.Container) bool {
	return st.State == status.Completed && st.LastExit != nil && st.LastExit.Code == 0
}

// instanceEnd asks the restart rules whether the containers' ends stop the
// instance (restart.Instance): a give-up with on_give_up shutdown, or every job
// finished.
func (sv *Supervisor) instanceEnd() restart.InstanceEnd {
	sv.mu.Lock()
	for _, c := range sv.containers {
		sv.ends = append(sv.ends, c)
	}
	sv.mu.Unlock()
	end := restart.Instance(sv.ends)
	clear(sv.ends) // no removed container kept alive
	sv.ends = sv.ends[:0]
	return end
}
