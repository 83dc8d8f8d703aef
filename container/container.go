// Package container owns one supervised process and its lifecycle: per-container init
// commands, starts in its own process group, restarts by the restart policy, liveness
// and readiness probes, and the stop and destroy policies. One goroutine owns all of a
// container's state; everything that can happen to it arrives there on channels.
package container

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Config is what the supervisor hands a container: its defaulted spec and the
// resolved environment and working directory of its processes.
type Config struct {
	Spec *spec.Container
	Env  []string
	Dir  string
	// LogFile is the absolute path of log.file ("" for none).
	LogFile string
	Stdout  *Output
	Stderr  *Output
	Log     zerolog.Logger
	// Changed is called after every status change. It must not block.
	Changed func()
	// Rand returns a uniform float in [0, 1) for the restart jitter; nil uses math/rand.
	Rand func() float64
}

// StopOp is one stop operation shared by the containers it stops together.
type StopOp struct {
	Barrier *Barrier
	// Kill, when done, cancels every wait and SIGKILLs the process group at once
	// (a second SIGTERM/SIGINT to tend). nil: never.
	Kill context.Context
	// Destroy runs the destroy_policy after the stop (instance shutdown, removal).
	Destroy bool
}

// Container is one supervised container. Create it with New, run its loop with Run,
// and drive it with Shutdown, Stop, Start, Restart and Signal.
type Container struct {
	cfg     Config
	cmds    chan command
	status  atomic.Pointer[status.Container]
	done    chan struct{}
	logFile *LogFile
}

type commandKind int

const (
	cmdShutdown commandKind = iota // stop for good (and destroy); the loop then ends
	cmdStop                        // target_state removed
	cmdStart                       // target_state active
	cmdRestart                     // stop if running, then start at once
	cmdSignal                      // forward a signal to the root process
)

type command struct {
	kind   commandKind
	op     StopOp
	signal syscall.Signal
}

// New prepares a container; it opens its log file when the spec has one.
func New(cfg Config) (*Container, error) {
	c := &Container{cfg: cfg, cmds: make(chan command), done: make(chan struct{})}
	if l := cfg.Spec.Log; l != nil && cfg.LogFile != "" {
		f, err := OpenLog(cfg.LogFile, deref(l.MaxSizeMb), deref(l.MaxFiles))
		if err != nil {
			return nil, err
		}
		changed := cfg.Changed
		if changed == nil {
			changed = func() {}
		}
		f.Report(cfg.Log.With().Str("container", cfg.Spec.Name).Logger(), changed)
		c.logFile = f
	}
	st := initialStatus(cfg.Spec, time.Now())
	c.status.Store(&st)
	return c, nil
}

// Discard releases what New opened, for a container that will never Run.
func (c *Container) Discard() {
	if c.logFile != nil {
		c.logFile.Close()
	}
}

// Name is the container's name.
func (c *Container) Name() string { return c.cfg.Spec.Name }

// Spec is the container's spec.
func (c *Container) Spec() *spec.Container { return c.cfg.Spec }

// Status returns the last published status snapshot.
func (c *Container) Status() status.Container {
	st := *c.status.Load()
	if c.logFile != nil {
		st.LogError = c.logFile.Err() // the log file's own state, not the loop's
	}
	return st
}

// Done is closed when the loop has ended: after a Shutdown has stopped (and destroyed)
// the container, or when Run's context was cancelled.
func (c *Container) Done() <-chan struct{} { return c.done }

// Shutdown stops the container for good by its stop policy as part of op. The
// container is finished when Done is closed.
func (c *Container) Shutdown(op StopOp) {
	select {
	case c.cmds <- command{kind: cmdShutdown, op: op}:
	case <-c.done:
		// Finished already (a reload stopped it): it sends no TERM, so it must not
		// hold the WAIT containers of op.
		if c.cfg.Spec.TermBarrier != spec.BarrierWait {
			op.Barrier.Arrive()
		}
	}
}

// Stop sets target_state removed: the container is stopped by its stop policy and
// stays stopped.
func (c *Container) Stop() { c.send(command{kind: cmdStop}) }

// Start sets target_state active and starts a stopped container (its init commands
// run only if they never ran for this spec).
func (c *Container) Start() { c.send(command{kind: cmdStart}) }

// Restart stops a running container by its stop policy and starts it again at once;
// a container waiting in backoff starts at once.
func (c *Container) Restart() { c.send(command{kind: cmdRestart}) }

