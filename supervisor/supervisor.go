// Package supervisor owns the instance: preparing it (init containers), the set of
// containers, shutdown behind the TERM barrier, reload, signals, the status document
// and the kept output. One goroutine (Run's) makes every decision; the API (package
// api, which it starts) and signal handlers only send it requests.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/api"
	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Options configure a supervisor beyond its spec.
type Options struct {
	// Load re-reads the spec for a reload.
	Load func() (*spec.Spec, error)
	// Listen holds the API addresses: "unix:PATH" or "HOST:PORT".
	Listen         []string
	APITokenFile   string
	ReportURL      string
	ReportInterval time.Duration
	Log            zerolog.Logger
	Stdout, Stderr io.Writer
	// Process is the process-wide set-up begun by the caller (SetUpProcess); nil:
	// Run begins it itself.
	Process *Process
	// WatchPath is the spec file to reload on every change of its content
	// (--watch); "" watches nothing.
	WatchPath string
	// OnReady is called whenever the instance turns ready, under the supervisor's
	// lock: it must return at once.
	OnReady func()
}

// Process is what tend sets up as a process before it supervises anything: it
// becomes the child subreaper (which starts the reaper) and catches the signals Run
// handles. It is apart from Run so that tend can begin it while the spec loads: the
// runtime starts a thread for signal masks and the reaper a goroutine, about 0.3 ms
// of a launch that is spent beside the parsing instead of after it.
type Process struct {
	signals chan os.Signal
	done    chan struct{} // closed when the set-up is complete
	err     error         // becoming the subreaper failed (a warning, not fatal)
}

