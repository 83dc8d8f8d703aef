package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// stateFile is the name of a dynamic resource's state in its storage_dir.
const stateFile = ".tend-state.json"

// dynState is what survives a restart of tend: the active and previous versions,
// a switch under way, the last version that failed verify, and every kept version
// with what it was fetched from.
type dynState struct {
	Active   *version `json:"active"`
	Previous *version `json:"previous,omitempty"`
	// Trying is the version the destination is being switched to. It is written
	// before the symlink moves and becomes Active only once notify and verify are
	// done, so Active is always a version that was put in place completely; a tend
	// killed in between finds Trying at start-up and goes back to Active.
	Trying *trial `json:"trying,omitempty"`
	// Rejected is the last version whose verify failed or did not finish, and why:
	// start-up does not activate it while the spec still names it.
	Rejected *rejected `json:"rejected,omitempty"`
	Kept     []kept    `json:"kept"`
	Seq      int64     `json:"seq"` // last Used value handed out
}

// version is a revision as it is active: the spec's revision and the entry of
// storage_dir that holds it (another revision's, when a kept version was reused).
type version struct {
	Revision int64  `json:"revision"`
	Path     string `json:"path"`
}

// ident is what the spec asks for: a change of any field is a new version.
type ident struct {
	Revision int64    `json:"revision"`
	URLs     []string `json:"urls"`
	Checksum string   `json:"checksum"`
	Extract  bool     `json:"extract"`
}

func identOf(d spec.DynamicResource) ident {
	return ident{Revision: d.Revision, URLs: d.URLs, Checksum: d.Checksum, Extract: d.Extract}
}

// names reports whether d asks for this version.
func (id ident) names(d spec.DynamicResource) bool {
	return id.Revision == d.Revision && slices.Equal(id.URLs, d.URLs) && id.Checksum == d.Checksum && id.Extract == d.Extract
}

// trial is a switch under way; Verify says whether the version must still pass
// verify to become active.
type trial struct {
	Version version `json:"version"`
	Ident   ident   `json:"ident"`
	Verify  bool    `json:"verify"`
}

// rejected is a version that must not become active again by itself.
type rejected struct {
	Ident  ident  `json:"ident"`
	Reason string `json:"reason"`
}

// kept is one version in storage_dir.
type kept struct {
	Path     string   `json:"path"`
	Revision int64    `json:"revision"` // the revision it was fetched for
	URLs     []string `json:"urls"`
	Checksum string   `json:"checksum"`
	Extract  bool     `json:"extract"`
	// Tree (an extracted directory) or Digest (a file, "SHA256:<hex>") is what the
	// version held when it was downloaded: it is reused only while it still does,
	// whatever the spec's checksum says (EMPTY: says nothing).
	Tree   string `json:"tree,omitempty"`
	Digest string `json:"digest,omitempty"`
	Used   int64  `json:"used"` // when it was last made active, for eviction
}

// intact reports why the version at path no longer holds what was downloaded, or
// nil when it does. A file kept by a tend that recorded no digest cannot be told
// from a changed one.
func (k *kept) intact(path string) error {
	if k.Extract {
		tree, err := treeDigest(path)
		if err == nil && tree != k.Tree {
			err = errors.New("contents changed on disk")
		}
		return err
	}
	if k.Digest == "" {
		return errors.New("no digest was recorded when it was downloaded")
	}
	digest, err := FileDigest(path)
	if err == nil && digest != k.Digest {
		err = fmt.Errorf("contents changed on disk (%s, downloaded as %s)", digest, k.Digest)
	}
	return err
}

// dynamic is one dynamic resource.
type dynamic struct {
	root     string // instance.dir, which storage_dir is resolved beneath
	storage  string // absolute storage_dir
	dest     string // absolute destination
	progress Progress

	// Owned by the goroutine preparing or reloading (they never overlap).
	st  dynState
	sum Checksum

	mu     sync.Mutex // guards the fields below, read by status
	spec   spec.DynamicResource
	state  status.ResourceState
	reason string
	active int64
}

func newDynamic(s *spec.Spec, d spec.DynamicResource) (*dynamic, error) {
	sum, err := ParseChecksum(d.Checksum)
	if err != nil {
		return nil, fmt.Errorf("dynamic resource %q: %w", d.Name, err)
	}
	r := &dynamic{spec: d, sum: sum, root: s.Instance.Dir, storage: s.WorkDir(d.StorageDir), dest: s.WorkDir(d.Destination), state: status.ResourceFetching, active: -1}
	r.progress.reset(-1)
	return r, nil
}