// Signal forwards sig to the root process, if it is running.
func (c *Container) Signal(sig syscall.Signal) { c.send(command{kind: cmdSignal, signal: sig}) }

func (c *Container) send(cmd command) {
	select {
	case c.cmds <- cmd:
	case <-c.done:
	}
}

// Run is the container's loop. It returns when a Shutdown has finished or ctx is
// done; in the latter case the process group is SIGKILLed first.
func (c *Container) Run(ctx context.Context) {
	defer close(c.done)
	if c.logFile != nil {
		defer c.logFile.Close()
	}
	l := newLoop(c)
	l.run(ctx)
	l.drainOutput()
}

// outputGrace bounds how long a finished container waits for the rest of its last
// process's output (a descendant that escaped the group may hold the pipe forever).
const outputGrace = time.Second

// drainOutput waits for the last process's output to reach tend's stdout, so the
// final lines (an unfinished last line included) are not lost when tend exits.
func (l *loop) drainOutput() {
	if l.lastProc == nil {
		return
	}
	t := time.NewTimer(outputGrace)
	defer t.Stop()
	select {
	case <-l.lastProc.OutputDone():
	case <-t.C:
		l.lastProc.CloseOutput()
		<-l.lastProc.OutputDone()
	}
}

func initialStatus(sc *spec.Container, now time.Time) status.Container {
	st := status.Container{
		Name:        sc.Name,
		State:       status.Waiting,
		TargetState: sc.TargetState,
		Alive:       status.NewCondition(false, "NotStarted", "", now),
		Ready:       status.NewCondition(false, "NotStarted", "", now),
	}
	if sc.TargetState == spec.TargetRemoved {
		st.State = status.Stopped
		st.Ready = status.NewCondition(true, "Removed", "target_state is removed", now)
		st.Alive = status.NewCondition(false, "Removed", "", now)
	}
	return st
}

// loop is the state owned by Run's goroutine. Nothing else touches it.
type loop struct {
	c      *Container
	cfg    Config
	sc     *spec.Container
	policy restart.Policy
	rand   func() float64
	log    zerolog.Logger
	st     status.Container

	// The running process, if any, and the last one started (for its output).
	lastProc   *proc.Process
	proc       *proc.Process
	procDone   <-chan struct{}
	runID      uint64
	startedAt  time.Time
	killReason string // why tend killed it (liveness), for last_exit.reason

	fails       int  // consecutive short runs
	initialized bool // init commands ran for this spec
	started     bool // started at least once (restarts count from the second start)

	timer  *time.Timer
	timerC <-chan time.Time

	probeCancel context.CancelFunc
	probeEvents chan probes.Event
	hasLive     bool
	hasReady    bool

	initCancel context.CancelFunc
	initDone   chan error

	stop         *stopRun // the stop sequence in progress, or nil
	stopSteps    chan stopEvent
	afterStop    commandKind // cmdStop: stay stopped; cmdStart/cmdRestart: start again; cmdShutdown: finish
	finishing    bool        // a Shutdown arrived; end the loop once stopped
	destroyAfter *StopOp     // a destroy asked for while a stop without one was running
}

func newLoop(c *Container) *loop {
	sc := c.cfg.Spec
	rnd := c.cfg.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	return &loop{
		c:           c,
		cfg:         c.cfg,
		sc:          sc,
		policy:      restart.PolicyFromSpec(sc.RestartPolicy),
		rand:        rnd,
		log:         c.cfg.Log.With().Str("container", sc.Name).Logger(),
		st:          *c.status.Load(),
		probeEvents: make(chan probes.Event, 4),
		stopSteps:   make(chan stopEvent, 8),
		hasLive:     sc.LivenessProbe != nil,
		hasReady:    sc.ReadinessProbe != nil,
	}
}

func (l *loop) run(ctx context.Context) {
	if l.sc.TargetState != spec.TargetRemoved {
		l.begin()
	}
	for {
		select {
		case <-ctx.Done():
			l.abort()
			return
		case <-l.procDone:
			l.onExit()
		case ev := <-l.probeEvents:
			l.onProbe(ev)
		case <-l.timerC:
			l.timerC = nil
			if l.st.State == status.Backoff {
				l.startProcess()
			}
		case err := <-l.initDone:
			l.onInitDone(err)
		case ev := <-l.stopSteps:
			if l.onStopEvent(ev) {
				return
			}
		case cmd := <-l.c.cmds:
			if l.onCommand(cmd) {
				return
			}
		}
	}
}

