package resources

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Manager keeps the resources of one instance in place: it prepares them, applies
// reloads, re-verifies static resources in the background and reports status.
// Prepare and Reload must not run concurrently (the supervisor serialises them);
// Status and Failing may be called at any time.
type Manager struct {
	opts  Options
	fetch *fetcher
	bg    context.Context // lifetime of background re-verification

	mu       sync.Mutex // guards the lists, sums, reserved and cache; every entry guards its own status
	static   []*static
	dynamic  []*dynamic
	sums     map[string]chan struct{} // lockSum's locks, one per content (shareKey) ever fetched
	reserved map[[2]int32]int64       // bytes reserved by downloads under way, by filesystem (disk.go)
	cache    *Cache                   // <instance.dir>/.tend/cache of the current spec
}

// New returns a manager whose background work lives until bg ends.
func New(bg context.Context, opts Options) *Manager {
	if opts.Changed == nil {
		opts.Changed = func() {}
	}
	return &Manager{opts: opts, fetch: newFetcher(opts), bg: bg}
}

// Prepare fetches and verifies every static resource and the start-up revision of
// every dynamic resource (no notify, no verify: nothing runs yet), retrying failed
// attempts with backoff until they succeed or ctx ends, then starts re-verification.
func (m *Manager) Prepare(ctx context.Context, s *spec.Spec) error {
	var statics []*static
	for _, r := range s.Resources {
		st, err := newStatic(s, r)
		if err != nil {
			return err
		}
		statics = append(statics, st)
	}
	var dynamics []*dynamic
	for _, d := range s.DynamicResources {
		dr, err := newDynamic(s, d)
		if err != nil {
			return err
		}
		dynamics = append(dynamics, dr)
	}
	m.mu.Lock()
	m.static, m.dynamic = statics, dynamics
	m.mu.Unlock()
	m.opts.Changed()
	m.removeTemps(s, dynamics)
	// Before any fetch: a dropped resource frees its space, and a cached one may be
	// what a resource of s asks for.
	m.retireUnnamed(s, m.useCache(s))

	err := parallel(len(statics), func(i int) error {
		r := statics[i]
		staged, err := m.stageStatic(ctx, r, 0, true)
		if err != nil {
			return fmt.Errorf("resource %q: %w", r.spec.Name, err)
		}
		return m.commitStatic(r, staged)
	})
	if err != nil {
		return err
	}
	err = parallel(len(dynamics), func(i int) error { return m.prepareDynamic(ctx, dynamics[i]) })
	if err != nil {
		return err
	}
	for _, r := range statics {
		m.startRecheck(r)
	}
	return nil
}

// removeTemps removes what a tend killed mid-download or mid-extraction left in
// instance.dir, in every storage_dir and beside every destination.
func (m *Manager) removeTemps(s *spec.Spec, dynamics []*dynamic) {
	dirs := []string{s.Instance.Dir}
	for _, r := range dynamics {
		dirs = append(dirs, r.storage, filepath.Dir(r.dest))
	}
	slices.Sort(dirs)
	for _, dir := range slices.Compact(dirs) {
		if removed := removeTemps(s.Instance.Dir, dir); len(removed) > 0 {
			m.opts.Log.Info().Str("dir", dir).Strs("removed", removed).Msg("removed temporary files a previous tend left")
		}
	}
}

