package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/internal/promtext"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/resources"
	"github.com/tend-sh/tend/revisions"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// The glue between the revision model (package revisions) and the running instance
// (docs/reference.md "Updates and rollback"): every spec the instance is given is
// admitted as a revision, activated with the reload mechanics (reload.go,
// reprepare.go), watched for readiness until rollback_after, and rolled back to the
// last stable revision when it is not ready in time. The list is read by the API
// under sv.mu and changed only by the main loop.

// The errors of the revision calls that the API answers with their own codes.
var (
	ErrNoRevision   = errors.New("no such revision")
	ErrNotInstalled = errors.New("the revision is not installed")
	ErrNoStable     = errors.New("no stable revision to roll back to")
	ErrActive       = errors.New("the revision is active")
	ErrConflict     = errors.New("a revision with this id and other content exists")
	// ErrInstallFailed: a revision's static resource could not be fetched into its
	// store; nothing that runs changed.
	ErrInstallFailed = errors.New("install failed")
	// ErrSuperseded: a revision waiting for the install under way was replaced by a
	// newer one before its own install began.
	ErrSuperseded = errors.New("superseded before its install began by")
)

// activation is the revision a reload under way activates.
type activation struct {
	id         string
	source     string
	byRollback bool
}

// revState is the supervisor's part of the revisions, owned by the main loop (the
// list itself is read under sv.mu).
type revState struct {
	store      *revisions.Store
	activating *activation // the activation the reload under way carries out, or nil
	timer      *time.Timer // rollback_after of the active revision; nil when none runs
	deadline   <-chan time.Time
	rollbacks  uint64 // tend_rollbacks_total; read under sv.mu
	fileRev    string // the revision the spec file gave when last read
	fileDigest string // the digest of what was last read from the spec file
	// first holds the spec file's revision while nothing is on disk yet (a start
	// without a state file): saveRevisions writes its spec to the store, with the
	// state, once there is more to remember than the file says.
	first *pendingSpec
}

// pendingSpec is a revision's spec not yet kept in its store.
type pendingSpec struct {
	id, name string
	data     []byte
}

// openRevisions opens the store of instance.dir and lists the revisions it keeps;
// when the spec file has not changed since tend last read it, the revision active
// at the last stop is run instead of the file's (a pushed revision or a rollback
// survives a restart). Runs before preparing.
func (sv *Supervisor) openRevisions() {
	rs := &sv.rev
	rs.store = revisions.Open(sv.spec.Instance.Dir)
	if rs.store.Disabled != nil {
		sv.log.Warn().Err(rs.store.Disabled).Msg("cannot keep revisions in instance.dir/.tend (read-only?); only the active revision is kept, in memory")
	}
	rs.fileRev, rs.fileDigest = sv.spec.Revision(), sv.spec.FileDigest()
	state, err := rs.store.Load()
	if err != nil {
		sv.log.Warn().Err(err).Msg("the revisions' state cannot be read; starting with the spec file's revision only")
	}
	now := time.Now()
	sv.listKept(state, now)
	start, source := sv.startingSpec(state)
	if start != sv.spec {
		sv.useSpec(start)
	}
	sv.beginFirstActivation(start, source, len(state.Revisions) == 0, now)
	sv.removeUnlisted()
}

// removeUnlisted removes the stores of revisions that are not listed: an install a
// killed tend did not finish, a store its state file no longer names.
func (sv *Supervisor) removeUnlisted() {
	for _, id := range sv.rev.store.IDs() {
		if sv.revs.Get(id) != nil {
			continue
		}
		sv.log.Info().Str("revision", id).Msg("removing the store of a revision not listed (an install that did not finish)")
		if err := sv.rev.store.Remove(id); err != nil {
			sv.log.Warn().Err(err).Str("revision", id).Msg("cannot remove the revision's store")
		}
	}
}

// listKept lists the revisions the store kept: those installed, the one active at
// the last stop listed as installed (it becomes active again below, or not).
func (sv *Supervisor) listKept(state revisions.State, now time.Time) {
	for _, r := range state.Revisions {
		if _, err := sv.rev.store.Spec(r.ID); err != nil || r.Phase == revisions.Installing || r.Phase == revisions.InstallFailed {
			continue // not stored, or never installed: not listed again
		}
		if r.Phase == revisions.Active {
			r.Phase, r.LastActiveAt = revisions.Installed, now
		}
		sv.rev.store.Known(r.ID)
		r.DiskBytes = sv.rev.store.DiskBytes(r.ID)
		sv.revs.Add(r)
	}
}

