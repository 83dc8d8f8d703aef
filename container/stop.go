package container

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Steps of the stop sequence shown in status while stopping (docs/reference.md "Stop sequence").
const (
	stepHandler   = "handler"
	stepWaitAfter = "wait_after"
	stepBarrier   = "barrier"
	stepTerm      = "term"
	stepKill      = "kill"
	stepDestroy   = "destroy"
)

// beginStop starts the stop sequence for op, in one of the stopping states: next
// says what follows it. A stop already in progress goes on (a later Kill still
// applies); without a running process nothing is signalled.
func (l *loop) beginStop(op StopOp, next state) bool {
	l.endOverlap() // one process left to stop
	switch l.state {
	case stateShuttingDown:
		l.joinStop(op, stateShuttingDown) // a Shutdown in progress is never undone
		return false
	case stateStopping, stateRestarting, stateDeadlineStopping:
		l.joinStop(op, next)
		return false
	}
	l.stopTimer()
	if l.initCancel != nil {
		l.initCancel()
		l.initCancel, l.initDone = nil, nil
	}
	l.stopHealth()
	l.st.NextStartAt = nil
	l.st.Ready.Set(false, status.ReasonStopping, "", time.Now())
	l.destroyAfter = nil
	var destroy *spec.Policy
	if op.Destroy {
		destroy = l.sc.DestroyPolicy
	}
	if l.proc == nil && destroy == nil {
		// Nothing to signal: an IGNORE container has reached its TERM at once. A WAIT
		// container is not counted by the barrier, so it must not arrive: that would
		// open the barrier before an IGNORE container still in its handler.
		if l.sc.TermBarrier != spec.BarrierWait {
			arriveAll(op.Barriers)
		}
		return l.finishStop(next)
	}
	if l.plainStop(destroy) {
		l.stop = newPlainStop(l, op)
		l.stopPlain(next)
		return false
	}
	l.stop = newStopRun(l, op, destroy)
	l.setState(next)
	go l.stop.run()
	return false
}

// plainStop says whether the stop of the running process is only SIGTERM, the wait
// for the exit and SIGKILL (the default stop_policy, term_barrier IGNORE, no destroy
// policy). The loop runs such a sequence itself (stopPlain): nothing in it blocks. A
// goroutine of its own for every container at every shutdown, whose stack grew at its
// first wait, was the largest part of what tend itself spent in a stop.
func (l *loop) plainStop(destroy *spec.Policy) bool {
	pol := l.sc.StopPolicy
	return l.proc != nil && l.sc.TermBarrier != spec.BarrierWait && destroy == nil &&
		pol.UnixSignal == nil && pol.Exec == nil && pol.HTTPGet == nil
}

// newPlainStop is the sequence stopPlain runs. It has no kill context of its own nor
// a channel of steps (a stop of many containers made them fresh, one each): a kill
// request reaches the loop as a command (addKill).
func newPlainStop(l *loop, op StopOp) *stopRun {
	r := &stopRun{
		p:        l.proc,
		exitDone: l.procDone,
		policy:   l.sc.StopPolicy,
		barriers: op.Barriers[:len(op.Barriers):len(op.Barriers)], // addBarrier appends: never into op's
		inLoop:   true,
		c:        l.c,
	}
	r.log = l.stopLogger()
	r.addKill(op.Kill)
	return r
}

// stopPlain runs a plain sequence from the loop: it arrives at the barriers, sends
// SIGTERM (and SIGCONT) and sets the loop's timer to term_timeout_ms. The timer
// (onTimer) or a kill request (cmdKillStop) SIGKILLs the group (plainKill); the exit
// (onExit) ends the sequence (stopEnded).
func (l *loop) stopPlain(next state) {
	r := l.stop
	r.arrive()
	if r.killed() {
		l.st.StopStep = stepKill // no SIGTERM first: a kill request means at once
		l.setState(next)
		l.plainKill()
		return
	}
	l.st.StopStep = stepTerm
	l.setState(next)
	r.log(stepTerm)
	_ = r.p.SignalGroup(syscall.SIGTERM)
	_ = r.p.SignalGroup(syscall.SIGCONT) // as stopProcess: wake a stopped process
	l.setTimer(spec.Ms(r.policy.TermTimeoutMs))
}