// prepareDynamic puts the start-up revision in place, retrying until ctx ends. A
// version that failed verify before (or whose verify tend did not live to finish)
// is not activated: the active version stays until the spec names another one.
func (m *Manager) prepareDynamic(ctx context.Context, r *dynamic) error {
	d := r.spec
	for attempt := 1; ; attempt++ {
		err := r.open()
		if err == nil {
			if rej := r.st.Rejected; rej != nil && rej.Ident.names(d) {
				if err = m.keepRejected(r, rej); err == nil {
					return nil
				}
			} else {
				var v version
				if v, err = m.stageDynamic(ctx, r, d, 0); err == nil {
					err = r.activate(v, d)
				}
				if err == nil {
					m.evict(r, d.CachedRevisionsCount.Get())
					r.set(status.ResourceReady, "")
					m.opts.Changed()
					m.opts.Log.Info().Str("dynamic_resource", d.Name).Int64("revision", d.Revision).Str("destination", r.dest).Msg("dynamic resource in place")
					return nil
				}
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("dynamic resource %q: %w", d.Name, err)
		}
		r.set(status.ResourceFailed, err.Error())
		m.opts.Changed()
		delay := m.opts.Retry.Delay(attempt, rand.Float64)
		m.opts.Log.Warn().Str("dynamic_resource", d.Name).Err(err).Dur("retry_in_ms", delay).Msg("preparing dynamic resource failed")
		if !restart.Sleep(ctx, delay) {
			return fmt.Errorf("dynamic resource %q: %w (last attempt: %v)", d.Name, ctx.Err(), err)
		}
	}
}

// keepRejected leaves the active version in place at start-up when the spec names
// the rejected one, and says so in status.
func (m *Manager) keepRejected(r *dynamic, rej *rejected) error {
	log := m.opts.Log.Warn().Str("dynamic_resource", r.spec.Name).Int64("revision", rej.Ident.Revision).Str("reason", rej.Reason)
	if r.st.Active == nil {
		r.set(status.ResourceFailed, rej.Reason+"; no earlier version to go back to")
		m.opts.Changed()
		log.Msg("this revision was rejected before and there is no other version")
		return nil
	}
	if err := switchLink(r.root, r.dest, r.pathOf(*r.st.Active)); err != nil {
		return err
	}
	r.set(status.ResourceRolledBack, rej.Reason)
	m.opts.Changed()
	log.Int64("active_revision", r.st.Active.Revision).Msg("this revision was rejected before; keeping the active one until the spec names another")
	return nil
}

// Reload applies next (docs/reference.md "Resources on reload"). Static resources whose name, urls,
// checksum and extract did not change are not touched; changed and new ones are
// fetched (up to ReloadRounds rounds) and put in place only when all of them
// succeeded, else nothing changes and the error is returned. Then each dynamic
// resource whose version changed is fetched or taken from the kept versions, its
// destination switched, the notify_actions of the running containers named in
// running are run with the changed and removed names as arguments, and verify runs; a failed
// verify switches back and notifies again. Dynamic failures are shown in status and
// do not fail the reload.
func (m *Manager) Reload(ctx context.Context, next *spec.Spec, running []string) error {
	if err := m.reloadStatic(ctx, next); err != nil {
		return err
	}
	m.reloadDynamic(ctx, next, running)
	return nil
}

// reloadStatic brings the static resources to next: the new and changed ones are
// fetched beside the old (all or none: one that fails leaves the old set as it was),
// then put in place; a changed check_period restarts the re-verification.
func (m *Manager) reloadStatic(ctx context.Context, next *spec.Spec) error {
	st, err := m.StageStatic(ctx, next)
	if err != nil {
		return err
	}
	return st.Commit()
}

// StaticReload is a reload's new and changed static resources, fetched and verified
// beside the old ones, which stay in place until Commit. A re-prepare (docs/reference.md "Resources on reload")
// stages while everything runs and commits once the containers have stopped.
type StaticReload struct {
	m      *Manager
	root   string // instance.dir of the next spec, which staged paths are beneath
	old    []*static
	plan   staticPlan
	staged []string
}

// StageStatic fetches (up to ReloadRounds rounds) what next changes or adds to the
// static resources. On an error nothing has changed.
func (m *Manager) StageStatic(ctx context.Context, next *spec.Spec) (*StaticReload, error) {
	m.mu.Lock()
	old := m.static
	m.mu.Unlock()
	plan, err := planStatic(old, next)
	if err != nil {
		return nil, err
	}
	m.useCache(next)
	st := &StaticReload{m: m, root: next.Instance.Dir, old: old, plan: plan, staged: make([]string, len(plan.fetch))}
	if len(plan.fetch) > 0 {
		m.setStatic(plan.list) // status shows the downloads' progress
	}
	err = parallel(len(plan.fetch), func(i int) error {
		var err error
		st.staged[i], err = m.stageStatic(ctx, plan.fetch[i], m.opts.ReloadRounds, true)
		if err != nil {
			return fmt.Errorf("resource %q: %w", plan.fetch[i].spec.Name, err)
		}
		return nil
	})
	if err != nil {
		st.Abandon()
		return nil, err
	}
	return st, nil
}

// Abandon removes what was staged (what came from the cache goes back) and shows
// the old resources again.
func (st *StaticReload) Abandon() {
	for i, p := range st.staged {
		if p != "" && !st.m.putBack(st.plan.fetch[i], p) {
			_ = beneath.RemoveAll(st.root, p)
		}
	}
	st.m.setStatic(st.old)
}

// Commit puts the staged resources in place; a changed check_period restarts the
// re-verification.
func (st *StaticReload) Commit() error {
	m, plan := st.m, st.plan
	// The old versions' re-verification must not fetch them back.
	for _, o := range st.old {
		if !slices.Contains(plan.list, o) {
			o.stopRecheck()
		}
	}
	var errs []error
	for i, r := range plan.fetch {
		if err := m.commitStatic(r, st.staged[i]); err != nil {
			errs = append(errs, err)
		}
		m.startRecheck(r)
	}
	for _, pc := range plan.periods {
		period, _ := ParseCheckPeriod(pc.spec.CheckPeriod)
		restartCheck := period != pc.r.period
		if restartCheck {
			pc.r.stopRecheck()
		}
		cachedChanged := pc.r.spec.Cached != pc.spec.Cached
		pc.r.mu.Lock()
		pc.r.spec, pc.r.period = pc.spec, period
		pc.r.mu.Unlock()
		if cachedChanged { // the marker says where the content goes once dropped
			if err := m.commitStatic(pc.r, ""); err != nil {
				errs = append(errs, err)
			}
		}
		if restartCheck {
			m.startRecheck(pc.r)
		}
	}
	m.retireRemoved(st.old, plan.list)
	m.setStatic(plan.list)
	return errors.Join(errs...)
}

// staticPlan is what a reload does to the static resources: the next list, those of
// it to fetch, and kept ones whose check_period, cached or size changed.
type staticPlan struct {
	list, fetch []*static
	periods     []periodChange
}

type periodChange struct {
	r    *static
	spec spec.Resource
}

// planStatic keeps a resource of old that next names with the same content and place.
func planStatic(old []*static, next *spec.Spec) (staticPlan, error) {
	byName := map[string]*static{}
	for _, r := range old {
		byName[r.spec.Name] = r
	}
	var p staticPlan
	for _, rs := range next.Resources {
		if o := byName[rs.Name]; o != nil && sameStatic(o.spec, rs) && o.path == next.WorkDir(rs.Name) {
			p.list = append(p.list, o)
			if o.spec.CheckPeriod != rs.CheckPeriod || o.spec.Cached != rs.Cached || o.spec.Size != rs.Size {
				p.periods = append(p.periods, periodChange{o, rs})
			}
			continue
		}
		n, err := newStatic(next, rs)
		if err != nil {
			return staticPlan{}, err
		}
		p.list = append(p.list, n)
		p.fetch = append(p.fetch, n)
	}
	return p, nil
}

func (m *Manager) setStatic(list []*static) {
	m.mu.Lock()
	m.static = list
	m.mu.Unlock()
	m.opts.Changed()
}

// ReloadDynamic applies next's dynamic resources alone: a re-prepare's, once the
// static ones are committed (running is empty then: nothing runs to be notified).
func (m *Manager) ReloadDynamic(ctx context.Context, next *spec.Spec, running []string) {
	m.reloadDynamic(ctx, next, running)
}

// reloadDynamic brings the dynamic resources to next: the changed ones (and the
// failed) are fetched beside the active version, switched, the running containers
// notified, verified (going back where verify fails) and old versions evicted. The
// names of removed ones are notified too (seed 001: "on update, add or delete"); their
// files stay where they are, as a container may still read them.
func (m *Manager) reloadDynamic(ctx context.Context, next *spec.Spec, running []string) {
	removed := m.removedDynamic(next)
	work, opened := m.planDynamic(next)
	var done []*dynamic
	if len(work) > 0 {
		done = m.switchDynamic(work, m.stageAll(ctx, work, opened))
		m.opts.Changed()
	}
	if changed := append(names(done), removed...); len(changed) > 0 {
		m.notify(ctx, next, running, changed)
	}
	var back []*dynamic
	for _, r := range done {
		if m.settle(ctx, next, r) {
			back = append(back, r)
		}
	}
	m.opts.Changed()
	if len(back) > 0 {
		m.notify(ctx, next, running, names(back))
	}
	for _, r := range work {
		m.evict(r, r.spec.CachedRevisionsCount.Get())
	}
	m.opts.Changed()
}

// removedDynamic returns the names of the dynamic resources next no longer has.
func (m *Manager) removedDynamic(next *spec.Spec) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var removed []string
	for _, r := range m.dynamic {
		name := r.name()
		if !slices.ContainsFunc(next.DynamicResources, func(d spec.DynamicResource) bool { return d.Name == name }) {
			removed = append(removed, name)
		}
	}
	if len(removed) > 0 {
		m.opts.Log.Info().Strs("removed", removed).Msg("dynamic resources removed")
	}
	return removed
}

