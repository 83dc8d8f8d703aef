package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Run runs the instance until a requested shutdown (exit code 0), the end of a job
// (its exit code), or a runtime failure (*ExitError). It goes through three phases:
// preparing (resources, init containers), starting the containers, supervising.
func (sv *Supervisor) Run(ctx context.Context) (int, error) {
	signals, err := sv.setUp()
	if err != nil {
		return 1, err
	}
	if sv.opts.Process == nil {
		// Ours, so stopped here; a caller's is the caller's: tend exits right after
		// Run, and a stop paid 0.1-0.6 ms for the runtime's signal-mask thread.
		defer signal.Stop(signals)
	}
	// Nothing outlives tend: whatever left its container's process group (setsid, a
	// daemon's double fork) came back to tend as the subreaper and ends here, after
	// every stop sequence has run (with cgroups, each container's exit took its
	// own); then the emptied cgroups go.
	defer sv.closeCgroups()
	defer sv.killStrays()
	srv, release, err := sv.claim()
	defer release()
	if err != nil {
		return 1, err
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	stopRunning, err := sv.startRunning(runCtx)
	defer stopRunning()
	if err != nil {
		return 1, err
	}

	queued, end := sv.preparing(ctx, signals, srv)
	if end != nil {
		answerQueued(queued) // reloads queued while preparing never run now
		return end.code, end.err
	}
	if err := sv.startContainers(); err != nil {
		return 1, err
	}
	for _, req := range queued {
		sv.reload(req)
	}
	return sv.supervise(ctx, signals, srv)
}

// claim takes what the instance holds while it runs: the instance lock and the
// listeners come first, so that a second tend of the same instance or sockets exits
// 1 before any resource or init container runs; then the revisions, the cgroups and
// the reports. release gives back what was taken, in reverse order, also after an
// error.
func (sv *Supervisor) claim() (srv API, release func(), err error) {
	var taken []func()
	release = func() {
		for i := len(taken) - 1; i >= 0; i-- {
			taken[i]()
		}
	}
	lock, err := lockInstance(sv.spec.Instance.Dir, sv.log)
	if err != nil {
		return nil, release, &ExitError{err}
	}
	taken = append(taken, lock.release)
	sv.openRevisions()
	if srv, err = sv.startAPI(); err != nil {
		return nil, release, &ExitError{err}
	}
	taken = append(taken, srv.Close)
	if err := sv.openCgroups(); err != nil {
		return nil, release, &ExitError{err}
	}
	taken = append(taken, sv.startReporter())
	return srv, release, nil
}

// startRunning starts what lives as long as the run: the contexts reloads and
// containers run under, the usage sampler and the --watch of the spec file. The
// returned function stops them, also after an error.
func (sv *Supervisor) startRunning(runCtx context.Context) (stop func(), err error) {
	sv.runCtx = runCtx
	sv.reloadCtx, sv.cancelReload = context.WithCancel(runCtx)
	go sv.sampleUsage(runCtx)
	if sv.opts.WatchPath == "" {
		return sv.cancelReload, nil
	}
	stopWatch, err := sv.watchSpec(runCtx, sv.opts.WatchPath)
	if err != nil {
		sv.setInstance(status.InstanceStopped, nil)
		return sv.cancelReload, &ExitError{err}
	}
	return func() { stopWatch(); sv.cancelReload() }, nil
}

// startReporter starts the reports to --report-url, if any, and returns what stops
// them.
func (sv *Supervisor) startReporter() (stop func()) {
	if sv.opts.Report == nil {
		return func() {}
	}
	sv.reporter = sv.opts.Report(sv.Status)
	return sv.reporter.Stop
}

// setUp finishes the process-wide set-up (subreaper, signals) and reads the API
// token; it returns the signals Run handles.
func (sv *Supervisor) setUp() (chan os.Signal, error) {
	p := sv.opts.Process
	if p == nil {
		p = SetUpProcess()
	}
	<-p.done
	if p.err != nil {
		sv.log.Warn().Err(p.err).Msg("cannot become a child subreaper; orphans will not be reaped here")
	}
	if err := proc.ProtectFromOOM(); err != nil {
		sv.log.Debug().Err(err).Msg("oom_score_adj left as it was")
	}
	if sv.opts.APITokenFile != "" {
		b, err := os.ReadFile(sv.opts.APITokenFile)
		if err != nil {
			signal.Stop(p.signals)
			return nil, &ExitError{fmt.Errorf("read --api-token-file: %w", err)}
		}
		sv.token = strings.TrimSpace(string(b))
	}
	return p.signals, nil
}

// collectStartGarbage collects what parsing and preparing left, once the first
// container is on its way (its start does not wait) and before the others make
// their objects: these then fill the slots that garbage leaves, instead of spans
// of their own that the garbage would keep partly empty for good. 100 idle
// containers: anonymous memory 4.3 -> 4.15 MiB (bench/README.md).
func collectStartGarbage() { runtime.GC() }

// startContainers starts every container of the spec.
func (sv *Supervisor) startContainers() error {
	sv.log.Info().Msg("prepared; starting containers")
	for i := range sv.spec.Containers {
		c, err := sv.newContainer(sv.spec, &sv.spec.Containers[i], false)
		if err == nil {
			if err = sv.openContainerCgroup(c); err != nil {
				c.Discard()
			}
		}
		if err != nil {
			sv.killAll()
			return &ExitError{err}
		}
		sv.mu.Lock()
		sv.containers = append(sv.containers, c)
		sv.mu.Unlock()
		go c.Run(sv.runCtx)
		if i == 0 && len(sv.spec.Containers) > 1 {
			collectStartGarbage()
		}
	}
	// The statuses shown while preparing are not shown again (snapshotsLocked reads
	// the containers now): 450 bytes a container kept for nothing.
	sv.mu.Lock()
	sv.waiting = nil
	sv.mu.Unlock()
	sv.updateReady()
	sv.gate()
	return nil
}

// supervise is the main loop once the containers run: signals, requests, reload
// steps and status changes, until a shutdown, the end of a job or a failure.
func (sv *Supervisor) supervise(ctx context.Context, signals <-chan os.Signal, srv API) (int, error) {
	for {
		select {
		case sig := <-signals:
			switch sv.onSignal(phaseRunning, sig) {
			case signalStop:
				return sv.shutdown(signals, 0), nil
			case signalReload:
				sv.reload(request{kind: reqReload})
			}
		case req := <-sv.requests:
			if req.kind == reqShutdown {
				req.reply(nil)
				sv.log.Info().Msg("shutdown requested through the API")
				return sv.shutdown(signals, 0), nil
			}
			sv.handle(req)
		case step := <-sv.reloadSteps:
			if end := sv.onReloadStep(step); end != nil {
				return sv.shutdown(signals, end.code), end.err
			}
		case <-sv.rev.deadline:
			sv.onRollbackDeadline()
		case <-sv.changed:
			if end := sv.onChanged(); end.Stop {
				return sv.shutdown(signals, end.Code), nil
			}
		case err := <-srv.Failed():
			sv.log.Error().Err(err).Msg("cannot serve the API; stopping")
			return sv.shutdown(signals, 1), &ExitError{err}
		case <-ctx.Done():
			return sv.shutdown(signals, 0), nil
		}
	}
}

// onChanged follows a change of a container's status: the instance's readiness,
// the active revision's, the containers waiting on conditions; and whether the
// containers' ends stop the instance.
func (sv *Supervisor) onChanged() restart.InstanceEnd {
	sv.updateReady()
	sv.revisionReady()
	sv.gate()
	end := sv.instanceEnd()
	switch {
	case !end.Stop:
	case end.GaveUp != "":
		sv.log.Error().Str("container", end.GaveUp).Int("exit_code", end.Code).Msg("restart limit reached and on_give_up is shutdown; stopping the instance")
	default:
		sv.log.Info().Int("exit_code", end.Code).Msg("every container has finished")
	}
	return end
}

// newContainer builds a container of spec s.
func (sv *Supervisor) newContainer(s *spec.Spec, cs *spec.Container, stoppedByRequest bool) (*container.Container, error) {
	logFile := ""
	if cs.Log != nil && cs.Log.File != "" {
		logFile = s.WorkDir(cs.Log.File) // relative to instance.dir, like working_dir
	}
	c, err := container.New(container.Config{
		Spec:     cs,
		Env:      s.ContainerEnv(cs),
		Instance: realDir(s.Instance.Dir),
		Dir:      s.WorkDir(cs.WorkingDir),
		LogFile:  logFile,
		LogRoot:  s.Instance.Dir,
		Stdout:   sv.stdout,
		Stderr:   sv.stderr,
		Logs:     sv.logs.ring(cs.Name, cs.KeepLines()),
		Log:      sv.log,
		Changed:  sv.notify,

		StoppedByRequest: stoppedByRequest,
		Sockets:          sv.socketsFor(s, cs),
		// Started by the main loop once its conditions hold (gate).
		Held: len(cs.DependsOn) > 0,
	})
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", cs.Name, err)
	}
	return c, nil
}