// SetUpProcess begins the process-wide set-up in a goroutine. Signals that arrive
// from now on wait for Run instead of acting by default.
func SetUpProcess() *Process {
	p := &Process{signals: make(chan os.Signal, 8), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = proc.BecomeSubreaper()
		signal.Notify(p.signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	}()
	return p
}

// ExitError is a runtime failure that ends tend with exit code 1.
type ExitError struct{ Err error }

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Supervisor runs one instance.
type Supervisor struct {
	opts   Options
	log    zerolog.Logger
	stdout *output.Console
	stderr *output.Console
	token  string

	requests    chan request
	changed     chan struct{}   // coalesced "some status changed"
	reloadSteps chan reloadStep // a reload's goroutines hand their results back here
	runCtx      context.Context
	// reloadCtx bounds a reload's resource work; shutdown cancels it so that no
	// symlink switch or notify action runs while the containers are stopping.
	reloadCtx    context.Context
	cancelReload context.CancelFunc

	// Owned by the main loop.
	reloading bool
	pending   []request     // requests that arrived during a reload, handled after it
	reprep    *reprep       // a re-prepare past its fetch (reprepare.go), or nil
	reporter  *api.Reporter // nil without --report-url

	mu         sync.Mutex // guards the fields below, read by the API
	spec       *spec.Spec
	revision   string
	state      status.InstanceState
	installed  status.Condition
	ready      status.Condition
	inits      []status.InitContainer
	containers []*container.Container
	waiting    []status.Container // what status shows of the containers while preparing
	reloadErr  string
	res        *resourceState // nil until preparing starts; see resources.go
	cgroups    *cgroup.Tree   // nil until Run opens it (cgroups.go)
	logs       *logHub        // the output kept for GET /v1/logs (loghub.go)

	usage *usageDemand // who wants the usage sampled (usage.go)
}

// New returns a supervisor for s.
func New(s *spec.Spec, opts Options) *Supervisor {
	now := time.Now()
	sv := &Supervisor{
		opts:        opts,
		log:         opts.Log,
		stdout:      output.NewConsole(opts.Stdout),
		stderr:      output.NewConsole(opts.Stderr),
		logs:        newLogHub(),
		usage:       newUsageDemand(),
		requests:    make(chan request),
		changed:     make(chan struct{}, 1),
		reloadSteps: make(chan reloadStep, 4),
		spec:        s,
		revision:    s.Revision(),
		state:       status.InstancePreparing,
		installed:   status.NewCondition(false, status.ReasonPreparing, "", now),
		ready:       status.NewCondition(false, status.ReasonPreparing, "", now),
	}
	for _, ic := range s.InitContainers {
		sv.inits = append(sv.inits, status.InitContainer{Name: ic.Name, State: status.Waiting})
	}
	for i := range s.Containers {
		sv.waiting = append(sv.waiting, container.InitialStatus(&s.Containers[i], now))
	}
	return sv
}

// notify tells the main loop that some status changed. It never blocks.
func (sv *Supervisor) notify() {
	select {
	case sv.changed <- struct{}{}:
	default:
	}
	if sv.reporter != nil {
		sv.reporter.Kick()
	}
}

// Run runs the instance until a requested shutdown (exit code 0), the end of a job
// (its exit code), or a runtime failure (*ExitError). It goes through three phases:
// preparing (resources, init containers), starting the containers, supervising.
func (sv *Supervisor) Run(ctx context.Context) (int, error) {
	signals, err := sv.setUp()
	if err != nil {
		return 1, err
	}
	defer signal.Stop(signals)
	// Nothing outlives tend: whatever left its container's process group (setsid, a
	// daemon's double fork) came back to tend as the subreaper and ends here, after
	// every stop sequence has run (with cgroups, each container's exit took its
	// own); then the emptied cgroups go.
	defer sv.closeCgroups()
	defer sv.killStrays()

	// The instance lock and the listeners come first: a second tend of the same
	// instance or sockets exits 1 before any resource or init container runs.
	lock, err := lockInstance(sv.spec.Instance.Dir, sv.log)
	if err != nil {
		return 1, &ExitError{err}
	}
	defer lock.release()
	srv, err := sv.startAPI()
	if err != nil {
		return 1, &ExitError{err}
	}
	defer srv.Close()
	if err := sv.openCgroups(); err != nil {
		return 1, &ExitError{err}
	}
	defer sv.startReporter()()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	sv.runCtx = runCtx
	sv.reloadCtx, sv.cancelReload = context.WithCancel(runCtx)
	defer sv.cancelReload()
	go sv.sampleUsage(runCtx)
	if sv.opts.WatchPath != "" {
		stopWatch, err := sv.watchSpec(runCtx, sv.opts.WatchPath)
		if err != nil {
			sv.setInstance(status.InstanceStopped, nil)
			return 1, &ExitError{err}
		}
		defer stopWatch()
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

// startReporter starts the reports to --report-url, if any, and returns what stops
// them.
func (sv *Supervisor) startReporter() (stop func()) {
	if sv.opts.ReportURL == "" {
		return func() {}
	}
	sv.reporter = api.StartReporter(sv.opts.ReportURL, sv.opts.ReportInterval, sv.Status, sv.log)
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

// ending is how Run ends when preparing does not lead to running.
type ending struct {
	code int
	err  error
}

// preparing runs resources and init containers (bounded by init_timeout_ms) while it
// serves signals and requests. It returns the reloads asked for meanwhile (they run
// once the containers have started), or how Run ends instead.
func (sv *Supervisor) preparing(ctx context.Context, signals <-chan os.Signal, srv *api.Server) ([]request, *ending) {
	sv.log.Info().Str("instance", sv.spec.Instance.Name).Str("revision", sv.revision).Msg("preparing")
	prepared := make(chan error, 1)
	prepCtx, cancelPrep := context.WithCancel(sv.runCtx)
	if t := spec.Ms(sv.spec.Instance.InitTimeoutMs); t > 0 {
		prepCtx, cancelPrep = context.WithTimeout(sv.runCtx, t)
	}
	defer cancelPrep()
	go func() { prepared <- sv.prepare(prepCtx) }()
	// abort ends preparing early: whatever runs is cancelled and waited for.
	abort := func(code int, err error) *ending {
		cancelPrep()
		<-prepared
		sv.setInstance(status.InstanceStopped, nil)
		return &ending{code, err}
	}
	var queued []request
	for {
		select {
		case err := <-prepared:
			return queued, sv.prepared(err)
		case sig := <-signals:
			switch sv.onSignal(phasePreparing, sig) {
			case signalStop:
				return queued, abort(0, nil)
			case signalReload:
				queued = append(queued, request{kind: reqReload})
			}
		case req := <-sv.requests:
			switch req.kind {
			case reqShutdown:
				req.reply(nil)
				return queued, abort(0, nil)
			case reqReload:
				sv.log.Info().Msg("reload queued until preparing ends")
				queued = append(queued, req) // after preparing (docs/reference.md "Reload")
			default:
				req.reply(errPreparing)
			}
		case err := <-srv.Failed():
			return queued, abort(1, &ExitError{err})
		case <-ctx.Done():
			return queued, abort(0, nil)
		}
	}
}

// prepared ends preparing with its result: installed, or how Run ends.
func (sv *Supervisor) prepared(err error) *ending {
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("preparing took longer than instance.init_timeout_ms (%v)", spec.Ms(sv.spec.Instance.InitTimeoutMs))
		}
		sv.setInstance(status.InstanceStopped, func() {
			sv.installed.Set(false, status.ReasonPrepareFailed, err.Error(), time.Now())
		})
		sv.log.Error().Err(err).Msg("preparing failed")
		return &ending{1, &ExitError{err}}
	}
	now := time.Now()
	sv.setInstance(status.InstanceRunning, func() {
		sv.installed.Set(true, status.ReasonPrepared, "", now)
	})
	return nil
}

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
	}
	sv.updateReady()
	sv.gate()
	return nil
}

