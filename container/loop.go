package container

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/internal/stall"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// The loop is the container's state machine. Its state is one value, l.state;
// stateToStatus says how status shows it:
//
//	waiting          not started yet: before the first begin, or held for depends_on
//	initializing     init commands run (l.initDone is their result)
//	running          the process runs (l.proc), probes with it
//	backoff          the process exited; the timer starts it again
//	completed        the process exited and its restart mode does not restart it
//	stopping         a stop sequence runs (l.stop), then stopped: target_state removed
//	restarting       a stop sequence runs, then the container begins again
//	shutting down    a stop sequence runs (a Shutdown), then the loop ends
//	deadline stop    a stop sequence of a run past max_run_ms runs, then its exit
//	                 counts as a failure and the restart policy decides
//	stopped          stopped on request, by target_state or for good (then the loop ends)
//	failed           its restart limit gave up, or a dependency failed; until started
//	rollout          update start_first: a new process (l.proc) starts beside the
//	                 old one (l.ro.old) until it is ready (startfirst.go)
//	retiring         the new process is ready; the old one's stop sequence runs
//
// Every event (exit, probe result, timer, init result, stop progress, command) is
// handled in events.go by a function that switches on the state and ignores what
// came too late. Which of backoff, completed and failed follows a run is not the
// loop's to say: restart.Decide says it (carryOut), the loop carries it out.
type state int

const (
	stateWaiting state = iota
	stateInitializing
	stateRunning
	stateBackoff
	stateCompleted
	stateStopping
	stateRestarting
	stateShuttingDown
	stateDeadlineStopping
	stateStopped
	stateFailed
	stateRollout
	stateRetiring
)

// stateToStatus is the one mapping of the loop's state to the state status shows:
// the four states of a running stop sequence all show as stopping.
func stateToStatus(s state) status.State {
	switch s {
	case stateWaiting:
		return status.Waiting
	case stateInitializing:
		return status.Initializing
	case stateRunning, stateRollout, stateRetiring:
		return status.Running
	case stateBackoff:
		return status.Backoff
	case stateCompleted:
		return status.Completed
	case stateStopping, stateRestarting, stateShuttingDown, stateDeadlineStopping:
		return status.Stopping
	case stateStopped:
		return status.Stopped
	case stateFailed:
		return status.Failed
	}
	panic(fmt.Sprintf("container: unknown loop state %d", int(s)))
}

// String names the state for the log and for tests.
func (s state) String() string {
	switch s {
	case stateRestarting:
		return "stopping (to restart)"
	case stateShuttingDown:
		return "stopping (to shut down)"
	case stateDeadlineStopping:
		return "stopping (at the deadline)"
	case stateRollout:
		return "running (starting the new process first)"
	case stateRetiring:
		return "running (stopping the old process)"
	}
	return string(stateToStatus(s))
}

// loop is the state owned by Run's goroutine. Nothing else touches it. It is what
// the loop owns (its state, the current run, the timers of the state machine) beside
// what it uses (loopDeps: the container's cgroup, output and sockets, the spec it
// runs, the channels its helpers report on).
type loop struct {
	loopDeps
	state  state
	st     status.Container // the status published; st.State is stateToStatus(state)
	events []status.Event   // the events published (record), oldest first

	currentRun
	history
	loopTimers

	initCancel context.CancelFunc
	initDone   chan error

	stop *stopRun // the stop sequence in progress (a stopping state)
	// destroyAfter is a destroy still to run after the stop in progress: a Shutdown
	// joined a stop that was started without one.
	destroyAfter *StopOp

	ro rollout // the old process of a start_first update (startfirst.go)
	// queued is the spec of a reload that came during an update: it rolls out once
	// that one ends (startfirst.go); nil when none waits.
	queued *specState
	usage  runUsage // the runs' usage and memory_restart (usage.go)
}

// containerLog logs as the container: each event carries its name, in the place a
// logger made by With would put it (after the base logger's own fields). Not such a
// logger: that holds a 500-byte buffer for its fields, in every container.
type containerLog struct {
	base *zerolog.Logger
	name string
}

func (g containerLog) Debug() *zerolog.Event { return g.base.Debug().Str("container", g.name) }
func (g containerLog) Info() *zerolog.Event  { return g.base.Info().Str("container", g.name) }
func (g containerLog) Warn() *zerolog.Event  { return g.base.Warn().Str("container", g.name) }
func (g containerLog) Error() *zerolog.Event { return g.base.Error().Str("container", g.name) }