// planDynamic makes next's dynamic resources the list: one with the same storage and
// destination is kept (with next's spec), others are new. It returns those that need
// a new version (work), and which of them are open already.
func (m *Manager) planDynamic(next *spec.Spec) (work []*dynamic, opened map[*dynamic]bool) {
	m.mu.Lock()
	old := m.dynamic
	m.mu.Unlock()
	byName := map[string]*dynamic{}
	for _, r := range old {
		byName[r.name()] = r
	}
	var list []*dynamic
	opened = map[*dynamic]bool{}
	for _, d := range next.DynamicResources {
		o := byName[d.Name]
		if o != nil && o.storage == next.WorkDir(d.StorageDir) && o.dest == next.WorkDir(d.Destination) {
			o.mu.Lock()
			prev, failed := o.spec, o.state == status.ResourceFailed
			o.spec = d
			o.mu.Unlock()
			list = append(list, o)
			if !sameVersion(prev, d) || failed {
				o.sum, _ = ParseChecksum(d.Checksum)
				work = append(work, o)
				opened[o] = true
			}
			continue
		}
		n, err := newDynamic(next, d)
		if err != nil {
			m.opts.Log.Error().Err(err).Msg("reload")
			continue
		}
		list = append(list, n)
		work = append(work, n)
	}
	m.mu.Lock()
	m.dynamic = list
	m.mu.Unlock()
	m.opts.Changed()
	return work, opened
}

