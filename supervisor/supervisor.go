// Package supervisor owns the instance: preparing it (init containers), the set of
// containers, shutdown behind the TERM barrier, reload, signals, the status document,
// the API and the reporter. One goroutine (Run's) makes every decision; the API and
// signal handlers only send it requests.
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
	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/container"
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
	stdout *container.Output
	stderr *container.Output
	token  string

	requests chan request
	changed  chan struct{} // coalesced "some status changed"
	internal chan func()   // work handed back to the main loop by its own goroutines
	runCtx   context.Context
	// reloadCtx bounds a reload's resource work; shutdown cancels it so that no
	// symlink switch or notify action runs while the containers are stopping.
	reloadCtx    context.Context
	cancelReload context.CancelFunc

	// Owned by the main loop.
	reloading  bool
	pending    []request     // requests that arrived during a reload, handled after it
	reportKick chan struct{} // nil without --report-url

	mu         sync.Mutex // guards the fields below, read by the API
	spec       *spec.Spec
	revision   string
	state      string
	installed  status.Condition
	ready      status.Condition
	inits      []status.InitContainer
	containers []*container.Container
	reloadErr  string
	res        *resourceState // nil until preparing starts; see resources.go
}

// New returns a supervisor for s.
func New(s *spec.Spec, opts Options) *Supervisor {
	now := time.Now()
	sv := &Supervisor{
		opts:      opts,
		log:       opts.Log,
		stdout:    container.NewOutput(opts.Stdout),
		stderr:    container.NewOutput(opts.Stderr),
		requests:  make(chan request),
		changed:   make(chan struct{}, 1),
		internal:  make(chan func(), 4),
		spec:      s,
		revision:  s.Revision(),
		state:     status.InstancePreparing,
		installed: status.NewCondition(false, "Preparing", "", now),
		ready:     status.NewCondition(false, "Preparing", "", now),
	}
	for _, ic := range s.InitContainers {
		sv.inits = append(sv.inits, status.InitContainer{Name: ic.Name, State: status.Waiting})
	}
	return sv
}

// notify tells the main loop that some status changed. It never blocks.
func (sv *Supervisor) notify() {
	select {
	case sv.changed <- struct{}{}:
	default:
	}
	if sv.reportKick != nil {
		select {
		case sv.reportKick <- struct{}{}:
		default:
		}
	}
}