// plainKill SIGKILLs the group of a plain sequence, once: term_timeout_ms passed or a
// kill was requested.
func (l *loop) plainKill() {
	r := l.stop
	if r.sigkilled {
		return
	}
	r.sigkilled = true
	l.stopTimer()
	if l.st.StopStep != stepKill {
		l.st.StopStep = stepKill
		l.publish()
	}
	r.log(stepKill)
	_ = r.p.SignalGroup(syscall.SIGKILL)
}

// stopEnded ends the stop sequence in progress once its process has exited (or it
// had none): a destroy still to run starts, else the stop finishes.
func (l *loop) stopEnded() bool {
	if r := l.stop; r.inLoop {
		l.stopTimer()
		r.end()
	}
	l.stop = nil
	l.st.StopStep = ""
	if op := l.destroyAfter; op != nil {
		l.destroyAfter = nil
		l.stop = newStopRun(l, *op, l.sc.DestroyPolicy)
		go l.stop.run()
		return false
	}
	return l.finishStop(l.state)
}

// joinStop makes the stop in progress part of op too: it arrives at op's barrier,
// op's kill applies to it, and op's destroy runs after it if it has none.
func (l *loop) joinStop(op StopOp, next state) {
	l.setState(next)
	for _, b := range op.Barriers {
		l.stop.addBarrier(b)
	}
	l.stop.addKill(op.Kill)
	if op.Destroy && l.stop.destroy == nil && l.sc.DestroyPolicy != nil && l.destroyAfter == nil {
		// The running sequence has joined op's barrier: the destroy must not
		// arrive again.
		op.Barriers = nil
		l.destroyAfter = &op
	}
}

// finishStop moves on from a stop that ended in the stopping state how; it reports
// whether the loop is finished.
func (l *loop) finishStop(how state) bool {
	now := time.Now()
	if l.proc == nil {
		l.st.Alive.Set(false, status.ReasonStopped, "", now)
	}
	switch how {
	case stateShuttingDown:
		l.st.Ready.Set(false, status.ReasonStopped, "", now)
		l.setState(stateStopped)
		return true
	case stateRestarting:
		l.st.TargetState = spec.TargetActive
		// A stop to restart (tend restart, memory_restart) restarts at once whatever
		// the mode, the backoff forgotten (restart.Decide).
		l.fails = restart.Decide(l.rules, restart.Run{Ending: restart.StoppedToRestart}, l.fails, l.rand).Fails
		l.begin()
		return false
	case stateDeadlineStopping:
		l.deadlineExit()
		return false
	default:
		reason, msg := removedReason(l.st)
		l.st.Ready.Set(true, reason, msg, now)
		l.setState(stateStopped)
		return false
	}
}

// stopEvent reports progress of a stop sequence to the container's loop.
type stopEvent struct {
	run  *stopRun
	step string
	done bool
}

// stopRun is one stop sequence, run in its own goroutine: the stop handler, the wait
// after it, the TERM barrier, SIGTERM and SIGKILL, then the destroy policy. It only
// reads the process; the loop keeps owning the container's state. A plain sequence
// (SIGTERM, then SIGKILL) the loop runs itself (stopPlain).
type stopRun struct {
	p *proc.Process // nil when the process was not running
	// exitDone is closed after p's exit once its cgroup is empty (Container.exited):
	// the destroy policy runs only then.
	exitDone <-chan struct{}
	policy   *spec.StopPolicy
	destroy  *spec.Policy
	waits    bool // term_barrier WAIT
	target   probes.Target
	events   chan<- stopEvent
	log      func(step string, kv ...any)

	// kill is done once any stop operation asks to kill at once; nil in a plain
	// sequence (newPlainStop), whose kill requests are commands to the loop.
	kill      context.Context
	cancelAll context.CancelFunc
	gone      <-chan struct{} // the loop has ended: nobody reads events any more

	// barriers are the TERM barriers of every stop operation this sequence is part
	// of: its own and those of operations that joined it later (a shutdown during a
	// reload's stop). The loop adds to them while the sequence runs.
	mu       sync.Mutex
	barriers []*Barrier
	arrived  bool              // an IGNORE container reached its TERM (or will send none)
	kills    []context.Context // the Kill contexts of the operations it is part of
	// unwatch undo the watches of kills (context.AfterFunc); ended says the sequence
	// has ended and watches no more. An ended sequence must not stay registered: the
	// shutdown cancels its kill context as it returns, and each watch still there then
	// started a goroutine of its own, one per container, on the way out.
	unwatch []func() bool
	ended   bool

	// Of a sequence the loop runs (stopPlain): c is the container its kill requests
	// go to as commands; sigkilled, the loop's own, says SIGKILL was sent.
	inLoop    bool
	c         *Container
	sigkilled bool
}