// stageAll fetches the new version of every resource of work in parallel; a nil
// version is one that failed (its state says why, the active one stays).
func (m *Manager) stageAll(ctx context.Context, work []*dynamic, opened map[*dynamic]bool) []*version {
	versions := make([]*version, len(work))
	_ = parallel(len(work), func(i int) error {
		r := work[i]
		d := r.spec // only this goroutine writes it now
		err := error(nil)
		if !opened[r] {
			err = r.open()
		}
		var v version
		if err == nil {
			v, err = m.stageDynamic(ctx, r, d, m.opts.ReloadRounds)
		}
		if err != nil {
			r.set(status.ResourceFailed, err.Error())
			m.opts.Changed()
			m.opts.Log.Error().Str("dynamic_resource", d.Name).Int64("revision", d.Revision).Err(err).Msg("fetching the new version failed; the active one stays")
			return nil
		}
		versions[i] = &v
		return nil
	})
	return versions
}

// switchDynamic points the destination of every staged resource at its new version
// and returns those switched.
func (m *Manager) switchDynamic(work []*dynamic, versions []*version) (done []*dynamic) {
	for i, r := range work {
		if versions[i] == nil {
			continue
		}
		if err := r.begin(*versions[i], r.spec, r.spec.Verify != nil); err != nil {
			r.set(status.ResourceFailed, "switching the destination failed: "+err.Error())
			m.opts.Log.Error().Str("dynamic_resource", r.spec.Name).Err(err).Msg("switching the destination failed; the active version stays")
			continue
		}
		m.opts.Log.Info().Str("dynamic_resource", r.spec.Name).Int64("revision", r.spec.Revision).Str("path", versions[i].Path).Msg("destination switched")
		done = append(done, r)
	}
	return done
}

