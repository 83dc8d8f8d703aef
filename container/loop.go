package container

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/internal/stall"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// The loop is the container's state machine. Its state is one value, l.state, the
// state status shows:
//
//	waiting       not started yet: before the first begin, or held for depends_on
//	initializing  init commands run (l.initDone is their result)
//	running       the process runs (l.proc), probes with it
//	backoff       the process exited; the timer starts it again
//	completed     the process exited and is not restarted (mode never/on_failure)
//	stopping      a stop sequence runs (l.stop); l.then says what follows it
//	stopped       stopped on request, by target_state or for good (then the loop ends)
//	failed        its restart limit gave up, or a dependency failed; until started
//
// Every event (exit, probe result, timer, init result, stop progress, command) is
// handled by a function that switches on the state and ignores what came too late.

// after is what follows a stop sequence.
type after int

const (
	stayStopped   after = iota // target_state removed: stopped until started
	startAgain                 // a restart or a start: begin again
	finish                     // a Shutdown: the loop ends
	afterDeadline              // max_run_ms: the exit counts as a failure, then the policy
)

// then is what follows the stop sequence in progress: the next state, and a destroy
// still to run when a Shutdown joined a stop that was started without one.
type then struct {
	next    after
	destroy *StopOp
}

// loop is the state owned by Run's goroutine. Nothing else touches it.
type loop struct {
	c      *Container
	cfg    Config
	sc     *spec.Container
	policy restart.Policy
	rand   func() float64
	log    zerolog.Logger
	state  status.State
	st     status.Container // the status published; st.State follows state

	// The running process, if any, and the last one started (for its output).
	lastProc   *proc.Process
	proc       *proc.Process
	procDone   <-chan struct{}
	runID      uint64 // which process a probe result is about
	startedAt  time.Time
	killReason string // why tend killed it (liveness), for last_exit.reason

	fails       int  // consecutive short runs
	initialized bool // init commands ran for this spec
	started     bool // started at least once (restarts count from the second start)

	timer  *time.Timer
	timerC <-chan time.Time

	probeCancel  context.CancelFunc
	probeEvents  chan probes.Event
	health       runHealth
	notifyMsgs   chan notifyMsg   // from the notify socket of a run
	readySignals chan readySignal // READY=1, a notification newline, a matching line
	watchdog     *stall.Timer     // notify watchdog_ms
	watchdogC    <-chan time.Time
	deadline     *time.Timer // max_run_ms
	deadlineC    <-chan time.Time

	initCancel context.CancelFunc
	initDone   chan error

	stop      *stopRun // the stop sequence in progress (state stopping)
	stopSteps chan stopEvent
	then      then
}

func newLoop(c *Container) *loop {
	sc := c.cfg.Spec
	rnd := c.cfg.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	st := *c.status.Load()
	return &loop{
		c:            c,
		cfg:          c.cfg,
		sc:           sc,
		policy:       restart.PolicyFromSpec(sc.RestartPolicy),
		rand:         rnd,
		log:          c.cfg.Log.With().Str("container", sc.Name).Logger(),
		state:        st.State,
		st:           st,
		probeEvents:  make(chan probes.Event, 4),
		stopSteps:    make(chan stopEvent, 8),
		notifyMsgs:   make(chan notifyMsg, 4),
		readySignals: make(chan readySignal, 4),
	}
}