// begin starts the container from nothing: init commands first when they have not
// run for this spec yet.
func (l *loop) begin() {
	if l.initialized || len(l.sc.Init) == 0 {
		l.initialized = true
		l.startProcess()
		return
	}
	l.setState(status.Initializing, "")
	ctx, cancel := context.WithCancel(context.Background())
	l.initCancel = cancel
	done := make(chan error, 1)
	l.initDone = done
	go func() { done <- l.runInit(ctx) }()
}

func (l *loop) onInitDone(err error) {
	l.initDone, l.initCancel = nil, nil
	if err != nil { // cancelled by a stop or shutdown, which already moved the state on
		return
	}
	l.initialized = true
	l.log.Info().Msg("init commands done")
	l.startProcess()
}

// startProcess starts the container's command. A command that cannot start is an
// exit like any other: logged, shown in status, and restarted by the policy.
func (l *loop) startProcess() {
	now := time.Now()
	if l.started {
		l.st.Restarts++
	}
	l.started = true
	l.st.NextStartAt = nil
	l.killReason = ""
	l.startedAt = now
	argv, err := spec.Argv(l.sc.Command, l.cfg.Env)
	var p *proc.Process
	if err == nil {
		p, err = proc.Start(proc.Cmd{
			Argv:   argv,
			Env:    l.cfg.Env,
			Dir:    l.cfg.Dir,
			Stdout: l.c.outputWriter(l.cfg.Stdout),
			Stderr: l.c.outputWriter(l.cfg.Stderr),
		})
	}
	if err != nil {
		l.log.Error().Err(err).Msg("cannot start")
		l.st.StartedAt = status.Ptr(now)
		l.afterExit(proc.Exit{Code: -1, StartErr: err}, 0)
		return
	}
	l.proc, l.procDone, l.lastProc = p, p.Done(), p
	l.runID++
	pid := p.Pid()
	l.st.Pid = &pid
	l.st.StartedAt = status.Ptr(now)
	l.st.Alive.Set(true, "Running", "", now)
	if !l.hasReady {
		l.st.Ready.Set(true, "Running", "", now)
	} else {
		l.st.Ready.Set(false, "NotProbed", "readiness probe has not succeeded yet", now)
	}
	l.setState(status.Running, "")
	l.log.Info().Int("pid", pid).Int("restarts", l.st.Restarts).Msg("started")
	l.startProbes()
}