// supervise is the main loop once the containers run: signals, requests, reload
// steps and status changes, until a shutdown, the end of a job or a failure.
func (sv *Supervisor) supervise(ctx context.Context, signals <-chan os.Signal, srv *api.Server) (int, error) {
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
		case <-sv.changed:
			sv.updateReady()
			sv.gate()
			if name, code, ok := sv.gaveUp(); ok {
				sv.log.Error().Str("container", name).Int("exit_code", code).Msg("restart limit reached and on_give_up is shutdown; stopping the instance")
				return sv.shutdown(signals, code), nil
			}
			if code, done := sv.jobFinished(); done {
				sv.log.Info().Int("exit_code", code).Msg("every container has finished")
				return sv.shutdown(signals, code), nil
			}
		case err := <-srv.Failed():
			sv.log.Error().Err(err).Msg("cannot serve the API; stopping")
			return sv.shutdown(signals, 1), &ExitError{err}
		case <-ctx.Done():
			return sv.shutdown(signals, 0), nil
		}
	}
}

// newContainer builds a container of spec s.
func (sv *Supervisor) newContainer(s *spec.Spec, cs *spec.Container, stoppedByRequest bool) (*container.Container, error) {
	logFile := ""
	if cs.Log != nil && cs.Log.File != "" {
		logFile = s.WorkDir(cs.Log.File) // relative to instance.dir, like working_dir
	}
	c, err := container.New(container.Config{
		Spec:    cs,
		Env:     s.ContainerEnv(cs),
		Dir:     s.WorkDir(cs.WorkingDir),
		LogFile: logFile,
		LogRoot: s.Instance.Dir,
		Stdout:  sv.stdout,
		Stderr:  sv.stderr,
		Logs:    sv.logs.ring(cs.Name, cs.KeepLines()),
		Log:     sv.log,
		Changed: sv.notify,

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

// prepare puts the resources and files in place, then runs the init containers.
func (sv *Supervisor) prepare(ctx context.Context) error {
	s := sv.spec
	if err := sv.prepareResources(ctx, s); err != nil {
		return err
	}
	if err := sv.prepareFiles(ctx, s); err != nil {
		return err
	}
	return sv.runInitContainers(ctx, s)
}

// runInitContainers runs the init containers of s strictly in order, each until it
// exits 0: at the first prepare and at every re-prepare (reprepare.go).
func (sv *Supervisor) runInitContainers(ctx context.Context, s *spec.Spec) error {
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		env := s.ProcessEnvAs(ic.Env, ic.Identity())
		sv.log.Info().Str("init_container", ic.Name).Msg("running init container")
		ring := sv.logs.ring(ic.Name, spec.DefaultKeepLines)
		g, err := sv.initCgroup(ic.Name)
		if err != nil {
			return err
		}
		err = container.RunUntilSuccess(ctx,
			func() ([]string, error) { return spec.Argv(ic.Command, env) },
			proc.Cmd{
				Env:    env,
				Dir:    s.WorkDir(ic.WorkingDir),
				Stdout: output.NewLineWriter(ic.Name, sv.stdout, nil).WithRing(ring, false),
				Stderr: output.NewLineWriter(ic.Name, sv.stderr, nil).WithRing(ring, true),
				Ident:  ic.Identity(),
				Cgroup: placeIn(g),
			},
			restart.FromSpec(ic.TimeLimit),
			func() { sv.setInit(i, func(st *status.InitContainer) { st.State = status.Running }) },
			func(e proc.Exit, retryIn time.Duration) {
				sv.emptyInitCgroup(g, ic.Name) // before the run counts (SPEC §12.3)
				sv.initFinished(i, e, retryIn)
			})
		sv.removeInitCgroup(g, ic.Name)
		if err != nil {
			return fmt.Errorf("init container %q: %w", ic.Name, err)
		}
	}
	return nil
}

// initFinished records one run of init container i. Between failed tries it is in
// backoff and installed says which one fails, how, and when it runs again.
func (sv *Supervisor) initFinished(i int, e proc.Exit, retryIn time.Duration) {
	now := time.Now()
	x := container.ExitStatus(e, "", now)
	name := sv.spec.InitContainers[i].Name
	var attempts int
	sv.setInit(i, func(st *status.InitContainer) {
		st.Attempts++
		st.LastExit = x
		attempts = st.Attempts
		if e.Success() {
			st.State = status.Succeeded
			sv.installed.Set(false, status.ReasonPreparing, "", now)
			return
		}
		st.State = status.Backoff
		sv.installed.Set(false, status.ReasonInitContainerFailing,
			fmt.Sprintf("%s: %s (try %d), next try in %v", name, e, st.Attempts, retryIn.Round(time.Millisecond)), now)
	})
	ev := sv.log.Info()
	if !e.Success() {
		ev = sv.log.Warn().Int("try", attempts).Dur("retry_in_ms", retryIn)
	}
	ev.Str("init_container", name).Str("exit", e.String()).Msg("init container finished")
}

func (sv *Supervisor) setInit(i int, f func(*status.InitContainer)) {
	sv.mu.Lock()
	f(&sv.inits[i])
	sv.mu.Unlock()
	sv.notify()
}

// setInstance changes the instance state (and whatever f changes) under the lock.
func (sv *Supervisor) setInstance(state status.InstanceState, f func()) {
	sv.mu.Lock()
	sv.state = state
	if f != nil {
		f()
	}
	sv.mu.Unlock()
	sv.notify()
}

// current returns the running containers in spec order.
func (sv *Supervisor) current() []*container.Container {
	return sv.appendCurrent(nil)
}

// appendCurrent appends the current containers to dst: current into a slice the
// caller reuses.
func (sv *Supervisor) appendCurrent(dst []*container.Container) []*container.Container {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return append(dst, sv.containers...)
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
	if sv.containers == nil && sv.state == status.InstancePreparing {
		// Not made yet: they wait for the instance (docs/reference.md "The status document").
		return append([]status.Container{}, sv.waiting...)
	}
	out := make([]status.Container, 0, len(sv.containers))
	for _, c := range sv.containers {
		out = append(out, c.Status())
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
		if sv.ready.Set(true, status.ReasonContainersReady, "", now) && sv.opts.OnReady != nil {
			sv.opts.OnReady()
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

// Status builds the status document, with the containers' usage at most 2 s old
// (freshUsage).
func (sv *Supervisor) Status() status.Document {
	sv.freshUsage()
	sv.mu.Lock()
	defer sv.mu.Unlock()
	cs := sv.snapshotsLocked()
	sv.refreshReadyLocked(cs, time.Now())
	doc := status.Document{
		Instance:       sv.spec.Instance.Name,
		Revision:       sv.revision,
		State:          sv.state,
		Installed:      sv.installed,
		Ready:          sv.ready,
		InitContainers: append([]status.InitContainer{}, sv.inits...),
		Containers:     cs,
		ReloadError:    sv.reloadErr,
		// Read here, not kept: the console streams count their drops themselves.
		ConsoleDroppedLines: sv.stdout.Dropped() + sv.stderr.Dropped(),
	}
	sv.resourceStatus(&doc)
	doc.Cgroups = sv.cgroupsStatus()
	return doc
}

// Ready is the instance's ready condition now (GET /v1/ready): unlike Status it does
// not ask for the containers' usage, so a readiness probe does not keep them sampled.
func (sv *Supervisor) Ready() status.Condition {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if now := time.Now(); !sv.readyByStateLocked(now) {
		sv.refreshReadyLocked(sv.snapshotsLocked(), now)
	}
	return sv.ready
}

// joinLimited joins at most ten parts, then says how many more there were: the
// ready message of a large instance stays readable.
func joinLimited(parts []string, sep string) string {
	const maxParts = 10
	if len(parts) <= maxParts {
		return strings.Join(parts, sep)
	}
	return strings.Join(parts[:maxParts], sep) + fmt.Sprintf("%s(%d more)", sep, len(parts)-maxParts)
}