// Run runs the instance until a requested shutdown (exit code 0), the end of a job
// (its exit code), or a runtime failure (*ExitError).
func (sv *Supervisor) Run(ctx context.Context) (int, error) {
	p := sv.opts.Process
	if p == nil {
		p = SetUpProcess()
	}
	<-p.done
	if p.err != nil {
		sv.log.Warn().Err(p.err).Msg("cannot become a child subreaper; orphans will not be reaped here")
	}
	signals := p.signals
	defer signal.Stop(signals)

	if sv.opts.APITokenFile != "" {
		b, err := os.ReadFile(sv.opts.APITokenFile)
		if err != nil {
			return 1, &ExitError{fmt.Errorf("read --api-token-file: %w", err)}
		}
		sv.token = strings.TrimSpace(string(b))
	}
	// The instance lock and the listeners come first: a second tend of the same
	// instance or sockets exits 1 before any resource or init container runs.
	lock, err := lockInstance(sv.spec.Instance.Dir, sv.log)
	if err != nil {
		return 1, &ExitError{err}
	}
	defer lock.release()
	api, err := sv.startAPI()
	if err != nil {
		return 1, &ExitError{err}
	}
	defer api.close()
	if sv.opts.ReportURL != "" {
		stopReport := sv.startReporter()
		defer stopReport()
	}

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	sv.runCtx = runCtx
	sv.reloadCtx, sv.cancelReload = context.WithCancel(runCtx)
	defer sv.cancelReload()

	// Preparing: init containers in order, bounded by init_timeout_ms.
	sv.log.Info().Str("instance", sv.spec.Instance.Name).Str("revision", sv.revision).Msg("preparing")
	prepared := make(chan error, 1)
	prepCtx, cancelPrep := context.WithCancel(runCtx)
	if t := spec.Ms(sv.spec.Instance.InitTimeoutMs); t > 0 {
		prepCtx, cancelPrep = context.WithTimeout(runCtx, t)
	}
	go func() { prepared <- sv.prepare(prepCtx) }()
	var pendingReload []request
	// Reloads queued while preparing never run when preparing ends the instance.
	defer func() { answerQueued(pendingReload) }()
	for preparing := true; preparing; {
		select {
		case err := <-prepared:
			cancelPrep()
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("preparing took longer than instance.init_timeout_ms (%v)", spec.Ms(sv.spec.Instance.InitTimeoutMs))
				}
				sv.setInstance(status.InstanceStopped, func() {
					sv.installed.Set(false, "PrepareFailed", err.Error(), time.Now())
				})
				sv.log.Error().Err(err).Msg("preparing failed")
				return 1, &ExitError{err}
			}
			preparing = false
		case sig := <-signals:
			switch sig {
			case syscall.SIGTERM, syscall.SIGINT:
				sv.log.Info().Str("signal", sig.String()).Msg("shutdown requested while preparing")
				cancelPrep()
				<-prepared
				sv.setInstance(status.InstanceStopped, nil)
				return 0, nil
			case syscall.SIGHUP:
				sv.log.Info().Msg("reload queued until preparing ends")
				pendingReload = append(pendingReload, request{kind: reqReload})
			}
		case req := <-sv.requests:
			switch req.kind {
			case reqShutdown:
				req.reply(nil)
				cancelPrep()
				<-prepared
				sv.setInstance(status.InstanceStopped, nil)
				return 0, nil
			case reqReload:
				sv.log.Info().Msg("reload queued until preparing ends")
				pendingReload = append(pendingReload, req) // after preparing, SPEC.md §3.6
			default:
				req.reply(errPreparing)
			}
		case err := <-api.failed:
			cancelPrep()
			<-prepared
			sv.setInstance(status.InstanceStopped, nil)
			return 1, &ExitError{err}
		case <-ctx.Done():
			cancelPrep()
			<-prepared
			return 0, nil
		}
	}
	cancelPrep()

	now := time.Now()
	sv.setInstance(status.InstanceRunning, func() {
		sv.installed.Set(true, "Prepared", "", now)
	})
	sv.log.Info().Msg("prepared; starting containers")
	for i := range sv.spec.Containers {
		c, err := sv.newContainer(sv.spec, &sv.spec.Containers[i])
		if err != nil {
			sv.killAll()
			return 1, &ExitError{err}
		}
		sv.mu.Lock()
		sv.containers = append(sv.containers, c)
		sv.mu.Unlock()
		go c.Run(runCtx)
	}
	sv.updateReady()
	queued := pendingReload
	pendingReload = nil // taken over by the main loop
	for _, req := range queued {
		sv.reload(req)
	}

	for {
		select {
		case sig := <-signals:
			switch sig {
			case syscall.SIGTERM, syscall.SIGINT:
				sv.log.Info().Str("signal", sig.String()).Msg("shutdown requested")
				return sv.shutdown(signals, 0), nil
			case syscall.SIGHUP:
				sv.reload(request{kind: reqReload})
			case syscall.SIGUSR1, syscall.SIGUSR2:
				for _, c := range sv.current() {
					c.Signal(sig.(syscall.Signal))
				}
			}
		case req := <-sv.requests:
			if req.kind == reqShutdown {
				req.reply(nil)
				sv.log.Info().Msg("shutdown requested through the API")
				return sv.shutdown(signals, 0), nil
			}
			sv.handle(req)
		case f := <-sv.internal:
			f()
		case <-sv.changed:
			sv.updateReady()
			if code, done := sv.jobFinished(); done {
				sv.log.Info().Int("exit_code", code).Msg("every container has finished")
				return sv.shutdown(signals, code), nil
			}
		case err := <-api.failed:
			sv.log.Error().Err(err).Msg("cannot serve the API; stopping")
			return sv.shutdown(signals, 1), &ExitError{err}
		case <-ctx.Done():
			return sv.shutdown(signals, 0), nil
		}
	}
}

// newContainer builds a container of spec s.
func (sv *Supervisor) newContainer(s *spec.Spec, cs *spec.Container) (*container.Container, error) {
	logFile := ""
	if cs.Log != nil && cs.Log.File != "" {
		logFile = s.WorkDir(cs.Log.File) // relative to instance.dir, like working_dir
	}
	c, err := container.New(container.Config{
		Spec:    cs,
		Env:     s.ProcessEnv(cs.Env),
		Dir:     s.WorkDir(cs.WorkingDir),
		LogFile: logFile,
		Stdout:  sv.stdout,
		Stderr:  sv.stderr,
		Log:     sv.log,
		Changed: sv.notify,
	})
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", cs.Name, err)
	}
	return c, nil
}