// stopLogger logs the steps of the container's stop sequences.
func (l *loop) stopLogger() func(step string, kv ...any) {
	logger := l.log
	return func(step string, kv ...any) { logger.Info().Str("step", step).Fields(kv).Msg("stopping") }
}

func newStopRun(l *loop, op StopOp, destroy *spec.Policy) *stopRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &stopRun{
		p:         l.proc,
		exitDone:  l.procDone,
		policy:    l.sc.StopPolicy,
		destroy:   destroy,
		waits:     l.sc.TermBarrier == spec.BarrierWait,
		barriers:  append([]*Barrier(nil), op.Barriers...),
		events:    l.stopChan(),
		kill:      ctx,
		cancelAll: cancel,
		gone:      l.c.done,
	}
	if h := r.policy; h.Exec != nil || h.HTTPGet != nil || destroy != nil {
		// Only a handler runs anything: a copy of the environment a container for a
		// plain SIGTERM was an allocation a container at every shutdown.
		r.target = probes.Target{Env: proc.WithRunMark(l.cfg.Env, l.mark), Dir: l.cfg.Dir, Container: l.sc.Name, Ident: l.sc.Identity(), Cgroup: l.c.Placement()}
	}
	r.log = l.stopLogger()
	r.addKill(op.Kill)
	return r
}

// addKill makes a done kill context of another operation cancel this sequence too.
func (r *stopRun) addKill(kill context.Context) {
	if kill == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kills = append(r.kills, kill)
	if r.ended {
		return
	}
	if r.inLoop {
		r.unwatch = append(r.unwatch, context.AfterFunc(kill, func() { r.c.send(&command{kind: cmdKillStop, stop: r}) }))
		return
	}
	r.unwatch = append(r.unwatch, context.AfterFunc(kill, r.cancelAll))
}

// end stops watching the kill contexts: the sequence is over.
func (r *stopRun) end() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	for _, stop := range r.unwatch {
		stop()
	}
	r.unwatch = nil
}

