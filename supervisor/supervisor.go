// Package supervisor owns the instance: preparing it (init containers), the set of
// containers, shutdown behind the TERM barrier, reload, signals, the status document
// and the kept output. One goroutine (Run's) makes every decision; the API (package
// api, which it starts) and signal handlers only send it requests.
package supervisor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/revisions"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Options configure a supervisor beyond its spec.
type Options struct {
	// Load re-reads the spec for a reload.
	Load func() (*spec.Spec, error)
	// LoadBytes loads a spec given as bytes (PUT /v1/revisions/ID, a revision kept
	// in the store) in any format run reads; name places it (its directory is the
	// default instance.dir). nil: only tend specs.
	LoadBytes func(name string, data []byte) (*spec.Spec, error)
	// Listen holds the API addresses: "unix:PATH" or "HOST:PORT".
	Listen       []string
	APITokenFile string
	// Serve starts the API (api.Serve) on the addresses of listen with the bearer
	// token of APITokenFile; nil serves none. The caller passes it: the API is the
	// room above, which serves the supervisor (docs/design.md "Code layout").
	Serve func(sv *Supervisor, listen []string, token string) (API, error)
	// Report starts the reports of statusDoc's documents to --report-url
	// (api.StartReporter); nil reports nothing.
	Report         func(statusDoc func() status.Document) Reporter
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
	changed     chan struct{}       // coalesced "some status changed"
	reloadSteps chan reloadStep     // a reload's goroutines hand their results back here
	ends        []restart.Container // instanceEnd's slice, reused after every change
	runCtx      context.Context
	// reloadCtx bounds a reload's resource work; shutdown cancels it so that no
	// symlink switch or notify action runs while the containers are stopping.
	reloadCtx    context.Context
	cancelReload context.CancelFunc

	// Owned by the main loop.
	reloading bool
	pending   []request // requests that arrived during a reload, handled after it
	reprep    *reprep   // a re-prepare past its fetch (reprepare.go), or nil
	reporter  Reporter  // nil without --report-url

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

	revs  revisions.List        // the instance's revisions (revisions.go), under mu
	rev   revState              // owned by the main loop
	specs map[string]*spec.Spec // loaded specs of the listed revisions, by id (main loop)
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
	sv.revisionsStatusLocked(&doc)
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