func (r *dynamic) name() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spec.Name
}

func (r *dynamic) set(state status.ResourceState, reason string) {
	r.mu.Lock()
	r.state, r.reason = state, reason
	r.mu.Unlock()
}

// setActive shows the revision the destination points at.
func (r *dynamic) setActive(revision int64) {
	r.mu.Lock()
	r.active = revision
	r.mu.Unlock()
}

func (r *dynamic) status() status.DynamicResource {
	r.mu.Lock()
	defer r.mu.Unlock()
	return status.DynamicResource{Name: r.spec.Name, Revision: r.spec.Revision, State: r.state, ActiveRevision: r.active, Reason: r.reason}
}

func (r *dynamic) failing() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return failingText(r.spec.Name, r.state, r.reason)
}

// sameVersion reports whether b asks for the version a has: a change of revision,
// urls, checksum or extract is a new version.
func sameVersion(a, b spec.DynamicResource) bool {
	return identOf(a).names(b)
}

// open makes storage_dir (one level: its parent must exist), loads the state,
// undoes a switch a killed tend left unfinished and checks the destination.
func (r *dynamic) open() error {
	if err := r.checkStorage(true); err != nil {
		return err
	}
	if err := checkDestination(r.dest); err != nil {
		return err
	}
	b, err := readBeneath(r.root, filepath.Join(r.storage, stateFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.st = dynState{}
	case err != nil:
		return fmt.Errorf("read state: %w", err)
	default:
		var st dynState
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("state file %s: %w", filepath.Join(r.storage, stateFile), err)
		}
		r.st = st
	}
	if t := r.st.Trying; t != nil {
		if err := r.recoverTrial(); err != nil {
			return fmt.Errorf("undo the unfinished switch to revision %d: %w", t.Version.Revision, err)
		}
	}
	if r.st.Active != nil {
		r.setActive(r.st.Active.Revision)
	}
	return nil
}

// checkStorage makes storage_dir when mkdir says (one level: its parent must exist)
// and checks that it is a directory beneath instance.dir: a container's user who
// owns instance.dir may have replaced it, or a directory above it, with a symlink
// leading out, and tend downloads into it and removes old versions from it as root.
func (r *dynamic) checkStorage(mkdir bool) error {
	if mkdir {
		d, name, err := beneath.OpenParent(r.root, r.storage)
		if errors.Is(err, fs.ErrNotExist) {
			err = &fs.PathError{Op: "mkdir", Path: r.storage, Err: unix.ENOENT}
		}
		if err != nil {
			return fmt.Errorf("storage_dir: %w", err)
		}
		err = unix.Mkdirat(int(d.Fd()), name, 0o755)
		d.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("storage_dir: %w", &fs.PathError{Op: "mkdir", Path: r.storage, Err: err})
		}
	}
	d, err := beneath.OpenDir(r.root, r.storage)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("storage_dir %s is not a directory", r.storage)
		}
		return fmt.Errorf("storage_dir: %w", err)
	}
	return d.Close()
}

// checkDestination refuses a destination that exists and is not a symlink: it is
// never overwritten.
func checkDestination(dest string) error {
	fi, err := os.Lstat(dest)
	if err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		return fmt.Errorf("destination %s exists and is not a symlink; not overwriting it", dest)
	}
	return nil
}