// killed reports whether a kill was asked for. It looks at the operations' own kill
// contexts too: r.kill is cancelled by them asynchronously, and another container's
// reaction to the same kill (its arrival at a barrier) may come first.
func (r *stopRun) killed() bool {
	if r.kill != nil && r.kill.Err() != nil { // nil: a plain sequence's (newPlainStop)
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.kills {
		if k.Err() != nil {
			return true
		}
	}
	return false
}

func (r *stopRun) step(name string) { r.send(stopEvent{run: r, step: name}) }

func (r *stopRun) send(ev stopEvent) {
	select {
	case r.events <- ev:
	case <-r.gone:
	}
}

func (r *stopRun) run() {
	defer r.send(stopEvent{run: r, done: true})
	defer r.cancelAll()
	defer r.end()
	if r.p != nil {
		r.stopProcess()
	}
	r.arrive() // whatever happened, never leave a WAIT container waiting for us
	if r.destroy != nil && !r.killed() {
		r.runDestroy()
	}
}

// arrive tells the barriers this container has reached its TERM. WAIT containers are
// not counted by barriers.
func (r *stopRun) arrive() {
	if r.waits {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.arrived {
		return
	}
	r.arrived = true
	for _, b := range r.barriers {
		b.Arrive()
	}
}

// addBarrier makes this sequence part of one more stop operation: an IGNORE container
// arrives at b when it reaches its TERM (at once if it already has), and a WAIT
// container still at its barrier step waits for b too.
func (r *stopRun) addBarrier(b *Barrier) {
	if b == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.barriers = append(r.barriers, b)
	if r.arrived {
		b.Arrive()
	}
}

// closedBarrier returns a barrier that is not open yet, or nil.
func (r *stopRun) closedBarrier() *Barrier {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.barriers {
		select {
		case <-b.Open():
		default:
			return b
		}
	}
	return nil
}

// waitBarriers waits, for a WAIT container, until every barrier it is part of is
// open. It reports false when the process exited meanwhile; a kill request ends the
// wait.
func (r *stopRun) waitBarriers() bool {
	logged := false
	for b := r.closedBarrier(); b != nil; b = r.closedBarrier() {
		if !logged {
			logged = true
			r.log(stepBarrier)
		}
		select {
		case <-b.Open():
		case <-r.exitDone:
			return false
		case <-r.kill.Done():
			return true
		}
	}
	return true
}

// stopProcess runs steps 3-6 of the stop sequence (docs/reference.md "Stop sequence").
func (r *stopRun) stopProcess() {
	pol := r.policy
	tl := restart.FromSpec(pol.TimeLimit)
	switch {
	case pol.UnixSignal != nil:
		r.signalHandler(tl)
		return
	case pol.Exec != nil || pol.HTTPGet != nil:
		if !r.handler(tl) {
			return // exited (or killed) meanwhile
		}
	}
	r.arrive()
	if r.waits {
		r.step(stepBarrier)
		if !r.waitBarriers() {
			return
		}
	}
	if r.killed() {
		r.killGroup() // no SIGTERM first: a kill request means at once
		return
	}
	r.step(stepTerm)
	r.log(stepTerm)
	_ = r.p.SignalGroup(syscall.SIGTERM)
	// A stopped (SIGSTOP, ^Z) process would never run its handler and only die at the
	// timeout: wake it, as systemd and the kubelet do.
	_ = r.p.SignalGroup(syscall.SIGCONT)
	if r.waitExit(spec.Ms(pol.TermTimeoutMs)) {
		return
	}
	r.killGroup()
}

// signalHandler runs a unix_signal stop handler: its signal is the termination
// request, sent max_tries times a period apart; one more period after the last, the
// group is SIGKILLed.
func (r *stopRun) signalHandler(tl restart.TimeLimit) {
	sig := r.policy.UnixSignal.Number()
	maxTries := r.policy.MaxTries.Get()
	r.step(stepHandler)
	r.arrive()
	exited := false
	restart.Retry(tl, maxTries, r.waitForExit(&exited), func(try int) bool {
		r.log(stepHandler, "signal", spec.SignalName(sig), "try", try)
		_ = r.p.Signal(sig)
		return false
	})
	if exited || r.waitExit(tl.Period(max(1, maxTries))) {
		return
	}
	r.killGroup()
}

// handler runs an exec or http_get stop handler until a try succeeds, then waits
// wait_after_ms for the exit whatever the handler's result (docs/reference.md "Stop sequence": a handler
// that failed or timed out may still have started a graceful exit). It reports
// whether the sequence goes on (to the TERM barrier): false once the process has exited.
func (r *stopRun) handler(tl restart.TimeLimit) bool {
	pol := r.policy
	r.step(stepHandler)
	exited := false
	probes.RunPolicy(r.kill, pol.Handler, r.target, tl, pol.MaxTries.Get(), r.waitForExit(&exited),
		func(try int, res probes.Result) {
			result := res.Detail
			if res.OK {
				result = "success"
			}
			r.log(stepHandler, "try", try, "result", result)
		})
	if exited || r.exited() {
		return false
	}
	if pol.WaitAfterMs.Get() > 0 && !r.killed() {
		r.step(stepWaitAfter)
		if r.waitExit(spec.Ms(pol.WaitAfterMs)) {
			return false
		}
	}
	return true
}

// waitForExit is a wait for restart.Retry that ends the tries once the process has
// exited, and records that it has.
func (r *stopRun) waitForExit(exited *bool) func(time.Duration) bool {
	return func(d time.Duration) bool {
		*exited = r.waitExit(d)
		return !*exited
	}
}

// waitExit waits up to d for the process to exit and reports whether it has. A kill
// request SIGKILLs the group and waits for the exit.
func (r *stopRun) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.exitDone:
		return true
	case <-t.C:
		return false
	case <-r.kill.Done():
		r.killGroup()
		return true
	}
}

func (r *stopRun) exited() bool {
	select {
	case <-r.exitDone:
		return true
	default:
		return false
	}
}

func (r *stopRun) killGroup() {
	r.step(stepKill)
	r.log(stepKill)
	_ = r.p.SignalGroup(syscall.SIGKILL)
	<-r.exitDone
}

// runDestroy runs the destroy policy: after initial_delay_ms, up to max_tries, the
// time_limit period between tries. A kill request abandons it.
func (r *stopRun) runDestroy() {
	d := r.destroy
	r.step(stepDestroy)
	probes.RunPolicy(r.kill, d.Handler, r.target, restart.FromSpec(d.TimeLimit), d.MaxTries.Get(), nil,
		func(try int, res probes.Result) {
			result := res.Detail
			if res.OK {
				result = "success"
			}
			r.log(stepDestroy, "try", try, "result", result)
		})
}