func (l *loop) startProbes() {
	if !l.hasLive && !l.hasReady {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.probeCancel = cancel
	t := probes.Target{Env: l.cfg.Env, Dir: l.cfg.Dir, Container: l.sc.Name}
	if l.hasLive {
		probes.Start(ctx, probes.Liveness, l.sc.LivenessProbe, t, l.runID, l.probeEvents)
	}
	if l.hasReady {
		probes.Start(ctx, probes.Readiness, l.sc.ReadinessProbe, t, l.runID, l.probeEvents)
	}
}

func (l *loop) stopProbes() {
	if l.probeCancel != nil {
		l.probeCancel()
		l.probeCancel = nil
	}
}

func (l *loop) onProbe(ev probes.Event) {
	if ev.Run != l.runID || l.proc == nil || l.st.State != status.Running {
		return // a late result of an earlier run, or probes already stopped
	}
	now := time.Now()
	// Publish only what changed: checks pass many times a second across an
	// instance, and every publication makes the supervisor look at every container.
	changed := false
	switch ev.Kind {
	case probes.Liveness:
		if ev.Result.OK {
			changed = l.st.Alive.Set(true, "Running", "", now)
			break
		}
		msg := "liveness probe failed: " + ev.Result.Detail
		changed = l.st.Alive.Set(false, "LivenessProbeFailed", msg, now)
		if ev.Failed && l.killReason == "" {
			l.killReason = msg
			l.log.Warn().Str("reason", ev.Result.Detail).Int("failures", ev.Failures).Msg("liveness probe failed, killing the process group")
			_ = l.proc.SignalGroup(syscall.SIGKILL)
		}
	case probes.Readiness:
		if ev.Healthy {
			changed = l.st.Ready.Set(true, "Ready", "", now)
		} else {
			msg := "readiness probe failed"
			if ev.Result.Detail != "" {
				msg += ": " + ev.Result.Detail
			}
			changed = l.st.Ready.Set(false, "ReadinessProbeFailed", msg, now)
		}
	}
	if changed {
		l.publish()
	}
}

// onExit handles the end of the running process.
func (l *loop) onExit() {
	p := l.proc
	e := p.Exit()
	ran := time.Since(l.startedAt)
	// Whatever the process left behind in its group dies with it, as an init
	// container's leftovers do (SPEC.md §3.1) and as a Kubernetes container's would:
	// otherwise every restart would leave processes, and the output pipes they hold
	// open (with their copiers) in tend, behind.
	_ = p.SignalGroup(syscall.SIGKILL)
	l.proc, l.procDone = nil, nil
	l.st.Pid = nil
	l.stopProbes()
	if l.stop != nil {
		// Stopping: record the exit; the stop sequence sees it too and finishes.
		l.recordExit(e, "")
		l.log.Info().Str("exit", l.st.LastExit.Reason).Int("code", l.st.LastExit.Code).Dur("ran_ms", ran).Msg("exited while stopping")
		now := time.Now()
		l.st.Alive.Set(false, "Stopped", "", now)
		l.st.Ready.Set(false, "Stopping", "", now)
		l.publish()
		return
	}
	l.afterExit(e, ran)
}

// afterExit records an exit (or a failed start) and decides on the restart.
func (l *loop) afterExit(e proc.Exit, ran time.Duration) {
	now := time.Now()
	reason := l.killReason
	l.recordExit(e, reason)
	l.st.Alive.Set(false, "Exited", l.st.LastExit.Reason, now)
	l.st.Ready.Set(false, "Exited", l.st.LastExit.Reason, now)

	restartIt := false
	switch l.sc.RestartPolicy.Mode {
	case spec.ModeAlways:
		restartIt = true
	case spec.ModeOnFailure:
		restartIt = !e.Success()
	}
	ev := l.log.Info()
	if !e.Success() {
		ev = l.log.Warn()
	}
	ev.Str("exit", l.st.LastExit.Reason).Int("code", l.st.LastExit.Code).Dur("ran_ms", ran).Msg("exited")
	if !restartIt {
		l.setState(status.Completed, "")
		return
	}
	l.fails = l.policy.Fails(l.fails, ran)
	delay := l.policy.Delay(l.fails, l.rand)
	// Even an immediate restart goes through the timer and the loop's select, so a
	// command that fails to start with no delay configured cannot recurse, and
	// commands keep being served between restarts.
	l.setTimer(delay)
	if delay > 0 {
		l.st.NextStartAt = status.Ptr(now.Add(delay))
		l.log.Info().Dur("delay_ms", delay).Int("fails", l.fails).Msg("backoff before restart")
	}
	l.setState(status.Backoff, "")
}

func (l *loop) recordExit(e proc.Exit, reason string) {
	if reason == "" {
		reason = e.String()
	}
	x := &status.Exit{Code: e.Status(), At: status.At(time.Now()), Reason: reason}
	if e.Signal != 0 {
		x.Signal = signalName(e.Signal)
	}
	l.st.LastExit = x
}

func (l *loop) setTimer(d time.Duration) {
	l.stopTimer()
	l.timer = time.NewTimer(d)
	l.timerC = l.timer.C
}

func (l *loop) stopTimer() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer, l.timerC = nil, nil
	}
}

// onCommand handles a command; it reports whether the loop is finished.
func (l *loop) onCommand(cmd command) bool {
	switch cmd.kind {
	case cmdSignal:
		if l.proc != nil {
			_ = l.proc.Signal(cmd.signal)
		}
		return false
	case cmdShutdown:
		l.finishing = true
		return l.beginStop(cmd.op, cmdShutdown)
	case cmdStop:
		l.st.TargetState = spec.TargetRemoved
		return l.beginStop(StopOp{}, cmdStop)
	case cmdStart:
		l.st.TargetState = spec.TargetActive
		switch l.st.State {
		case status.Stopping:
			if l.afterStop == cmdStop {
				l.afterStop = cmdStart
			}
		case status.Stopped, status.Completed:
			// A requested start is a fresh start, as when it arrives during the stop
			// (finishStop): the backoff of earlier crashes does not carry over.
			l.fails = 0
			l.begin()
		case status.Backoff:
			l.fails = 0
			l.stopTimer()
			l.startProcess()
		}
		l.publish()
		return false
	case cmdRestart:
		l.st.TargetState = spec.TargetActive
		switch l.st.State {
		case status.Running:
			return l.beginStop(StopOp{}, cmdRestart)
		case status.Stopping:
			if !l.finishing {
				l.afterStop = cmdRestart
			}
		case status.Backoff:
			l.fails = 0 // a fresh start, as after restarting a running container
			l.stopTimer()
			l.startProcess()
		case status.Stopped, status.Completed:
			l.fails = 0
			l.begin()
		}
		l.publish()
		return false
	}
	return false
}