// loopDeps is what the loop uses and does not own: the container (its cgroup,
// output writers, sockets and command channel), the spec it runs (a start_first
// update swaps it: specState), and the channels on which the goroutines it starts
// (probes, notify sockets, stop sequences) report back.
type loopDeps struct {
	c *Container
	// cfg is the container's Config (c.cfg, never written through), or the one a
	// start_first update made (updatedSpec): a pointer, not a copy, in every loop.
	cfg   *Config
	sc    *spec.Container
	rules restart.Rules // restart_policy: what follows a run (restart.Decide)
	rand  func() float64
	log   containerLog

	// Made when first needed (probeChan and the others below), then kept; nil
	// until then, a case the loop's select never takes.
	probeEvents  chan probes.Event
	notifyMsgs   chan notifyMsg   // from the notify socket of a run
	readySignals chan readySignal // READY=1, a notification newline, a matching line
	stopSteps    chan stopEvent
}

// The channels on which the helpers of a run report (its probes, its notify socket,
// a readiness line or newline, a stop sequence) are made by the loop when a run first
// needs each, before any helper is given it, and kept from then on: a helper of an
// earlier run may still send on the one it was given. An idle container without
// probes needs none of them: no buffers, and four cases fewer for its select to wait
// on (each a runtime record while it waits). 100 idle containers: see bench/README.md.

func (l *loop) probeChan() chan probes.Event {
	if l.probeEvents == nil {
		l.probeEvents = make(chan probes.Event, 4)
	}
	return l.probeEvents
}

func (l *loop) notifyChan() chan notifyMsg {
	if l.notifyMsgs == nil {
		l.notifyMsgs = make(chan notifyMsg, 4)
	}
	return l.notifyMsgs
}

func (l *loop) readyChan() chan readySignal {
	if l.readySignals == nil {
		l.readySignals = make(chan readySignal, 4)
	}
	return l.readySignals
}

func (l *loop) stopChan() chan stopEvent {
	if l.stopSteps == nil {
		l.stopSteps = make(chan stopEvent, 8)
	}
	return l.stopSteps
}

// currentRun is the running process, if any, the last one started (for its
// output), and what watches it.
type currentRun struct {
	lastProc   *proc.Process
	proc       *proc.Process
	procDone   <-chan struct{}
	runID      uint64 // which process a probe result is about
	mark       string // the TEND_RUN of the run started last (runmark.go)
	startedAt  time.Time
	killReason status.ExitReason // why tend killed it (liveness), for last_exit.reason

	probeCancel context.CancelFunc
	health      runHealth
	watchdog    *stall.Timer // notify watchdog_ms
	watchdogC   <-chan time.Time
	deadline    *time.Timer // max_run_ms
	deadlineC   <-chan time.Time
}

// history is what the runs so far leave for the next decision.
type history struct {
	fails       int  // consecutive short runs (restart.Decide)
	initialized bool // init commands ran for this spec
	started     bool // started at least once (restarts count from the second start)
}

// loopTimers are the state machine's own timers: the backoff (or a rollout's
// timeout) and the schedule.
type loopTimers struct {
	timer  *time.Timer
	timerC <-chan time.Time

	sched     cron.Schedule // the spec's schedule; nil: none (schedule.go)
	schedDue  time.Time     // the scheduled time schedTimer is set for
	schedTime *time.Timer
	schedC    <-chan time.Time
}

func newLoop(c *Container) *loop {
	sc := c.cfg.Spec
	rnd := c.cfg.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	st := *c.status.Load()
	initial := stateWaiting
	if st.State == status.Stopped {
		initial = stateStopped // target_state removed (initialStatus)
	}
	return &loop{
		loopDeps: loopDeps{
			c:     c,
			cfg:   &c.cfg,
			sc:    sc,
			rules: restart.RulesFromSpec(sc.RestartPolicy),
			rand:  rnd,
			log:   containerLog{base: &c.cfg.Log, name: sc.Name},
		},
		state: initial,
		st:    st,
	}
}