// updateReady recomputes the instance ready condition: installed and every
// container ready, but those with affects_readiness: false.
func (sv *Supervisor) updateReady() {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	now := time.Now()
	if sv.readyByStateLocked(now) {
		// No snapshots: a shutdown publishes several changes per container, and
		// copying every container's status for each made stopping a thousand
		// containers quadratic.
		return
	}
	sv.refreshReadyLocked(sv.snapshotsLocked(), now)
}

// snapshotsLocked returns every container's status snapshot, in spec order.
func (sv *Supervisor) snapshotsLocked() []status.Container {
	out := make([]status.Container, 0, max(len(sv.containers), len(sv.waiting)))
	for _, c := range sv.containers {
		out = append(out, c.Status())
	}
	// Those not made yet wait for the instance (docs/reference.md "The status
	// document"): until startContainers has made the last (it then drops waiting).
	// Without them, a read between the end of preparing and the first container
	// made saw none and an instance ready.
	if len(sv.waiting) > len(sv.containers) {
		out = append(out, sv.waiting[len(sv.containers):]...)
	}
	return out
}

// refreshReadyLocked sets the instance ready condition from the container snapshots
// cs. Every status document computes it from the very snapshots it shows, so no
// document (a report above all) pairs a stopping container with a ready instance.
func (sv *Supervisor) refreshReadyLocked(cs []status.Container, now time.Time) {
	if sv.readyByStateLocked(now) {
		return
	}
	var notReady []string
	for _, st := range cs {
		if st.AffectsReadiness && !st.Ready.True() && !succeeded(st) {
			msg := st.Ready.Message
			if msg == "" {
				msg = string(st.Ready.Reason)
			}
			notReady = append(notReady, st.Name+": "+msg)
		}
	}
	if len(notReady) == 0 {
		if sv.ready.Set(true, status.ReasonContainersReady, "", now) {
			if sv.opts.OnReady != nil {
				sv.opts.OnReady()
			}
			// The main loop marks the active revision ready (revisionReady) even when
			// a status request saw the change first.
			select {
			case sv.changed <- struct{}{}:
			default:
			}
		}
		return
	}
	sv.ready.Set(false, status.ReasonContainersNotReady, joinLimited(notReady, "; "), now)
}

// readyByStateLocked sets the instance ready condition when the instance's own state
// decides it whatever the containers say (not installed, on its way out), and
// reports whether it did.
func (sv *Supervisor) readyByStateLocked(now time.Time) bool {
	switch {
	case !sv.installed.True():
		sv.ready.Set(false, status.ReasonNotInstalled, sv.installed.Message, now)
		return true
	case sv.state == status.InstanceStopping || sv.state == status.InstanceStopped:
		// An instance on its way out takes no traffic, before its containers say so.
		sv.ready.Set(false, status.ReasonStopping, "the instance is "+string(sv.state), now)
		return true
	}
	return false
}