// startingSpec chooses the spec tend starts with and its source: the spec file's,
// unless the file is unchanged since the last stop (the revision then active runs
// again) or the file's revision was rolled back (the last stable one runs).
func (sv *Supervisor) startingSpec(state revisions.State) (*spec.Spec, string) {
	rs := &sv.rev
	start, source := sv.spec, revisions.SourceFile
	pick := func(id, why string) {
		s, err := sv.storedSpec(id)
		if err != nil {
			sv.log.Warn().Err(err).Str("revision", id).Msg("cannot load a kept revision; running the spec file's")
			return
		}
		sv.log.Info().Str("revision", id).Msg(why)
		start, source = s, sv.revs.Get(id).Source
	}
	fileRec := sv.revs.Get(rs.fileRev)
	switch {
	case state.Active != "" && state.Active != rs.fileRev && state.SpecFileDigest == rs.fileDigest && sv.revs.Get(state.Active) != nil:
		pick(state.Active, "the spec file is unchanged since tend last read it: running the revision active at the last stop")
	case fileRec != nil && fileRec.Phase == revisions.RolledBack && fileRec.Content == sv.spec.ContentDigest():
		if last := revisions.LastStable(&sv.revs, rs.fileRev); last != nil {
			sv.log.Warn().Str("revision", rs.fileRev).Str("running", last.ID).Msgf("the spec file's revision was rolled back; running the last stable one (tend activate %s runs it again)", rs.fileRev)
			pick(last.ID, "running the last stable revision")
		}
	}
	return start, source
}

// beginFirstActivation lists the starting spec as a revision (kept in the store
// when it is the file's: at once, or with the first state written when there was
// none) and begins its activation, rollback_after armed.
func (sv *Supervisor) beginFirstActivation(start *spec.Spec, source string, noState bool, now time.Time) {
	id := start.Revision()
	if r := sv.revs.Get(id); r == nil || r.Content != start.ContentDigest() {
		sv.revs.Add(&revisions.Revision{ID: id, Source: source, Content: start.ContentDigest(), CreatedAt: now, Phase: revisions.Installed})
		if source == revisions.SourceFile && noState {
			if data := fileBytes(start); data != nil {
				sv.rev.first = &pendingSpec{id: id, name: filepath.Base(start.Path()), data: data}
			}
		} else if source == revisions.SourceFile {
			sv.keepFileSpec(id, start)
		}
	}
	sv.revs.Apply(id, revisions.Event{Kind: revisions.ActivationBegan, At: now})
	sv.armRollback(id)
	sv.saveRevisions()
}

// fileBytes is what s was loaded from, if its file still holds it, or nil.
func fileBytes(s *spec.Spec) []byte {
	data, err := spec.ReadFile(s.Path())
	if err != nil {
		return nil
	}
	if cur, err := spec.FileRevision(s.Path()); err != nil || cur != s.FileDigest() {
		return nil // changed since: the reload that follows keeps the new one
	}
	return data
}

// useSpec makes s the instance's spec before anything was prepared.
func (sv *Supervisor) useSpec(s *spec.Spec) {
	now := time.Now()
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.spec, sv.revision = s, s.Revision()
	sv.inits, sv.waiting = nil, nil
	for _, ic := range s.InitContainers {
		sv.inits = append(sv.inits, status.InitContainer{Name: ic.Name, State: status.Waiting})
	}
	for i := range s.Containers {
		sv.waiting = append(sv.waiting, container.InitialStatus(&s.Containers[i], now))
	}
}

// keepFileSpec keeps the spec file's bytes in the store of revision id, if the file
// still holds what s was loaded from.
func (sv *Supervisor) keepFileSpec(id string, s *spec.Spec) {
	if data := fileBytes(s); data != nil {
		sv.saveSpec(id, filepath.Base(s.Path()), data)
	}
}