// settle runs verify on a switched resource and commits the switch, or goes back
// to the active version when verify fails or the switch cannot be recorded. It
// reports whether it went back (the containers are told again).
func (m *Manager) settle(ctx context.Context, next *spec.Spec, r *dynamic) (wentBack bool) {
	log := m.opts.Log.With().Str("dynamic_resource", r.spec.Name).Int64("revision", r.spec.Revision).Logger()
	if r.spec.Verify != nil {
		id := next.Instance.Identity()
		target := probes.Target{Env: next.ProcessEnvAs(nil, id), Dir: next.Instance.Dir, Ident: id}
		if err := RunPolicy(ctx, r.spec.Verify, target, nil); err != nil {
			reason := "verify failed: " + err.Error()
			if ctx.Err() != nil { // shutting down: the same as a kill during verify
				reason = fmt.Sprintf("verify of revision %d did not finish (tend stopped)", r.spec.Revision)
			}
			log.Warn().Str("reason", reason).Msg("rolling back")
			if aerr := r.abandon(reason); aerr != nil {
				r.set(status.ResourceFailed, reason+"; rollback failed: "+aerr.Error())
				return false
			}
			r.set(status.ResourceRolledBack, reason)
			return true
		}
	}
	if err := r.commit(); err != nil {
		reason := "recording the switch failed: " + err.Error()
		log.Error().Str("reason", reason).Msg("switching back")
		if aerr := r.abandon(""); aerr != nil {
			r.set(status.ResourceFailed, reason+"; switching back failed: "+aerr.Error())
			return false
		}
		r.set(status.ResourceFailed, reason)
		return true
	}
	r.set(status.ResourceReady, "")
	return false
}

func names(list []*dynamic) []string {
	var out []string
	for _, r := range list {
		out = append(out, r.spec.Name)
	}
	return out
}

// notify runs the notify_actions of every running container with changed as
// arguments, with the container's environment and working directory.
func (m *Manager) notify(ctx context.Context, next *spec.Spec, running []string, changed []string) {
	for i := range next.Containers {
		c := &next.Containers[i]
		if len(c.NotifyActions) == 0 || !slices.Contains(running, c.Name) {
			continue
		}
		target := probes.Target{Container: c.Name, Env: next.ContainerEnv(c), Dir: next.WorkDir(c.WorkingDir), Ident: c.Identity()}
		if m.opts.Cgroup != nil {
			target.Cgroup = m.opts.Cgroup(c.Name)
		}
		for j := range c.NotifyActions {
			err := RunPolicy(ctx, &c.NotifyActions[j], target, changed)
			ev := m.opts.Log.Info()
			if err != nil {
				ev = m.opts.Log.Warn().Err(err)
			}
			ev.Str("container", c.Name).Strs("changed", changed).Int("action", j).Msg("notify action")
		}
	}
}

// Status returns the status entries in spec order.
func (m *Manager) Status() ([]status.Resource, []status.DynamicResource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var rs []status.Resource
	for _, r := range m.static {
		rs = append(rs, r.status())
	}
	var ds []status.DynamicResource
	for _, d := range m.dynamic {
		ds = append(ds, d.status())
	}
	return rs, ds
}

// FailingReason is the reason of the instance's installed condition while Failing
// is not "": InsufficientDisk when a resource's size does not fit, else
// ResourcesFailing.
func (m *Manager) FailingReason() status.Reason {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.static {
		r.mu.Lock()
		disk := r.state == status.ResourceFailed && strings.HasPrefix(r.reason, string(status.ReasonInsufficientDisk)+":")
		r.mu.Unlock()
		if disk {
			return status.ReasonInsufficientDisk
		}
	}
	return status.ReasonResourcesFailing
}

// Failing says why resources are not in place ("model.bin: checksum mismatch: ..."),
// or "" when none is failing.
func (m *Manager) Failing() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, r := range m.static {
		if f := r.failing(); f != "" {
			out = append(out, f)
		}
	}
	for _, d := range m.dynamic {
		if f := d.failing(); f != "" {
			out = append(out, f)
		}
	}
	return strings.Join(out, "; ")
}

// Close stops background re-verification and waits for it.
func (m *Manager) Close() {
	m.mu.Lock()
	list := slices.Clone(m.static)
	m.mu.Unlock()
	for _, r := range list {
		r.stopRecheck()
	}
}

// parallel runs f(0..n-1) concurrently and joins their errors.
func parallel(n int, f func(int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
