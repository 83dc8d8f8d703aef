package supervisor

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tend-sh/tend/api"
	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/status"
)

// requestKind is the mutating call a request carries: the API's (api.Action), also
// sent by the signal handlers and the spec watcher.
type requestKind = api.Action

const (
	reqShutdown = api.Shutdown
	reqReload   = api.Reload
	reqRestart  = api.Restart
	reqStop     = api.Stop
	reqStart    = api.Start
)

// The errors a request is answered with; the API gives each its status code.
var (
	errPreparing   = api.ErrPreparing
	errStopping    = api.ErrStopping
	errNoContainer = api.ErrNoContainer
)

// request is a mutating API call handed to the main loop.
type request struct {
	kind  requestKind
	name  string // container, for restart/stop/start
	reply func(error)
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
	return status.ContainerDetail{}, fmt.Errorf("%w %q", errNoContainer, name)
}

// startAPI serves the API on every --listen address (the instance's tend.sock when
// none is given).
func (sv *Supervisor) startAPI() (*api.Server, error) {
	addrs := sv.opts.Listen
	if len(addrs) == 0 {
		addrs = []string{"unix:" + filepath.Join(sv.spec.Instance.Dir, route.Socket)}
	}
	return api.Serve(sv, api.Config{Listen: addrs, Token: sv.token, Log: sv.log})
}

// Do hands a mutating call of the API to the main loop and waits for its outcome;
// ctx ending (the client went away) ends the wait, not the call.
func (sv *Supervisor) Do(ctx context.Context, kind api.Action, name string) error {
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

// handle runs a container request or a reload in the main loop.
func (sv *Supervisor) handle(req request) {
	if req.kind == reqReload {
		sv.reload(req)
		return
	}
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
	req.reply(fmt.Errorf("%w %q", errNoContainer, req.name))
}