// saveSpec keeps a revision's spec in its store.
func (sv *Supervisor) saveSpec(id, name string, data []byte) {
	if err := sv.rev.store.SaveSpec(id, data); err != nil {
		sv.log.Warn().Err(err).Str("revision", id).Msg("cannot keep the revision's spec; it cannot be activated after a restart of tend")
	}
	size := sv.rev.store.DiskBytes(id)
	sv.mu.Lock()
	if r := sv.revs.Get(id); r != nil {
		r.Name, r.DiskBytes = name, size
	}
	sv.mu.Unlock()
}

// storedSpec loads the spec kept in revision id's store.
func (sv *Supervisor) storedSpec(id string) (*spec.Spec, error) {
	if s := sv.specs[id]; s != nil {
		return s, nil
	}
	data, err := sv.rev.store.Spec(id)
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", id, err)
	}
	if sv.opts.LoadBytes == nil {
		return nil, fmt.Errorf("revision %s: cannot load a kept spec", id)
	}
	name := "spec.yaml"
	if r := sv.revs.Get(id); r != nil && r.Name != "" {
		name = r.Name
	}
	s, err := sv.opts.LoadBytes(filepath.Join(sv.spec.Instance.Dir, name), data)
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", id, err)
	}
	if s.Revision() != id {
		s.Instance.Revision = id // an API-pushed spec is named by its route
	}
	return s, nil
}

// errInstalling is admit's answer for a new revision: its install runs off the main
// loop and hands an installed step back (onInstalled), which goes on with the reload.
var errInstalling = errors.New("installing")

// admit judges a spec given by a reload of the file or an apply: it reports whether
// the reload goes on to activate it and, when it does not, the error to answer with
// (nil: nothing to do; errInstalling: the install of a new revision began, and
// req is answered when it ends).
func (sv *Supervisor) admit(next *spec.Spec, source string, data []byte, name string, req request) (bool, error) {
	rs := &sv.rev
	id, content := next.Revision(), next.ContentDigest()
	sv.mu.Lock() // the status reads fileRev
	if source == revisions.SourceFile {
		rs.fileRev, rs.fileDigest = id, next.FileDigest()
	}
	verdict := revisions.Admit(&sv.revs, id, content)
	sv.mu.Unlock()
	switch verdict {
	case revisions.Conflict:
		return false, fmt.Errorf("%w: revision %s (give the new spec another instance.revision)", ErrConflict, id)
	case revisions.Unchanged:
		// The reload goes on: it changes nothing that runs as the spec says, and
		// retries what failed (a start_first update, a dynamic resource).
		sv.log.Info().Str("revision", id).Msg("the active revision, unchanged")
		return true, nil
	case revisions.Reactivate:
		sv.log.Info().Str("revision", id).Msg("an installed revision: activating it again")
		rs.activating = &activation{id: id, source: source}
		return true, nil
	case revisions.HeldBack:
		sv.log.Warn().Str("revision", id).Msgf("revision %s was rolled back; a reload does not activate it again (tend activate %s does)", id, id)
		sv.saveRevisions()
		return false, nil
	}
	sv.beginInstall(next, source, data, name, req)
	return false, errInstalling
}

// beginInstall lists next as a revision being installed, keeps its spec in the
// store and runs the install off the main loop; the installed step comes back on
// reloadSteps (onInstalled).
func (sv *Supervisor) beginInstall(next *spec.Spec, source string, data []byte, name string, req request) {
	id, content := next.Revision(), next.ContentDigest()
	now := time.Now()
	sv.mu.Lock()
	sv.revs.Add(&revisions.Revision{ID: id, Source: source, Content: content, CreatedAt: now, Phase: revisions.Installing})
	sv.mu.Unlock()
	if data != nil {
		sv.saveSpec(id, name, data)
	} else {
		sv.keepFileSpec(id, next)
	}
	// A spec kept in the store is loaded from there when activated: memory holds
	// no spec of an inactive revision (each would cost a parsed spec).
	if _, err := sv.rev.store.Spec(id); err != nil {
		if sv.specs == nil {
			sv.specs = map[string]*spec.Spec{}
		}
		sv.specs[id] = next
	}
	// The state file is not written until the install ends: a tend killed meanwhile
	// starts again with what it had (the spec file's new revision, when the file
	// changed; else the revision that was active), never with half an install.
	sv.notify()
	sv.log.Info().Str("revision", id).Str("source", source).Msg("installing revision")
	go func() {
		err := sv.installRevision(sv.reloadCtx, id, next)
		step := reloadStep{installed: true, req: req, fetched: next, err: err, source: source}
		select {
		case sv.reloadSteps <- step:
		case <-sv.reloadCtx.Done():
			sv.abandon(step) // the shutdown may no longer read reloadSteps
		}
	}()
}