func (l *loop) run(ctx context.Context) {
	if l.st.TargetState != spec.TargetRemoved && !l.cfg.Held {
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
		case sig := <-l.readySignals:
			l.onReadySignal(sig)
		case m := <-l.notifyMsgs:
			l.onNotify(m)
		case <-l.watchdogC:
			l.onWatchdog()
		case <-l.deadlineC:
			if l.onDeadline() {
				return
			}
		case <-l.timerC:
			l.onTimer()
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

// drainOutput waits for the last process's output to reach tend's stdout, so the
// final lines (an unfinished last line included) are not lost when tend exits.
func (l *loop) drainOutput() {
	if l.lastProc != nil {
		l.lastProc.DrainOutput()
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
	l.setState(status.Initializing)
	ctx, cancel := context.WithCancel(context.Background())
	l.initCancel = cancel
	done := make(chan error, 1)
	l.initDone = done
	go func() { done <- l.runInit(ctx) }()
}

func (l *loop) onInitDone(err error) {
	l.initDone, l.initCancel = nil, nil
	switch {
	case l.state != status.Initializing:
		// A stop cancelled the init commands and already moved the state on.
	case err != nil:
	default:
		l.initialized = true
		l.log.Info().Msg("init commands done")
		l.startProcess()
	}
}

func (l *loop) onTimer() {
	l.timerC = nil
	switch l.state {
	case status.Backoff:
		l.startProcess()
	default:
		// A timer of a backoff that a command or a stop already ended.
	}
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
	l.st.StatusText = ""
	l.killReason = ""
	l.startedAt = now
	l.st.StartedAt = status.Ptr(now)
	p, err := l.spawn()
	if err != nil {
		l.log.Error().Err(err).Msg("cannot start")
		l.stopHealth()
		l.afterExit(proc.Exit{Code: -1, StartErr: err}, 0)
		return
	}
	l.proc, l.procDone, l.lastProc = p, p.Done(), p
	l.c.started.Store(true)
	l.runID++
	pid := p.Pid()
	l.st.Pid = &pid
	l.st.Alive.Set(true, "Running", "", now)
	l.startHealth()
	l.setState(status.Running)
	l.log.Info().Int("pid", pid).Int("restarts", l.st.Restarts).Msg("started")
}

// spawn starts the command's process, with what its probes need of it.
func (l *loop) spawn() (*proc.Process, error) {
	argv, err := spec.Argv(l.sc.Command, l.cfg.Env)
	if err != nil {
		return nil, err
	}
	matches, files, err := l.startHooks()
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, f := range files {
			f.Close() // the child's end
		}
	}()
	return proc.Start(proc.Cmd{
		Argv:   argv,
		Env:    l.processEnv(),
		Dir:    l.cfg.Dir,
		Stdout: l.c.outputWriter(l.cfg.Stdout, matches...),
		Stderr: l.c.outputWriter(l.cfg.Stderr, matches...),
		Files:  files,
		Ident:  l.sc.Identity(),
	})
}

func (l *loop) onProbe(ev probes.Event) {
	switch {
	case l.state != status.Running, ev.Run != l.runID:
		return // a late result of an earlier run, or probes already stopped
	case ev.Kind == probes.Startup:
		l.onStartupProbe(ev)
		return
	}
	// Publish only what changed: checks pass many times a second across an
	// instance, and every publication makes the supervisor look at every container.
	changed := false
	switch ev.Kind {
	case probes.Liveness:
		changed = l.onLiveness(ev)
	case probes.Readiness:
		changed = l.onReadiness(ev)
	}
	if changed {
		l.publish()
	}
}

// onLiveness records a liveness result; after failure_threshold failures in a row
// (ev.Failed) the process group is SIGKILLed and restarted by the policy.
func (l *loop) onLiveness(ev probes.Event) bool {
	now := time.Now()
	if ev.Result.OK {
		return l.st.Alive.Set(true, "Running", "", now)
	}
	msg := "liveness probe failed: " + ev.Result.Detail
	changed := l.st.Alive.Set(false, "LivenessProbeFailed", msg, now)
	if ev.Failed && l.killReason == "" {
		l.kill(msg)
	}
	return changed
}

func (l *loop) onReadiness(ev probes.Event) bool {
	now := time.Now()
	if ev.Healthy {
		return l.st.Ready.Set(true, "Ready", "", now)
	}
	msg := "readiness probe failed"
	if ev.Result.Detail != "" {
		msg += ": " + ev.Result.Detail
	}
	return l.st.Ready.Set(false, "ReadinessProbeFailed", msg, now)
}

// onExit handles the end of the running process.
func (l *loop) onExit() {
	p := l.proc
	e := p.Exit()
	ran := time.Since(l.startedAt)
	// Whatever the process left behind in its group dies with it, as an init
	// container's leftovers do and as a Kubernetes container's would: otherwise every
	// restart would leave processes, and the output pipes they hold open (with their
	// copiers) in tend, behind.
	_ = p.SignalGroup(syscall.SIGKILL)
	l.proc, l.procDone = nil, nil
	l.st.Pid = nil
	l.stopHealth()
	switch l.state {
	case status.Stopping:
		// Record the exit; the stop sequence sees it too and finishes.
		l.recordExit(e, "")
		l.log.Info().Str("exit", l.st.LastExit.Reason).Int("code", l.st.LastExit.Code).Dur("ran_ms", ran).Msg("exited while stopping")
		now := time.Now()
		l.st.Alive.Set(false, "Stopped", "", now)
		l.st.Ready.Set(false, "Stopping", "", now)
		l.publish()
	default:
		l.afterExit(e, ran)
	}
}

// afterExit records an exit (or a failed start) and decides on the restart.
func (l *loop) afterExit(e proc.Exit, ran time.Duration) {
	l.recordExit(e, l.killReason)
	ev := l.log.Info()
	if !e.Success() {
		ev = l.log.Warn()
	}
	ev.Str("exit", l.st.LastExit.Reason).Int("code", l.st.LastExit.Code).Dur("ran_ms", ran).Msg("exited")
	l.restartOrEnd(l.restarts(e), l.policy.Fails(l.fails, ran))
}

// restartOrEnd follows an exit recorded in last_exit: a restart after the backoff
// of fails consecutive short runs, or completed, or failed once max_failures gave up.
func (l *loop) restartOrEnd(restartIt bool, fails int) {
	now := time.Now()
	why := l.st.LastExit.Reason
	l.st.Alive.Set(false, "Exited", why, now)
	l.st.Ready.Set(false, "Exited", why, now)
	if !restartIt {
		l.setState(status.Completed)
		return
	}
	l.fails = fails
	if limit := l.sc.RestartPolicy.MaxFailures.Get(); limit > 0 && fails >= limit {
		l.fail("RestartLimit", fmt.Sprintf("gave up after %d failures in a row (restart_policy.max_failures), last: %s", fails, why))
		return
	}
	delay := l.policy.Delay(l.fails, l.rand)
	// Even an immediate restart goes through the timer and the loop's select, so a
	// command that fails to start with no delay configured cannot recurse, and
	// commands keep being served between restarts.
	l.setTimer(delay)
	if delay > 0 {
		l.st.NextStartAt = status.Ptr(now.Add(delay))
		l.log.Info().Dur("delay_ms", delay).Int("fails", l.fails).Msg("backoff before restart")
	}
	l.setState(status.Backoff)
}

// restarts reports whether the restart policy restarts after e.
func (l *loop) restarts(e proc.Exit) bool {
	switch l.sc.RestartPolicy.Mode {
	case spec.ModeAlways:
		return true
	case spec.ModeOnFailure:
		return !e.Success()
	}
	return false
}

func (l *loop) recordExit(e proc.Exit, reason string) {
	l.st.LastExit = ExitStatus(e, reason, time.Now())
}

// ExitStatus is how e appears in status as a last_exit; reason "" says how it ended.
func ExitStatus(e proc.Exit, reason string, at time.Time) *status.Exit {
	if reason == "" {
		reason = e.String()
	}
	x := &status.Exit{Code: e.Status(), At: status.At(at), Reason: reason}
	if e.Signal != 0 {
		x.Signal = spec.SignalName(e.Signal)
	}
	return x
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

// abort kills everything at once: Run's context is gone.
func (l *loop) abort() {
	l.stopTimer()
	l.stopHealth()
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

func (l *loop) setState(state status.State) {
	if l.state != state {
		l.log.Debug().Str("from", string(l.state)).Str("to", string(state)).Msg("state")
	}
	l.state = state
	l.st.State = state
	l.publish()
}

// publish stores an immutable snapshot of the status for readers, and logs every
// change of the ready and alive conditions: the console shows a container going
// not-ready, not only its exits.
func (l *loop) publish() {
	snap := l.st
	if l.st.LastExit != nil {
		x := *l.st.LastExit
		snap.LastExit = &x
	}
	prev := l.c.status.Swap(&snap)
	l.logTransition("ready", prev.Ready, snap.Ready)
	l.logTransition("alive", prev.Alive, snap.Alive)
	if l.cfg.Changed != nil {
		l.cfg.Changed()
	}
}

func (l *loop) logTransition(what string, prev, next status.Condition) {
	if prev.Status == next.Status {
		return
	}
	ev := l.log.Info()
	if !next.True() && l.state == status.Running {
		ev = l.log.Warn() // a running container that went not ready or not alive
	}
	if next.Message != "" {
		ev = ev.Str("detail", next.Message)
	}
	msg := what
	if !next.True() {
		msg = "not " + what
	}
	ev.Str("reason", next.Reason).Msg(msg)
}

// removedReason says why a stopped container counts as ready: the spec or a request.
func removedReason(st status.Container) (reason, message string) {
	if st.StoppedByRequest {
		return "StoppedByRequest", "stopped by request (tend stop); tend start or restart runs it again"
	}
	return "Removed", "target_state is removed"
}

var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