// beginStop starts the stop sequence for op. A stop already in progress goes on (a
// later Kill still applies); without a running process nothing is signalled.
func (l *loop) beginStop(op StopOp, after commandKind) bool {
	if l.finishing {
		after = cmdShutdown
	}
	if l.stop != nil {
		l.afterStop = after
		l.stop.addBarrier(op.Barrier) // joins op's barrier: arrives at its TERM
		l.stop.addKill(op.Kill)
		if op.Destroy && l.stop.destroy == nil && l.sc.DestroyPolicy != nil {
			// The running sequence was started without a destroy; run one after it.
			// The running one has joined op's barrier: the destroy must not arrive again.
			op.Barrier = nil
			l.destroyAfter = &op
		}
		return false
	}
	l.stopTimer()
	if l.initCancel != nil {
		l.initCancel()
		l.initCancel, l.initDone = nil, nil
	}
	l.stopProbes()
	now := time.Now()
	l.st.NextStartAt = nil
	l.st.Ready.Set(false, "Stopping", "", now)
	l.afterStop = after
	var destroy *spec.Policy
	if op.Destroy {
		destroy = l.sc.DestroyPolicy
	}
	if l.proc == nil && destroy == nil {
		// Nothing to signal: an IGNORE container has reached its TERM at once. A WAIT
		// container is not counted by the barrier, so it must not arrive: that would
		// open the barrier before an IGNORE container still in its handler.
		if l.sc.TermBarrier != spec.BarrierWait {
			op.Barrier.Arrive()
		}
		return l.finishStop()
	}
	l.stop = newStopRun(l, op, destroy)
	l.setState(status.Stopping, "")
	go l.stop.run()
	return false
}

// onStopEvent tracks the stop sequence; it reports whether the loop is finished.
func (l *loop) onStopEvent(ev stopEvent) bool {
	if ev.run != l.stop {
		return false
	}
	if !ev.done {
		l.st.StopStep = ev.step
		l.publish()
		return false
	}
	if l.proc != nil {
		// A stop ends only after the exit; take it before the loop's own select does.
		<-l.procDone
		l.onExit()
	}
	l.stop = nil
	l.st.StopStep = ""
	if op := l.destroyAfter; op != nil {
		l.destroyAfter = nil
		l.stop = newStopRun(l, *op, l.sc.DestroyPolicy)
		go l.stop.run()
		return false
	}
	return l.finishStop()
}

// finishStop moves to the state after a stop; it reports whether the loop is finished.
func (l *loop) finishStop() bool {
	now := time.Now()
	if l.proc == nil {
		l.st.Alive.Set(false, "Stopped", "", now)
	}
	switch l.afterStop {
	case cmdShutdown:
		l.st.Ready.Set(false, "Stopped", "", now)
		l.setState(status.Stopped, "")
		return true
	case cmdRestart, cmdStart:
		l.st.TargetState = spec.TargetActive
		l.fails = 0
		l.begin()
		return false
	default:
		l.st.Ready.Set(true, "Removed", "target_state is removed", now)
		l.setState(status.Stopped, "")
		return false
	}
}

// abort kills everything at once: Run's context is gone.
func (l *loop) abort() {
	l.stopTimer()
	l.stopProbes()
	if l.initCancel != nil {
		l.initCancel()
	}
	if l.stop != nil {
		l.stop.addKill(canceledCtx)
	}
	if l.proc != nil {
		_ = l.proc.SignalGroup(syscall.SIGKILL)
		<-l.procDone
	}
}

func (l *loop) setState(state, step string) {
	if l.st.State != state {
		l.log.Debug().Str("from", l.st.State).Str("to", state).Msg("state")
	}
	l.st.State = state
	if step != "" {
		l.st.StopStep = step
	}
	l.publish()
}

// publish stores an immutable snapshot of the status for readers.
func (l *loop) publish() {
	snap := l.st
	if l.st.LastExit != nil {
		x := *l.st.LastExit
		snap.LastExit = &x
	}
	l.c.status.Store(&snap)
	if l.cfg.Changed != nil {
		l.cfg.Changed()
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