// installRevision is the install proper of revision id, off the main loop while
// everything runs: its static resources are kept in its store (fetched, or linked
// from a file the instance has with the same checksum). Nothing running is touched.
func (sv *Supervisor) installRevision(ctx context.Context, id string, s *spec.Spec) error {
	st := sv.rev.store
	if st.Disabled == nil && len(s.Resources) > 0 {
		sums, err := sv.resourceManager().Install(ctx, s, st.ResourcesDir(id), resources.DefaultOptions().ReloadRounds)
		if rerr := st.Record(id, sums); rerr != nil && err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	} // else: fetched at activation, before anything stops
	return sv.runInstallInits(ctx, id, s)
}

// installInitTries is how many times an init container with at: install may fail
// before the install fails (the active revision runs meanwhile: a broken one must
// not hold every later install back).
const installInitTries = 3

// runInstallInits runs the init containers of s with at: install, in order, in
// revision id's store, within instance.init_timeout_ms when set. They are not in the
// status document (its init_containers are the active revision's); their output is
// logged and kept as any init container's.
func (sv *Supervisor) runInstallInits(ctx context.Context, id string, s *spec.Spec) error {
	if t := spec.Ms(s.Instance.InitTimeoutMs); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	for i := range s.InitContainers {
		ic := &s.InitContainers[i]
		if ic.At != spec.AtInstall {
			continue
		}
		dir, err := sv.revisionDir(id, ic)
		if err != nil {
			return err
		}
		sv.log.Info().Str("init_container", ic.Name).Str("revision", id).Msg("running init container at install")
		runCtx, cancel := context.WithCancel(ctx)
		tries, last := 0, proc.Exit{}
		err = sv.runInit(runCtx, s, ic, dir, nil, func(e proc.Exit, retryIn time.Duration) {
			tries, last = tries+1, e
			ev := sv.log.Info()
			if !e.Success() {
				ev = sv.log.Warn().Int("try", tries)
				if tries >= installInitTries {
					cancel()
				}
			}
			ev.Str("init_container", ic.Name).Str("revision", id).Str("exit", e.String()).Msg("init container finished")
		})
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && tries >= installInitTries:
			return fmt.Errorf("init container %q: %s (%d tries)", ic.Name, last, tries)
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("init container %q: the install took longer than instance.init_timeout_ms (%v)", ic.Name, spec.Ms(s.Instance.InitTimeoutMs))
		case err != nil:
			return fmt.Errorf("init container %q: %w", ic.Name, err)
		}
	}
	return nil
}

// queueRevision holds a revision given while a reload or an install runs (an apply,
// a reload of the spec file) until it ends. Installs run one at a time and the
// newest waiting one wins: the revision already waiting is dropped, its caller
// answered ErrSuperseded — but a waiting reload replaced by another reload is
// answered with it (both read the same file).
func (sv *Supervisor) queueRevision(req request) {
	var merged []func(error)
	sv.pending = slices.DeleteFunc(sv.pending, func(w request) bool {
		if w.kind != reqApply && w.kind != reqReload {
			return false
		}
		switch {
		case w.reply == nil:
		case w.kind == reqReload && req.kind == reqReload:
			merged = append(merged, w.reply)
		default:
			w.reply(fmt.Errorf("%w %s", ErrSuperseded, describeRevisionReq(req)))
		}
		sv.log.Info().Str("revision", describeRevisionReq(w)).Str("by", describeRevisionReq(req)).Msg("a waiting revision superseded by a newer one")
		return true
	})
	if len(merged) > 0 {
		first := req.reply
		req.reply = func(err error) {
			for _, r := range merged {
				r(err)
			}
			if first != nil {
				first(err)
			}
		}
	}
	sv.pending = append(sv.pending, req)
}

// describeRevisionReq names the revision an apply or a reload gives.
func describeRevisionReq(req request) string {
	if req.kind == reqApply {
		return "revision " + req.name
	}
	return "a reload of the spec file"
}