func (r *dynamic) save() error {
	if err := writeJSONAtomic(r.root, filepath.Join(r.storage, stateFile), r.st); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// sameURLSet compares url lists as sets.
func sameURLSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// reusable finds a kept version with the same url set, checksum and extract whose
// data is still what was downloaded (kept.intact); log hears of those that are not.
func (r *dynamic) reusable(d spec.DynamicResource, log func(k *kept, err error)) *kept {
	order := make([]int, 0, len(r.st.Kept))
	for i, k := range r.st.Kept { // the active version first: no switch when it fits
		if r.st.Active != nil && k.Path == r.st.Active.Path {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	for _, i := range order {
		k := &r.st.Kept[i]
		if !sameURLSet(k.URLs, d.URLs) || k.Checksum != d.Checksum || k.Extract != d.Extract {
			continue
		}
		// The digest was taken of a download that matched k.Checksum, which is d's.
		err := k.intact(filepath.Join(r.storage, k.Path))
		if err == nil {
			return k
		}
		log(k, err)
	}
	return nil
}

// freePath is the entry of storage_dir for a new download of revision: its number,
// or number-N when a kept version already uses that name.
func (r *dynamic) freePath(revision int64) string {
	used := func(p string) bool {
		return slices.ContainsFunc(r.st.Kept, func(k kept) bool { return k.Path == p })
	}
	p := strconv.FormatInt(revision, 10)
	for n := 2; used(p); n++ {
		p = fmt.Sprintf("%d-%d", revision, n)
	}
	return p
}

// stageDynamic makes the version d asks for present in storage_dir: a kept version with
// the same url set, or a new download into storage_dir/<revision>. It does not
// touch the destination.
func (m *Manager) stageDynamic(ctx context.Context, r *dynamic, d spec.DynamicResource, rounds int) (version, error) {
	if err := checkDestination(r.dest); err != nil {
		return version{}, err
	}
	notReused := func(k *kept, err error) {
		m.opts.Log.Warn().Str("dynamic_resource", d.Name).Int64("revision", d.Revision).Str("path", k.Path).Err(err).Msg("a kept version with the same urls is not reused: fetching it again")
	}
	if k := r.reusable(d, notReused); k != nil {
		m.opts.Log.Info().Str("dynamic_resource", d.Name).Int64("revision", d.Revision).Str("path", k.Path).Msg("reusing a kept version with the same urls")
		return version{Revision: d.Revision, Path: k.Path}, nil
	}
	if err := r.checkStorage(false); err != nil {
		return version{}, err
	}
	path := r.freePath(d.Revision)
	removeStale(r.root, r.storage, path)
	r.set(status.ResourceFetching, r.reason)
	m.opts.Changed()
	m.opts.Log.Info().Str("dynamic_resource", d.Name).Int64("revision", d.Revision).Strs("urls", d.URLs).Msg("fetching dynamic resource")
	var tree string
	var finish func(string) (string, error)
	if d.Extract {
		finish = func(archive string) (string, error) {
			t, dir, err := m.unpack(r.root, d.Name, archive, r.storage, "."+path+".tend-stage-*")
			tree = t
			return dir, err
		}
	}
	src := Source{Name: d.Name, URLs: d.URLs, Checksum: r.sum, Root: r.root}
	staged, err := m.fetch.fetch(ctx, src, r.storage, "."+path+".tend-part-*", &r.progress, rounds, finish, nil, func(err error) {
		r.set(status.ResourceFailed, err.Error())
		m.opts.Changed()
	})
	if err != nil {
		return version{}, err
	}
	digest := ""
	if !d.Extract {
		// One more read of a file just written (from the page cache) unless the
		// checksum is the digest: the spec's, EMPTY: above all, may not tell a
		// changed version later.
		if digest = digestOf(r.sum); digest == "" {
			if digest, err = FileDigest(staged); err != nil {
				_ = beneath.RemoveAll(r.root, staged)
				return version{}, err
			}
		}
	}
	if err := replace(r.root, staged, filepath.Join(r.storage, path)); err != nil {
		_ = beneath.RemoveAll(r.root, staged)
		return version{}, err
	}
	r.st.Kept = append(r.st.Kept, kept{Path: path, Revision: d.Revision, URLs: d.URLs, Checksum: d.Checksum, Extract: d.Extract, Tree: tree, Digest: digest})
	if err := r.save(); err != nil {
		r.st.Kept = r.st.Kept[:len(r.st.Kept)-1]
		_ = beneath.RemoveAll(r.root, filepath.Join(r.storage, path))
		return version{}, err
	}
	return version{Revision: d.Revision, Path: path}, nil
}

// switchLink points the destination at target atomically: a new symlink beside it
// renamed over the old one, so there is never a moment without it. The destination's
// directory is resolved beneath root (instance.dir) and both steps act in it.
func switchLink(root, dest, target string) error {
	if err := checkDestination(dest); err != nil {
		return err
	}
	if cur, err := os.Readlink(dest); err == nil && cur == target {
		return nil
	}
	d, name, err := beneath.OpenParent(root, dest)
	if err != nil {
		return err
	}
	defer d.Close()
	dfd := int(d.Fd())
	tmp := "." + name + ".tend-link-" + randomSuffix()
	if err := unix.Symlinkat(target, dfd, tmp); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: filepath.Join(filepath.Dir(dest), tmp), Err: err}
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return &os.LinkError{Op: "rename", Old: tmp, New: dest, Err: err}
	}
	return d.Sync()
}

func (r *dynamic) pathOf(v version) string {
	return filepath.Join(r.storage, v.Path)
}

// A switch is begin, then (after notify and verify) commit or abandon. The state is
// written before the symlink moves and the symlink moves back before the state
// forgets the trial, so a failure or a kill at any step leaves the destination, the
// state file and status agreeing on the active version (the state file says
// "active, trying another", which start-up resolves to the active one).

// begin records v as the version being tried, then points the destination at it.
// verify says whether v must pass verify before commit.
func (r *dynamic) begin(v version, d spec.DynamicResource, verify bool) error {
	r.st.Trying = &trial{Version: v, Ident: identOf(d), Verify: verify}
	if err := r.save(); err != nil {
		r.st.Trying = nil
		return err
	}
	if err := switchLink(r.root, r.dest, r.pathOf(v)); err != nil {
		r.st.Trying = nil
		_ = r.save() // a trial left in the file is undone at start-up
		return err
	}
	r.setActive(v.Revision)
	return nil
}

// commit makes the tried version the active one; the version active before becomes
// the previous one (the rollback target). On error nothing changed.
func (r *dynamic) commit() error {
	before := r.st
	before.Kept = slices.Clone(r.st.Kept)
	v := r.st.Trying.Version
	if a := r.st.Active; a == nil || *a != v {
		r.st.Previous = r.st.Active
	}
	r.st.Active, r.st.Trying, r.st.Rejected = &v, nil, nil
	r.st.Seq++
	for i := range r.st.Kept {
		if r.st.Kept[i].Path == v.Path {
			r.st.Kept[i].Used = r.st.Seq
		}
	}
	if err := r.save(); err != nil {
		r.st = before
		return err
	}
	return nil
}

// abandon points the destination back at the active version and forgets the trial.
// A reason records the tried version as rejected: start-up will not activate it.
// Only a failure to move the symlink back is an error: when the state cannot be
// written, the file still says "trying", which start-up resolves the same way (back
// to the active version, rejecting one that was waiting for verify).
func (r *dynamic) abandon(reason string) error {
	t := r.st.Trying
	if t == nil {
		return nil
	}
	if r.st.Active != nil {
		if err := switchLink(r.root, r.dest, r.pathOf(*r.st.Active)); err != nil {
			return err
		}
		r.setActive(r.st.Active.Revision)
	}
	r.st.Trying = nil
	if reason != "" {
		r.st.Rejected = &rejected{Ident: t.Ident, Reason: reason}
	}
	_ = r.save()
	if r.st.Active == nil {
		return errors.New("no earlier version to go back to")
	}
	return nil
}

// recoverTrial undoes a switch a killed tend left unfinished: the destination goes
// back to the active version, and a version that was waiting for verify is
// rejected, since it never passed. A switch without verify is simply made again by
// start-up.
func (r *dynamic) recoverTrial() error {
	t := r.st.Trying
	if t == nil {
		return nil
	}
	reason := ""
	if t.Verify {
		reason = fmt.Sprintf("verify of revision %d did not finish (tend stopped)", t.Version.Revision)
	}
	if err := r.abandon(reason); err != nil && r.st.Active != nil {
		return err
	}
	return nil
}

// activate puts v in place without verify (start-up).
func (r *dynamic) activate(v version, d spec.DynamicResource) error {
	if err := r.begin(v, d, false); err != nil {
		return err
	}
	if err := r.commit(); err != nil {
		if aerr := r.abandon(""); aerr != nil {
			return fmt.Errorf("%w; switching back: %v", err, aerr)
		}
		return err
	}
	return nil
}

// evict removes the least recently active versions beyond cached_revisions_count,
// never the active or the previous one.
func (m *Manager) evict(r *dynamic, count int) {
	for len(r.st.Kept) > count {
		victim := -1
		for i, k := range r.st.Kept {
			if (r.st.Active != nil && k.Path == r.st.Active.Path) || (r.st.Previous != nil && k.Path == r.st.Previous.Path) {
				continue
			}
			if victim < 0 || k.Used < r.st.Kept[victim].Used {
				victim = i
			}
		}
		if victim < 0 {
			return
		}
		k := r.st.Kept[victim]
		if err := beneath.RemoveAll(r.root, filepath.Join(r.storage, k.Path)); err != nil {
			m.opts.Log.Warn().Str("dynamic_resource", r.name()).Str("path", k.Path).Err(err).Msg("cannot remove an old version")
			return
		}
		m.opts.Log.Info().Str("dynamic_resource", r.name()).Int64("revision", k.Revision).Str("path", k.Path).Msg("removed an old version")
		r.st.Kept = slices.Delete(r.st.Kept, victim, victim+1)
	}
	if err := r.save(); err != nil {
		m.opts.Log.Warn().Str("dynamic_resource", r.name()).Err(err).Msg("cannot save state")
	}
}