// prepare runs the init containers strictly in order, each until it exits 0.
func (sv *Supervisor) prepare(ctx context.Context) error {
	s := sv.spec
	if err := sv.prepareResources(ctx, s); err != nil {
		return err
	}
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		env := s.ProcessEnv(ic.Env)
		sv.setInit(i, func(st *status.InitContainer) { st.State = status.Running })
		sv.log.Info().Str("init_container", ic.Name).Msg("running init container")
		err := container.RunUntilSuccess(ctx,
			func() ([]string, error) { return spec.Argv(ic.Command, env) },
			proc.Cmd{
				Env:    env,
				Dir:    s.WorkDir(ic.WorkingDir),
				Stdout: container.NewLineWriter(ic.Name, sv.stdout, nil),
				Stderr: container.NewLineWriter(ic.Name, sv.stderr, nil),
			},
			restart.FromSpec(ic.TimeLimit),
			func(e proc.Exit) {
				x := &status.Exit{Code: e.Status(), At: status.At(time.Now()), Reason: e.String()}
				if e.Signal != 0 {
					// The name alone ("SIGKILL"), as in a container's last_exit.
					x.Signal = unix.SignalName(e.Signal)
				}
				sv.setInit(i, func(st *status.InitContainer) { st.Attempts++; st.LastExit = x })
				ev := sv.log.Info()
				if !e.Success() {
					ev = sv.log.Warn()
				}
				ev.Str("init_container", ic.Name).Str("exit", e.String()).Msg("init container finished")
			})
		if err != nil {
			return fmt.Errorf("init container %q: %w", ic.Name, err)
		}
		sv.setInit(i, func(st *status.InitContainer) { st.State = "succeeded" })
	}
	return nil
}

func (sv *Supervisor) setInit(i int, f func(*status.InitContainer)) {
	sv.mu.Lock()
	f(&sv.inits[i])
	sv.mu.Unlock()
	sv.notify()
}

// setInstance changes the instance state (and whatever f changes) under the lock.
func (sv *Supervisor) setInstance(state string, f func()) {
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
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return append([]*container.Container(nil), sv.containers...)
}

// updateReady recomputes the instance ready condition: installed and every
// container ready.
func (sv *Supervisor) updateReady() {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	now := time.Now()
	if !sv.installed.True() {
		sv.ready.Set(false, "NotInstalled", sv.installed.Message, now)
		return
	}
	var notReady []string
	for _, c := range sv.containers {
		st := c.Status()
		if !st.Ready.True() {
			msg := st.Ready.Message
			if msg == "" {
				msg = st.Ready.Reason
			}
			notReady = append(notReady, st.Name+": "+msg)
		}
	}
	if len(notReady) == 0 {
		sv.ready.Set(true, "ContainersReady", "", now)
		return
	}
	sv.ready.Set(false, "ContainersNotReady", joinLimited(notReady, "; "), now)
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
		if c.Spec().RestartPolicy.Mode == spec.ModeAlways {
			return 0, false
		}
	}
	code := 0
	for _, c := range sv.containers {
		st := c.Status()
		// A completed container's last exit is its final one; so is that of one
		// stopped through the API (a job stopped in backoff after exit 3 did not
		// succeed). One that never ran has none.
		done := st.State == status.Completed || st.State == status.Stopped && st.TargetState == spec.TargetRemoved
		if !done {
			return 0, false
		}
		if code == 0 && st.LastExit != nil && st.LastExit.Code != 0 {
			code = st.LastExit.Code
		}
	}
	return code, true
}

// shutdown stops every container concurrently behind one TERM barrier, destroys
// them, and returns code. A second SIGTERM/SIGINT kills everything at once.
func (sv *Supervisor) shutdown(signals <-chan os.Signal, code int) int {
	sv.setInstance(status.InstanceStopping, nil)
	sv.cancelReload()
	answerQueued(sv.pending)
	sv.pending = nil
	cs := sv.current()
	ignoring := 0
	for _, c := range cs {
		if c.Spec().TermBarrier != spec.BarrierWait {
			ignoring++
		}
	}
	killCtx, kill := context.WithCancel(context.Background())
	defer kill()
	op := container.StopOp{Barrier: container.NewBarrier(ignoring), Kill: killCtx, Destroy: true}
	for _, c := range cs {
		c.Shutdown(op)
	}
	for _, c := range cs {
	wait:
		for {
			select {
			case <-c.Done():
				break wait
			case sig := <-signals:
				if sig == syscall.SIGTERM || sig == syscall.SIGINT {
					sv.log.Warn().Str("signal", sig.String()).Msg("second signal: killing everything now")
					kill()
				}
			case req := <-sv.requests:
				req.reply(errStopping)
			case <-sv.internal: // a reload finishing: nothing new starts now
			case <-sv.changed:
				sv.updateReady()
			}
		}
	}
	sv.setInstance(status.InstanceStopped, nil)
	sv.updateReady()
	sv.log.Info().Int("exit_code", code).Msg("stopped")
	return code
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

// Status builds the status document.
func (sv *Supervisor) Status() status.Document {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	doc := status.Document{
		Instance:       sv.spec.Instance.Name,
		Revision:       sv.revision,
		State:          sv.state,
		Installed:      sv.installed,
		Ready:          sv.ready,
		InitContainers: append([]status.InitContainer{}, sv.inits...),
		Containers:     []status.Container{},
		ReloadError:    sv.reloadErr,
	}
	for _, c := range sv.containers {
		doc.Containers = append(doc.Containers, c.Status())
	}
	sv.resourceStatus(&doc)
	return doc
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