// onInstalled ends the install of a revision on the main loop: a failed one is
// InstallFailed (nothing that runs changed), an installed one is activated (activate:
// auto) by the reload path, or waits for tend activate ID.
func (sv *Supervisor) onInstalled(step reloadStep) {
	next := step.fetched
	id := next.Revision()
	reply := func(err error) {
		if step.req.reply != nil {
			step.req.reply(err)
		}
	}
	now := time.Now()
	size := sv.rev.store.DiskBytes(id)
	sv.mu.Lock()
	if r := sv.revs.Get(id); r != nil {
		r.DiskBytes = size
	}
	if step.err != nil {
		sv.revs.Apply(id, revisions.Event{Kind: revisions.InstallFailedEvent, At: now, Why: step.err.Error()})
		sv.mu.Unlock()
		sv.saveRevisions()
		err := fmt.Errorf("%w: revision %s: %v", ErrInstallFailed, id, step.err)
		sv.reloadFailed(err, "install failed; nothing that runs changed")
		reply(err)
		sv.finishReload()
		return
	}
	act := sv.revs.Apply(id, revisions.Event{Kind: revisions.InstallSucceeded, At: now, Auto: next.Instance.Activate != spec.ActivateManual})
	sv.mu.Unlock()
	sv.log.Info().Str("revision", id).Msg("revision installed")
	sv.notify()
	if act != revisions.Activate {
		sv.log.Info().Str("revision", id).Msgf("revision installed; activate: manual, so it waits for tend activate %s", id)
		sv.prune(id)
		sv.saveRevisions()
		reply(nil)
		sv.finishReload()
		return
	}
	sv.rev.activating = &activation{id: id, source: step.source}
	sv.saveRevisions()
	step.admitted = true
	sv.switchTo(step)
}

// activate begins switching to an installed revision (tend activate, a rollback) by
// the reload path: the step is its spec, already loaded.
func (sv *Supervisor) activate(req request) {
	if sv.reloading {
		sv.log.Info().Str("revision", req.name).Msg("activation queued behind the reload in progress")
		sv.pending = append(sv.pending, req)
		return
	}
	reply := func(err error) {
		if req.reply != nil {
			req.reply(err)
		}
	}
	sv.mu.Lock()
	r := sv.revs.Get(req.name)
	var phase revisions.Phase
	if r != nil {
		phase = r.Phase
	}
	sv.mu.Unlock()
	switch {
	case r == nil:
		reply(fmt.Errorf("%w %q", ErrNoRevision, req.name))
		return
	case phase == revisions.Installing || phase == revisions.InstallFailed:
		reply(fmt.Errorf("%w: %s", ErrNotInstalled, req.name))
		return
	case phase == revisions.Active:
		reply(nil)
		return
	}
	next, err := sv.storedSpec(req.name)
	if err != nil {
		reply(err)
		return
	}
	sv.log.Info().Str("revision", req.name).Bool("rollback", req.rollback).Msg("activating revision")
	sv.rev.activating = &activation{id: req.name, source: r.Source, byRollback: req.rollback}
	sv.reloading = true
	step := reloadStep{loaded: true, admitted: true, req: req, fetched: next}
	go func() { sv.reloadSteps <- step }()
}

// rollback activates the last stable revision (tend rollback, POST /v1/rollback).
func (sv *Supervisor) rollback(req request) {
	if sv.reloading {
		sv.pending = append(sv.pending, req)
		return
	}
	sv.mu.Lock()
	cur := sv.revision
	last := revisions.LastStable(&sv.revs, cur)
	sv.mu.Unlock()
	if last == nil {
		req.reply(ErrNoStable)
		return
	}
	sv.mu.Lock()
	sv.rev.rollbacks++
	sv.mu.Unlock()
	sv.log.Warn().Str("from", cur).Str("to", last.ID).Msg("rollback requested")
	sv.activate(request{kind: reqActivate, name: last.ID, rollback: true, reply: req.reply})
}

