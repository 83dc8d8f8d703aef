package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Action is a mutating call handed to the supervisor (Do): by the API, the signal
// handlers and the spec watcher.
type Action int

// The mutating calls; name is the container of Restart, Stop and Start.
const (
	Shutdown Action = iota
	Reload
	Restart
	Stop
	Start
	// The revision calls (docs/reference.md "Updates and rollback"); name is the
	// revision's id.
	Activate
	Rollback
	DeleteRevision
	Apply
)

// The errors of Do that the API answers with their own status codes.
var (
	ErrPreparing   = errors.New("the instance is still preparing")
	ErrStopping    = errors.New("the instance is stopping")
	ErrNoContainer = errors.New("no such container")
)

// requestKind is the mutating call a request carries.
type requestKind = Action

const (
	reqShutdown = Shutdown
	reqReload   = Reload
	reqRestart  = Restart
	reqStop     = Stop
	reqStart    = Start
	reqActivate = Activate
	reqRollback = Rollback
	reqDelete   = DeleteRevision
	reqApply    = Apply
)

// The errors a request is answered with.
var (
	errPreparing   = ErrPreparing
	errStopping    = ErrStopping
	errNoContainer = ErrNoContainer
)

// API is the HTTP API as Run holds it (api.Server): started by Options.Serve once
// the instance is locked, watched for a listener that fails, closed at the end.
// The API is the room above the supervisor (it serves it), so the supervisor knows
// it only by this interface and the caller hands it the constructor.
type API interface {
	// Failed receives the error of a listener that stopped accepting for good.
	Failed() <-chan error
	// Close stops serving and removes the unix sockets.
	Close()
}

// Reporter is the reports of the status document to --report-url as the
// supervisor holds them (api.Reporter): kicked on every change, stopped at the end.
type Reporter interface {
	Kick()
	Stop()
}

// noAPI is the API of a supervisor without Options.Serve: nothing served, nothing
// fails.
type noAPI struct{}

func (noAPI) Failed() <-chan error { return nil }
func (noAPI) Close()               {}

// request is a mutating API call handed to the main loop.
type request struct {
	kind  requestKind
	name  string // container, for restart/stop/start; revision, for the revision calls
	reply func(error)

	rollback bool       // activate: a rollback chose the revision
	spec     *spec.Spec // apply: the revision's spec, loaded
	data     []byte     // apply: its bytes, kept in its store
	dataName string     // apply: the name its format is told by
}

// Describe is one container with its events and probe results (api.Supervisor).
func (sv *Supervisor) Describe(name string) (status.ContainerDetail, error) {
	sv.freshUsage()
	sv.mu.Lock()
	defer sv.mu.Unlock()
	for _, c := range sv.containers {
		if c.Name() == name {
			return c.Describe(), nil
		}
	}
	for _, st := range sv.snapshotsLocked() {
		if st.Name == name {
			// Not made yet (the instance prepares): nothing has happened to it.
			return status.ContainerDetail{Container: st, Events: []status.Event{}, Probes: map[string]status.ProbeResults{}}, nil
		}
	}
	return status.ContainerDetail{}, noContainer(name, sv.containers)
}

// noContainer is the error for an unknown container name, with the closest name
// of the instance's containers when one is near (tend restart wbe: did you mean web?).
func noContainer(name string, containers []*container.Container) error {
	var names []string
	for _, c := range containers {
		names = append(names, c.Name())
	}
	if guess := spec.Closest(name, names); guess != "" {
		return fmt.Errorf("%w %q (did you mean %s?)", errNoContainer, name, guess)
	}
	return fmt.Errorf("%w %q", errNoContainer, name)
}

// startAPI serves the API (Options.Serve) on every --listen address (the
// instance's tend.sock when none is given).
func (sv *Supervisor) startAPI() (API, error) {
	addrs := sv.opts.Listen
	if len(addrs) == 0 {
		addrs = []string{"unix:" + filepath.Join(sv.spec.Instance.Dir, route.Socket)}
	}
	if sv.opts.Serve == nil {
		return noAPI{}, nil
	}
	return sv.opts.Serve(sv, addrs, sv.token)
}

// WriteMetrics writes the metric families of the rooms below the supervisor, in
// the Prometheus text format: the probes' checks and the orphans the reaper
// collected (docs/reference.md "Metrics").
func (sv *Supervisor) WriteMetrics(w io.Writer) {
	probes.WriteMetrics(w)
	proc.WriteMetrics(w)
	sv.writeRevisionMetrics(w)
}

// Do hands a mutating call of the API to the main loop and waits for its outcome;
// ctx ending (the client went away) ends the wait, not the call.
func (sv *Supervisor) Do(ctx context.Context, kind Action, name string) error {
	errc := make(chan error, 1)
	req := request{kind: kind, name: name, reply: func(err error) { errc <- err }}
	select {
	case sv.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handle runs a request of the API in the main loop: a reload or a revision's,
// or one for a container.
func (sv *Supervisor) handle(req request) {
	switch req.kind {
	case reqReload:
		sv.reload(req)
	case reqActivate:
		sv.activate(req)
	case reqRollback:
		sv.rollback(req)
	case reqDelete:
		sv.deleteRevision(req)
	case reqApply:
		sv.apply(req)
	default:
		sv.handleContainer(req)
	}
}

// handleContainer runs a restart, stop or start of one container, or queues it
// behind the reload in progress.
func (sv *Supervisor) handleContainer(req request) {
	if sv.reprep != nil {
		// Re-preparing: the containers are stopping or gone, as while preparing.
		req.reply(errPreparing)
		return
	}
	if sv.reloading {
		// The containers are being swapped: a request for one that the reload is
		// replacing would reach the old container, which is finishing, and be lost.
		// It is handled once the reload is done (finishReload), on the new set.
		sv.log.Info().Str("container", req.name).Msg("request queued behind the reload in progress")
		sv.pending = append(sv.pending, req)
		return
	}
	for _, c := range sv.current() {
		if c.Name() != req.name {
			continue
		}
		switch req.kind {
		case reqRestart:
			c.Restart()
		case reqStop:
			c.Stop()
		case reqStart:
			sv.start(c, true)
		}
		req.reply(nil)
		return
	}
	req.reply(noContainer(req.name, sv.current()))
}