// run is the loop: one select over everything that can happen to the container,
// each case handing the event to its handler in events.go, until a handler reports
// that the loop has ended or Run's context is gone.
func (l *loop) run(ctx context.Context) {
	l.armSchedule()
	if l.st.TargetState != spec.TargetRemoved && !l.cfg.Held && l.sched == nil {
		l.begin()
	}
	for ended := false; !ended; {
		select {
		case <-ctx.Done():
			l.abort()
			return
		case <-l.procDone:
			ended = l.onExit()
		case <-l.ro.oldDone:
			l.onOldExit()
		case ev := <-l.probeEvents:
			l.onProbe(ev)
		case sig := <-l.readySignals:
			l.onReadySignal(sig)
		case m := <-l.notifyMsgs:
			l.onNotify(m)
		case <-l.watchdogC:
			l.onWatchdog()
		case <-l.deadlineC:
			ended = l.onDeadline()
		case <-l.timerC:
			l.onTimer()
		case now := <-l.schedC:
			l.onSchedule(now)
		case <-l.c.sampled:
			l.onSampled()
		case err := <-l.initDone:
			l.onInitDone(err)
		case ev := <-l.stopSteps:
			ended = l.onStopEvent(ev)
		case cmd := <-l.c.cmds:
			ended = l.onCommand(cmd)
		}
		if !ended {
			l.rollQueued()
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
	l.setState(stateInitializing)
	l.startInit()
}

// startInit runs the init commands in a goroutine of their own; onInitDone takes
// their result.
func (l *loop) startInit() {
	ctx, cancel := context.WithCancel(context.Background())
	l.initCancel = cancel
	done := make(chan error, 1)
	l.initDone = done
	s := l.specState()
	go func() { done <- l.runInit(ctx, s) }()
}

// cancelInit cancels the init commands, if they run; their result is not awaited.
func (l *loop) cancelInit() {
	if l.initCancel != nil {
		l.initCancel()
		l.initCancel, l.initDone = nil, nil
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
	l.usageRunStart(now)
	p, err := l.spawn()
	if err != nil {
		l.log.Error().Err(err).Msg("cannot start")
		l.stopHealth()
		l.startFailed(proc.Exit{Code: -1, StartErr: err})
		return
	}
	l.proc, l.procDone, l.lastProc = p, l.c.exited(p, l.mark), p
	l.c.started.Store(true)
	l.runID++
	pid := p.Pid()
	l.st.Pid = &pid
	l.st.Alive.Set(true, status.ReasonRunning, "", now)
	l.startHealth()
	l.log.Info().Int("pid", pid).Int("restarts", l.st.Restarts).Msg("started")
	l.recordf(status.Normal, status.ReasonStarted, "pid %d", pid)
	l.afterStart()
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
	// Not into files: the deferred close is of the hooks' files alone.
	l.mark = l.c.newRunMark()
	env, fds, err := l.withSockets(proc.WithRunMark(l.processEnv(), l.mark), files)
	if err != nil {
		return nil, err
	}
	return proc.Start(proc.Cmd{
		Argv:   argv,
		Env:    env,
		Dir:    l.cfg.Dir,
		Stdout: l.c.outputWriter(l.cfg.Stdout, matches...),
		Stderr: l.c.outputWriter(l.cfg.Stderr, matches...),
		Files:  fds,
		Ident:  l.sc.Identity(),
		Cgroup: l.c.Placement(),
	})
}

// afterExit records an exit (or a failed start) and carries out what the restart
// rules decide.
func (l *loop) afterExit(e proc.Exit, ran time.Duration) {
	l.recordExit(e, l.killReason)
	ev := l.log.Info()
	if !e.Success() {
		ev = l.log.Warn()
	}
	ev.Str("exit", string(l.st.LastExit.Reason)).Int("code", l.st.LastExit.Code).Dur("ran_ms", ran).Msg("exited")
	l.carryOut(restart.Run{Ending: restart.Exited, Success: e.Success(), Ran: ran})
}

// carryOut follows a run recorded in last_exit with what the restart rules decide
// for it (restart.Decide): a restart after the backoff, completed, or failed once
// max_failures gave up.
func (l *loop) carryOut(run restart.Run) {
	now := time.Now()
	why := string(l.st.LastExit.Reason)
	l.st.Alive.Set(false, status.ReasonExited, why, now)
	l.st.Ready.Set(false, status.ReasonExited, why, now)
	d := restart.Decide(l.rules, run, l.fails, l.rand)
	l.fails = d.Fails
	switch d.Verdict {
	case restart.Finished:
		l.setState(stateCompleted)
	case restart.GiveUp:
		l.fail(status.ReasonRestartLimit, fmt.Sprintf("gave up after %d failures in a row (restart_policy.max_failures), last: %s", d.Fails, why))
	case restart.Restart:
		l.backoff(d.Delay, now)
	}
}

// backoff waits delay before the next start. Even an immediate restart goes through
// the timer and the loop's select, so a command that fails to start with no delay
// configured cannot recurse, and commands keep being served between restarts.
func (l *loop) backoff(delay time.Duration, now time.Time) {
	l.setTimer(delay)
	if delay > 0 {
		l.st.NextStartAt = status.Ptr(now.Add(delay))
		l.log.Info().Dur("delay_ms", delay).Int("fails", l.fails).Msg("backoff before restart")
		l.recordf(status.Warning, status.ReasonBackOff, "next start in %s (%d failures in a row)", delay.Round(time.Millisecond), l.fails)
	}
	l.setState(stateBackoff)
}

// fail ends the container's runs until it is started again: a restart limit gave up
// or a dependency can no longer meet its condition.
func (l *loop) fail(reason status.Reason, message string) {
	now := time.Now()
	l.st.Alive.Set(false, reason, message, now)
	l.st.Ready.Set(false, reason, message, now)
	l.log.Warn().Str("reason", message).Msg("failed")
	l.record(status.Warning, reason, message)
	l.setState(stateFailed)
}

// deadlineExit follows a run stopped at its deadline: last_exit says so (a failure:
// restart.DeadlineCode), then the restart rules decide.
func (l *loop) deadlineExit() {
	x := l.st.LastExit
	if x == nil {
		x = ExitStatus(proc.Exit{Code: 1}, "", time.Now())
	}
	x.Reason = status.ExitDeadlineExceeded
	x.Code = restart.DeadlineCode(x.Code)
	l.st.LastExit = x
	l.carryOut(restart.Run{Ending: restart.DeadlineExceeded})
}

// recordExit records an exit (or a failed start) in last_exit and as an event:
// how it ended, and why when tend ended it. A failure is a Warning, except the exit
// a stop that was asked for (tend stop, restart, a reload, the shutdown) caused
// with its own signal: that is how such a stop goes, Normal.
func (l *loop) recordExit(e proc.Exit, reason status.ExitReason) {
	l.st.LastExit = ExitStatus(e, reason, time.Now())
	msg, typ, why := e.String(), status.Normal, status.ReasonExited
	if reason != "" {
		msg += ": " + string(reason)
	}
	if !e.Success() && !asked(l.state, reason, e) {
		typ = status.Warning
	}
	if reason == status.ExitOOMKilled {
		why = status.ReasonOOMKilled // the kernel killed it: an event of its own kind
	}
	l.record(typ, why, msg)
}

// asked tells whether an exit in state is the end of a stop that was asked for and
// went as it should: stopping, restarting or shutting down, for no reason of tend's
// own (a liveness kill, memory_restart, OOM), by the stop's signal rather than the
// SIGKILL of a process that outlived its term timeout.
func asked(st state, killReason status.ExitReason, e proc.Exit) bool {
	switch st {
	case stateStopping, stateRestarting, stateShuttingDown:
		return killReason == "" && e.Signal != syscall.SIGKILL
	}
	return false
}

// ExitStatus is how e appears in status as a last_exit; reason "" says how it ended.
func ExitStatus(e proc.Exit, reason status.ExitReason, at time.Time) *status.Exit {
	if reason == "" {
		reason = status.ExitReason(e.String())
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
	l.stopSchedule()
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
	l.dropOld()
}

// setState moves the loop to next and publishes the status.
func (l *loop) setState(next state) {
	if l.state != next {
		l.log.Debug().Stringer("from", l.state).Stringer("to", next).Msg("state")
	}
	l.state = next
	l.st.State = stateToStatus(next)
	l.publish()
}

// publish stores an immutable snapshot of the status for readers, and logs every
// change of the ready and alive conditions: the console shows a container going
// not-ready, not only its exits.
func (l *loop) publish() {
	snap := l.st
	l.showSchedule(&snap)
	l.showRollout(&snap)
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
	if prev.Status == next.Status || impliedTransition(next) {
		return
	}
	ev := l.log.Info()
	if !next.True() && l.state == stateRunning {
		ev = l.log.Warn() // a running container that went not ready or not alive
	}
	if next.Message != "" {
		ev = ev.Str("detail", next.Message)
	}
	msg := what
	if !next.True() {
		msg = "not " + what
	}
	ev.Str("reason", string(next.Reason)).Msg(msg)
}

// impliedTransition tells whether a condition's change says nothing the line of the
// event that caused it has not said: alive (and ready, without a readiness check) as
// a process starts — the "started" line —, not alive and not ready as it exits or a
// stop begins — the "exited" and "stopping" lines —, and the ready a stopped
// container keeps only so that it does not hold the instance back. A process without
// probes logs one line when it starts, not three.
func impliedTransition(next status.Condition) bool {
	switch next.Reason {
	case status.ReasonRunning, status.ReasonStoppedByRequest, status.ReasonRemoved:
		return next.True()
	case status.ReasonExited, status.ReasonStopped, status.ReasonStopping:
		return !next.True()
	}
	return false
}

// removedReason says why a stopped container counts as ready: the spec or a request.
func removedReason(st status.Container) (reason status.Reason, message string) {
	if st.StoppedByRequest {
		return status.ReasonStoppedByRequest, "stopped by request (tend stop); tend start or restart runs it again"
	}
	return status.ReasonRemoved, "target_state is removed"
}

var canceledCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