// deleteRevision removes an inactive revision and its store.
func (sv *Supervisor) deleteRevision(req request) {
	sv.mu.Lock()
	r := sv.revs.Get(req.name)
	var err error
	switch {
	case r == nil:
		err = fmt.Errorf("%w %q", ErrNoRevision, req.name)
	case r.Phase == revisions.Active || (sv.rev.activating != nil && sv.rev.activating.id == req.name):
		err = fmt.Errorf("%w: %s", ErrActive, req.name)
	default:
		sv.revs.Remove(req.name)
		delete(sv.specs, req.name)
	}
	sv.mu.Unlock()
	if err == nil {
		if rerr := sv.rev.store.Remove(req.name); rerr != nil {
			sv.log.Warn().Err(rerr).Str("revision", req.name).Msg("cannot remove the revision's store")
		}
		sv.saveRevisions()
		sv.notify()
	}
	req.reply(err)
}

// switched is called by the reload path when next has become the instance's spec:
// the revision it carries becomes the active one.
func (sv *Supervisor) switched(prev, next *spec.Spec) {
	rs := &sv.rev
	a := rs.activating
	rs.activating = nil
	id := next.Revision()
	now := time.Now()
	byRollback := a != nil && a.id == id && a.byRollback
	sv.mu.Lock()
	if cur := sv.revs.Active(); cur != nil && cur.ID == id && a == nil {
		sv.mu.Unlock()
		return // a reload of the active revision: it stays as it is
	}
	if old := sv.revs.Active(); old != nil && old.ID != id {
		sv.revs.Apply(old.ID, revisions.Event{Kind: revisions.Deactivated, At: now})
	}
	if sv.revs.Get(id) == nil {
		// A reload path without admission (cannot happen today): list it anyway.
		sv.revs.Add(&revisions.Revision{ID: id, Source: revisions.SourceFile, Content: next.ContentDigest(), CreatedAt: now, Phase: revisions.Installed})
	}
	sv.revs.Apply(id, revisions.Event{Kind: revisions.ActivationBegan, At: now, ByRollback: byRollback})
	sv.mu.Unlock()
	sv.log.Info().Str("revision", id).Bool("by_rollback", byRollback).Msg("revision activated")
	sv.keepPrevious(prev, id)
	sv.armRollback(id)
	sv.prune("")
	// The caller saves the state once the stops have begun (an fsync here would
	// delay them).
}

// keepPrevious keeps the parsed spec of the revision just left (the likeliest one to
// go back to) so that a rollback does not parse it again; the other inactive
// revisions' specs are loaded from their stores when activated (memory holds one
// spec more, not one per kept revision).
func (sv *Supervisor) keepPrevious(prev *spec.Spec, active string) {
	for id := range sv.specs {
		if _, err := sv.rev.store.Spec(id); err == nil || id == active {
			delete(sv.specs, id) // in the store, or running
		}
	}
	if prev == nil || prev.Revision() == active || sv.revs.Get(prev.Revision()) == nil {
		return
	}
	if sv.specs == nil {
		sv.specs = map[string]*spec.Spec{}
	}
	sv.specs[prev.Revision()] = prev
}

// installFailed marks the revision a failed reload was to activate.
func (sv *Supervisor) installFailed(next *spec.Spec, err error) {
	a := sv.rev.activating
	sv.rev.activating = nil
	if a == nil || next == nil || a.id != next.Revision() {
		return
	}
	sv.mu.Lock()
	r := sv.revs.Get(a.id)
	if r != nil && r.Phase == revisions.Installed && !r.Stable && r.LastActiveAt.IsZero() {
		r.Phase, r.Why = revisions.InstallFailed, err.Error()
	}
	sv.mu.Unlock()
	sv.saveRevisions()
	sv.notify()
}

// armRollback starts the rollback_after timer of the revision just activated.
func (sv *Supervisor) armRollback(id string) {
	rs := &sv.rev
	if rs.timer != nil {
		rs.timer.Stop()
		rs.timer, rs.deadline = nil, nil
	}
	d := sv.spec.Instance.RollbackAfterDuration()
	if d <= 0 {
		return
	}
	rs.timer = time.NewTimer(d)
	rs.deadline = rs.timer.C
}

