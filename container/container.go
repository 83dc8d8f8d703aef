// Package container owns one supervised process and its lifecycle: per-container init
// commands, starts in its own process group, restarts by the restart policy, liveness
// and readiness probes, and the stop and destroy policies. One goroutine owns all of a
// container's state; everything that can happen to it arrives there on channels.
package container

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Config is what the supervisor hands a container: its defaulted spec and the
// resolved environment and working directory of its processes.
type Config struct {
	Spec *spec.Container
	Env  []string
	Dir  string
	// LogFile is the absolute path of log.file ("" for none), LogRoot the directory
	// it is resolved beneath (instance.dir).
	LogFile string
	LogRoot string
	Stdout  *output.Console
	Stderr  *output.Console
	// Logs keeps the output for reading (GET /v1/logs); nil: not kept.
	Logs *output.Ring
	Log  zerolog.Logger
	// Changed is called after every status change. It must not block.
	Changed func()
	// Rand returns a uniform float in [0, 1) for the restart jitter; nil uses math/rand.
	Rand func() float64
	// StoppedByRequest starts the container stopped, as `tend stop` left the one it
	// replaces (a reload changed its spec): it waits for `tend start`.
	StoppedByRequest bool
	// Held starts the container waiting (its depends_on conditions): it begins only
	// when Proceed is called.
	Held bool
	// Sockets are the container's listening sockets (NewSockets; nil: none), bound at
	// its first start; the container never closes them (sockets.go).
	Sockets *Sockets
	// Instance is the real instance.dir, the first part of the marks of the
	// container's runs (TEND_RUN, proc.NewRunMark).
	Instance string
}

// StopOp is one stop operation shared by the containers it stops together.
type StopOp struct {
	// Barriers are the TERM barriers of the operation this container takes part in:
	// an IGNORE container arrives at each when it reaches its TERM, a WAIT container
	// waits until each is open.
	Barriers []*Barrier
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
	cmds    chan *command
	status  atomic.Pointer[status.Container]
	started atomic.Bool // a process of it has started (depends_on: started)
	done    chan struct{}
	logFile *output.LogFile
	// events is the loop's last published events (record); histories keep the last
	// checks of each polled probe, by probes.Kind (nil: no such probe).
	events    atomic.Pointer[[]status.Event]
	histories atomic.Pointer[[3]*probes.History]
	// spec is the spec the container runs: cfg.Spec until a start_first update
	// (Update) swaps it; read by the supervisor, written by the loop.
	spec atomic.Pointer[spec.Container]
	// group is the container's cgroup (OpenCgroup, before Run); nil: none. placed
	// is how processes start in it, nil once it is removed.
	// overlap is set while two runs share the cgroup (update: start_first): an exit
	// then kills its process group, not the cgroup (exited).
	overlap atomic.Bool
	group   *cgroup.Group
	placed  atomic.Pointer[proc.Cgroup]
	// freshGroup: group is new and has had no run; its usage needs no reading before
	// the first (usageRunStart). Set before Run, then the loop's.
	freshGroup bool
	// sample is the latest from the instance's sampler (usage.go), announced on
	// sampled; usage is what the loop last made of them, published apart from the
	// status: a new sample every second is no status change to report. exitOOMs is
	// the group's OOM kills at the last exit (Container.exited), for the loop to
	// read after it.
	sampleMu  sync.Mutex
	sample    Sample
	sampleNew bool // sample is not taken yet
	sampled   chan struct{}
	usage     atomic.Pointer[status.Usage]
	exitOOMs  atomic.Int64
}

type commandKind int

const (
	cmdShutdown commandKind = iota // stop for good (and destroy); the loop then ends
	cmdStop                        // target_state removed
	cmdStart                       // target_state active
	cmdRestart                     // stop if running, then start at once
	cmdSignal                      // forward a signal to the root process
	cmdHold                        // wait for depends_on conditions (waitingFor)
	cmdProceed                     // the conditions hold: begin
	cmdFail                        // a condition can no longer hold (reason)
	cmdUpdate                      // roll out a changed spec start first (update, reply)
	cmdKillStop                    // a kill request for the plain stop sequence stop
)

type command struct {
	kind       commandKind
	op         StopOp
	signal     syscall.Signal
	waitingFor []string
	reason     string
	// request: a person asked (the API), not a reload; a requested stop sticks.
	request bool
	// update is the container a reload built for the changed spec (cmdUpdate);
	// reply says whether the loop took its spec.
	update *Container
	reply  chan<- bool
	// stop is the plain stop sequence a kill request is for (cmdKillStop).
	stop *stopRun
}

