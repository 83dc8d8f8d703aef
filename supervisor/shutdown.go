package supervisor

import (
	"context"
	"os"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/status"
)

// shutdown stops every container, in reverse order of depends_on and behind the TERM
// barriers (stopInOrder), destroys them, and returns code. A second SIGTERM/SIGINT
// kills everything at once.
func (sv *Supervisor) shutdown(signals <-chan os.Signal, code int) int {
	sv.setInstance(status.InstanceStopping, nil)
	sv.cancelReload()
	answerQueued(sv.pending)
	sv.pending = nil
	cs := sv.current()
	killCtx, kill := context.WithCancel(context.Background())
	defer kill()
	sv.stopInOrder(cs, killCtx, func(*container.Container) bool { return true })
	for _, c := range cs {
	wait:
		for {
			select {
			case <-c.Done():
				break wait
			case sig := <-signals:
				if sv.onSignal(phaseStopping, sig) == signalKill {
					kill()
				}
			case req := <-sv.requests:
				req.reply(errStopping)
			case step := <-sv.reloadSteps:
				sv.abandon(step)
			case <-sv.changed:
				sv.updateReady()
			}
		}
	}
	if sv.reprep != nil {
		<-sv.reprep.done // its init container is cancelled; nothing may outlive tend
	}
	sv.setInstance(status.InstanceStopped, nil)
	sv.updateReady()
	sv.log.Info().Int("exit_code", code).Msg("stopped")
	return code
}

// strayGrace is how long processes left below tend after every container stopped
// get between SIGTERM and SIGKILL.
const strayGrace = 2 * time.Second

func (sv *Supervisor) killStrays() {
	if n := proc.KillDescendants(strayGrace); n > 0 {
		sv.log.Warn().Int("processes", n).Msg("ended processes left behind by containers (SIGTERM, SIGKILL after 2s)")
	}
}

// killAll SIGKILLs every container started so far (a failure while starting them).
func (sv *Supervisor) killAll() {
	killCtx, kill := context.WithCancel(context.Background())
	kill()
	for _, c := range sv.current() {
		c.Shutdown(container.StopOp{Kill: killCtx})
		<-c.Done()
	}
}