// revisionReady is called on every status change: the active revision that has
// become ready is stable (a rollback may come back to it) and its static resources
// are kept in its store.
func (sv *Supervisor) revisionReady() {
	if sv.reloading {
		return // the switch is under way: the ready condition may be the old containers'
	}
	sv.mu.Lock()
	r := sv.revs.Active()
	if r == nil || r.ReadySeen {
		sv.mu.Unlock()
		return
	}
	sv.refreshReadyLocked(sv.snapshotsLocked(), time.Now())
	if !sv.ready.True() || sv.notRunningSpecLocked() != "" {
		sv.mu.Unlock()
		return
	}
	id := r.ID
	sv.revs.Apply(id, revisions.Event{Kind: revisions.BecameReady, At: time.Now()})
	s := sv.spec
	sv.mu.Unlock()
	sv.keepResources(id, s)
	sv.mu.Lock()
	if r := sv.revs.Get(id); r != nil {
		r.DiskBytes = sv.rev.store.DiskBytes(id)
	}
	sv.mu.Unlock()
	sv.saveRevisions()
	sv.notify() // the revision's ready changed: a report sent meanwhile said Activating
}

// notRunningSpecLocked says which container does not run the active spec yet, and
// why, or "": a start_first update under way, or one whose new process failed (the
// old process goes on with the old spec), keeps the instance ready with the old
// version, which is not the revision's readiness.
func (sv *Supervisor) notRunningSpecLocked() string {
	want := map[string]*spec.Container{}
	for i := range sv.spec.Containers {
		want[sv.spec.Containers[i].Name] = &sv.spec.Containers[i]
	}
	for _, c := range sv.containers {
		cs := want[c.Name()]
		if cs == nil {
			continue
		}
		st := c.Status()
		switch {
		case st.OldPid != nil:
			return c.Name() + ": its update start_first is under way"
		case !sameContainer(sv.spec, c.Spec(), sv.spec, cs):
			why := c.Name() + ": runs the previous spec"
			if st.LastExit != nil {
				why += " (" + string(st.LastExit.Reason) + ")"
			}
			return why
		}
	}
	return ""
}

// keepResources links the static resources of s that are single files with a
// checksum into revision id's store: a later activation of it copies them from
// there instead of fetching.
func (sv *Supervisor) keepResources(id string, s *spec.Spec) {
	for _, r := range s.Resources {
		sum, err := resources.ParseChecksum(r.Checksum)
		if err != nil || r.Extract || sum.Empty() {
			continue
		}
		if err := sv.rev.store.Link(id, r.Name, s.WorkDir(r.Name), sum.String()); err != nil {
			sv.log.Warn().Err(err).Str("revision", id).Msg("cannot keep a resource in the revision's store")
		}
	}
}

// onRollbackDeadline is rollback_after passing since the active revision's
// activation began.
func (sv *Supervisor) onRollbackDeadline() {
	rs := &sv.rev
	rs.timer, rs.deadline = nil, nil
	sv.mu.Lock()
	cur := sv.revs.Active()
	if cur == nil {
		sv.mu.Unlock()
		return
	}
	id := cur.ID
	act := sv.revs.Apply(id, revisions.Event{Kind: revisions.Deadline, At: time.Now()})
	why := fmt.Sprintf("not ready within %s", sv.spec.Instance.RollbackAfter)
	if old := sv.notRunningSpecLocked(); old != "" && sv.ready.True() {
		why += ": " + old
	} else if msg := sv.ready.Message; msg != "" {
		why += ": " + msg
	} else if sv.ready.Reason != "" {
		why += ": " + string(sv.ready.Reason)
	}
	last := revisions.LastStable(&sv.revs, id)
	if act != revisions.Rollback {
		sv.mu.Unlock()
		return
	}
	if last == nil {
		sv.mu.Unlock()
		sv.log.Warn().Str("revision", id).Str("why", why).Msg("the revision is not ready in time, and there is no stable revision to roll back to; nothing switched")
		return
	}
	sv.revs.Apply(id, revisions.Event{Kind: revisions.RolledBackEvent, At: time.Now(), Why: why})
	rs.rollbacks++
	sv.mu.Unlock()
	sv.log.Warn().Str("revision", id).Str("to", last.ID).Str("why", why).Msg("rolling back: the revision was not ready in time")
	sv.notify() // an immediate report
	sv.saveRevisions()
	sv.activate(request{kind: reqActivate, name: last.ID, rollback: true})
}