// New prepares a container; it opens its log file when the spec has one.
func New(cfg Config) (*Container, error) {
	c := &Container{cfg: cfg, cmds: make(chan *command), done: make(chan struct{}), sampled: make(chan struct{}, 1)}
	h := newHistories(cfg.Spec)
	c.histories.Store(&h)
	c.spec.Store(cfg.Spec)
	if l := cfg.Spec.Log; l != nil && cfg.LogFile != "" {
		f, err := output.OpenLog(cfg.LogRoot, cfg.LogFile, l.MaxSizeMb.Get(), l.MaxFiles.Get())
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
	st := initialStatus(cfg.Spec, cfg.StoppedByRequest, time.Now())
	if cfg.Held && st.State == status.Waiting {
		st.Ready.Set(false, status.ReasonWaiting, "waiting for its depends_on conditions", time.Now())
	}
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

// Spec is the spec the container runs: the one it was built with, or the one a
// start_first update rolled out (Update).
func (c *Container) Spec() *spec.Container { return c.spec.Load() }

// Status returns the last published status snapshot.
func (c *Container) Status() status.Container {
	st := *c.status.Load()
	if c.logFile != nil {
		st.LogError = c.logFile.Err() // the log file's own state, not the loop's
	}
	if u := c.usage.Load(); u != nil {
		st.Usage = *u
	}
	cpu, mem, pids := c.Spec().Limits.Values()
	st.Limits = status.Limits{CPU: cpu, MemoryBytes: mem, Pids: pids}
	return st
}

// Done is closed when the loop has ended: after a Shutdown has stopped (and destroyed)
// the container, or when Run's context was cancelled.
func (c *Container) Done() <-chan struct{} { return c.done }

// Shutdown stops the container for good by its stop policy as part of op. The
// container is finished when Done is closed.
func (c *Container) Shutdown(op StopOp) {
	select {
	case c.cmds <- &command{kind: cmdShutdown, op: op}:
	case <-c.done:
		// Finished already (a reload stopped it): it sends no TERM, so it must not
		// hold the WAIT containers of op.
		if c.Spec().TermBarrier != spec.BarrierWait {
			arriveAll(op.Barriers)
		}
	}
}

func arriveAll(bs []*Barrier) {
	for _, b := range bs {
		b.Arrive()
	}
}

// Stop sets target_state removed at a person's request: the container is stopped
// by its stop policy and stays stopped, across reloads too, until Start or Restart.
func (c *Container) Stop() { c.send(&command{kind: cmdStop, request: true}) }

// Start sets target_state active and starts a stopped container (its init commands
// run only if they never ran for this spec).
func (c *Container) Start() { c.send(&command{kind: cmdStart, request: true}) }

// Retarget applies a target_state that a reload changed: removed stops the container
// (not by request: a later reload may start it again), active starts it.
func (c *Container) Retarget(target string) {
	if target == spec.TargetRemoved {
		c.send(&command{kind: cmdStop})
	} else {
		c.send(&command{kind: cmdStart})
	}
}

// Restart stops a running container by its stop policy and starts it again at once;
// a container waiting in backoff starts at once.
func (c *Container) Restart() { c.send(&command{kind: cmdRestart}) }

// Hold makes a container that is waiting, stopped or completed wait for its
// depends_on conditions, named in waitingFor ("db: ready"), with target_state active:
// `tend start` of a container whose conditions do not hold yet. A waiting container
// only shows the new list.
func (c *Container) Hold(waitingFor []string) {
	c.send(&command{kind: cmdHold, waitingFor: waitingFor})
}

// Proceed begins a waiting container: its conditions hold.
func (c *Container) Proceed() { c.send(&command{kind: cmdProceed}) }

// Fail ends a waiting container for good (until started again): a condition can no
// longer hold, for reason.
func (c *Container) Fail(reason string) { c.send(&command{kind: cmdFail, reason: reason}) }

// Update hands the changed spec of next, a container a reload built to replace this
// one and that never ran, to this container's loop (update: start_first, docs/reference.md
// "Restarts without downtime"): a running container starts a process of the new spec beside the old one
// (startfirst.go). It reports whether the container took it; one that is not running
// does not, and the reload replaces it stop-first. next is never run either way.
func (c *Container) Update(next *Container) bool {
	reply := make(chan bool, 1) // the loop answers at once, in the handler
	select {
	case c.cmds <- &command{kind: cmdUpdate, update: next, reply: reply}:
		return <-reply
	case <-c.done:
		return false
	}
}

// HasStarted reports whether a process of the container has ever started.
func (c *Container) HasStarted() bool { return c.started.Load() }

// Signal forwards sig to the root process, if it is running.
func (c *Container) Signal(sig syscall.Signal) { c.send(&command{kind: cmdSignal, signal: sig}) }

func (c *Container) send(cmd *command) {
	select {
	case c.cmds <- cmd:
	case <-c.done:
	}
}

// Run is the container's loop. It returns when a Shutdown has finished or ctx is
// done; in the latter case the process group is SIGKILLed first.
func (c *Container) Run(ctx context.Context) {
	defer close(c.done)
	defer c.Discard()
	l := newLoop(c)
	l.run(ctx)
	c.removeCgroup() // before draining: a leftover holding the output pipes dies
	l.drainOutput()
}

// InitialStatus is the status of a container of sc that has not started: waiting
// (while the instance prepares, or for its depends_on), or stopped when its
// target_state is removed.
func InitialStatus(sc *spec.Container, now time.Time) status.Container {
	return initialStatus(sc, false, now)
}

func initialStatus(sc *spec.Container, stoppedByRequest bool, now time.Time) status.Container {
	st := status.Container{
		Name:             sc.Name,
		State:            status.Waiting,
		TargetState:      sc.TargetState,
		StoppedByRequest: stoppedByRequest,
		WaitingFor:       []string{},
		Alive:            status.NewCondition(false, status.ReasonNotStarted, "", now),
		Ready:            status.NewCondition(false, status.ReasonNotStarted, "", now),
		LimitsApplied:    !sc.Limits.IsSet(), // until OpenCgroup has written them
		AffectsReadiness: sc.CountsForReadiness(),
	}
	if sc.Schedule != "" {
		st.Ready = status.NewCondition(true, status.ReasonScheduled, scheduledMessage, now)
	}
	if stoppedByRequest {
		st.TargetState = spec.TargetRemoved
	}
	if st.TargetState == spec.TargetRemoved {
		st.State = status.Stopped
		reason, msg := removedReason(st)
		st.Ready = status.NewCondition(true, reason, msg, now)
		st.Alive = status.NewCondition(false, reason, "", now)
	}
	return st
}