// prune removes the inactive revisions beyond keep_revisions (all but the active
// one when the store is disabled).
func (sv *Supervisor) prune(protect string) {
	keep := sv.spec.Instance.KeepRevisions.Get()
	if sv.rev.store.Disabled != nil {
		keep, protect = 0, ""
	}
	sv.mu.Lock()
	ids := revisions.Prune(&sv.revs, keep, protect)
	for _, id := range ids {
		sv.revs.Remove(id)
		delete(sv.specs, id)
	}
	sv.mu.Unlock()
	for _, id := range ids {
		sv.log.Info().Str("revision", id).Msg("revision pruned (keep_revisions)")
		if err := sv.rev.store.Remove(id); err != nil {
			sv.log.Warn().Err(err).Str("revision", id).Msg("cannot remove the revision's store")
		}
	}
}

// saveRevisions writes the revisions' state (it survives a restart of tend).
func (sv *Supervisor) saveRevisions() {
	sv.mu.Lock()
	st := revisions.State{SpecFileDigest: sv.rev.fileDigest, SpecFileRevision: sv.rev.fileRev, Revisions: sv.revs.All()}
	if a := sv.revs.Active(); a != nil {
		st.Active = a.ID
	}
	b := make([]*revisions.Revision, len(st.Revisions))
	for i, r := range st.Revisions {
		c := *r
		b[i] = &c
	}
	st.Revisions = b
	sv.mu.Unlock()
	if p := sv.rev.first; p != nil {
		if onlyTheFile(st) {
			return // nothing the spec file does not say: a one-shot run writes nothing
		}
		sv.saveSpec(p.id, p.name, p.data)
		sv.rev.first = nil
	}
	if err := sv.rev.store.Save(st); err != nil {
		sv.log.Warn().Err(err).Msg("cannot save the revisions' state")
	}
}

// onlyTheFile says whether st holds nothing but what the spec file says: its one
// revision, active, not rolled back. Without a state file tend starts the file's
// revision, so such a state need not be written (its fsyncs were most of a one-shot
// run's cost).
func onlyTheFile(st revisions.State) bool {
	if len(st.Revisions) != 1 {
		return false
	}
	r := st.Revisions[0]
	return r.ID == st.SpecFileRevision && st.Active == r.ID && r.Source == revisions.SourceFile && r.Phase == revisions.Active
}

// revisionsStatusLocked adds the revisions to a status document.
func (sv *Supervisor) revisionsStatusLocked(doc *status.Document) {
	doc.Revisions = sv.revs.Status(sv.ready)
	if sv.rev.fileRev != "" && sv.rev.fileRev != sv.revision {
		doc.SpecFileRevision = sv.rev.fileRev
	}
}

// Revisions is the list of revisions, newest first (GET /v1/revisions).
func (sv *Supervisor) Revisions() []status.Revision {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.revs.Status(sv.ready)
}

// apply installs a revision pushed over the API (PUT /v1/revisions/ID) and, with
// activate: auto, activates it by the reload path.
func (sv *Supervisor) apply(req request) {
	if sv.reloading {
		sv.log.Info().Str("revision", req.name).Msg("apply queued behind the reload in progress")
		sv.queueRevision(req)
		return
	}
	sv.reloading = true
	ok, err := sv.admit(req.spec, revisions.SourceAPI, req.data, req.dataName, req)
	if errors.Is(err, errInstalling) {
		return // onInstalled goes on
	}
	if !ok {
		req.reply(err)
		sv.finishReload()
		return
	}
	step := reloadStep{loaded: true, admitted: true, req: req, fetched: req.spec}
	go func() { sv.reloadSteps <- step }()
}

// writeRevisionMetrics writes tend_revision_active and tend_rollbacks_total.
func (sv *Supervisor) writeRevisionMetrics(w io.Writer) {
	sv.mu.Lock()
	revs := sv.revs.All()
	active := map[string]bool{}
	for _, r := range revs {
		active[r.ID] = r.Phase == revisions.Active
	}
	rollbacks := sv.rev.rollbacks
	sv.mu.Unlock()
	promtext.Family(w, "tend_revision_active", "gauge", "1 for the active revision, 0 for the other kept ones.")
	for _, r := range revs {
		v := uint64(0)
		if active[r.ID] {
			v = 1
		}
		promtext.Uint(w, `tend_revision_active{revision="`+promtext.EscapeLabel(r.ID)+`"}`, v)
	}
	promtext.Family(w, "tend_rollbacks_total", "counter", "Rollbacks since tend started: automatic (rollback_after) and requested (tend rollback).")
	promtext.Uint(w, "tend_rollbacks_total", rollbacks)
}
