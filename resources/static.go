package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// checkPeriodRe is compiled on first use, not at start-up (tend's launch time).
var checkPeriodRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+)d([0-9]+)h([0-9]+)m$`) })

// checkPeriodMinute is how long a minute of check_period lasts; tests shorten it.
var checkPeriodMinute = time.Minute

// ParseCheckPeriod parses check_period ("<d>d<h>h<m>m"); 0d0h0m is 0, never.
func ParseCheckPeriod(s string) (time.Duration, error) {
	m := checkPeriodRe().FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("check_period %q: want <days>d<hours>h<minutes>m", s)
	}
	var n [3]int64
	for i := range n {
		n[i], _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	return time.Duration((n[0]*24+n[1])*60+n[2]) * checkPeriodMinute, nil
}

// static is one static resource: the file or directory NAME in instance.dir.
type static struct {
	spec     spec.Resource
	sum      Checksum
	period   time.Duration
	dir      string // instance.dir
	path     string // dir/NAME
	progress Progress

	mu         sync.Mutex // guards the status fields
	state      status.ResourceState
	checksumOK bool
	reason     string
	staged     string // a verified file fetched for it that commit has not yet put in place

	tree string // digest of an extracted directory; owned by whoever installs or verifies
	// digest is FileDigest of the file when known (taken from the cache, or recorded
	// for a cached: true EMPTY: file); owned like tree.
	digest string
	// fromCache is the digest of a staged entry taken from the cache, "" otherwise:
	// an abandoned reload puts it back.
	fromCache string

	stopLoop context.CancelFunc // re-verification; nil when not running
	loopDone chan struct{}
}

// marker is kept beside a static resource as .NAME.tend.json: what is in place, so
// that a restart of tend does not fetch it again and an extracted directory can be
// re-verified.
type marker struct {
	URLs     []string `json:"urls"`
	Checksum string   `json:"checksum"`
	Extract  bool     `json:"extract"`
	Tree     string   `json:"tree,omitempty"`
	// Cached, UUID and Digest (FileDigest of a cached: true EMPTY: file) say where
	// the content goes once the spec no longer names it, and what it must still hold
	// to go to the cache (retire).
	Cached bool   `json:"cached,omitempty"`
	UUID   string `json:"uuid,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// key is what a marker's content is, for the cache.
func (mk marker) key() CacheKey {
	return CacheKey{UUID: mk.UUID, Checksum: mk.Checksum, URLs: mk.URLs, Extract: mk.Extract}
}

// markerName is the marker's name in instance.dir of the resource name.
func markerName(name string) string { return "." + name + ".tend.json" }

// nameOfMarker is the resource a marker's file name is of, if it is one.
func nameOfMarker(file string) (string, bool) {
	name, ok := strings.CutSuffix(file, ".tend.json")
	if !ok || !strings.HasPrefix(name, ".") || len(name) < 2 {
		return "", false
	}
	return name[1:], true
}

func newStatic(s *spec.Spec, r spec.Resource) (*static, error) {
	sum, err := ParseChecksum(r.Checksum)
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", r.Name, err)
	}
	period, err := ParseCheckPeriod(r.CheckPeriod)
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", r.Name, err)
	}
	st := &static{spec: r, sum: sum, period: period, dir: s.Instance.Dir, path: s.WorkDir(r.Name), state: status.ResourceFetching}
	st.progress.reset(-1)
	return st, nil
}

func (r *static) markerPath() string {
	return filepath.Join(r.dir, markerName(r.spec.Name))
}

// key is what the resource's content is, for the cache.
func (r *static) key() CacheKey {
	return CacheKey{UUID: r.spec.UUID, Checksum: r.spec.Checksum, URLs: r.spec.URLs, Extract: r.spec.Extract}
}

// sameStatic reports whether a reload leaves a resource's content alone: same name,
// urls, checksum, extract, executable and uuid (check_period, cached and size may
// change without a fetch).
func sameStatic(a, b spec.Resource) bool {
	return a.Name == b.Name && slices.Equal(a.URLs, b.URLs) && a.Checksum == b.Checksum && a.Extract == b.Extract && a.Executable == b.Executable && a.UUID == b.UUID
}

// set changes the state. It also ends staging: the staged file is in place or gone
// by then, and a resource with the same checksum looking for a copy must see the
// state and the staged file change together.
func (r *static) set(state status.ResourceState, ok bool, reason string) {
	r.mu.Lock()
	r.state, r.checksumOK, r.reason, r.staged = state, ok, reason, ""
	r.mu.Unlock()
}

func (r *static) status() status.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	done, total := r.progress.Bytes()
	return status.Resource{Name: r.spec.Name, State: r.state, ChecksumOK: r.checksumOK, Reason: r.reason, BytesDone: done, BytesTotal: total}
}

// failing returns "NAME: reason" while the resource is not in place.
func (r *static) failing() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return failingText(r.spec.Name, r.state, r.reason)
}

// failingText is "NAME: reason" of a resource that is not in place, else "".
func failingText(name string, state status.ResourceState, reason string) string {
	if state == status.ResourceReady || reason == "" {
		return ""
	}
	return name + ": " + reason
}

// adopt reports whether what is already at the target is this resource: a file
// with the checksum (resources with the same checksum are identical, as in ISS), or,
// by the marker, the same EMPTY: file or an unchanged extracted directory.
func (r *static) adopt() bool {
	fi, err := os.Lstat(r.path)
	if err != nil {
		return false
	}
	if !r.spec.Extract && !r.sum.Empty() {
		if VerifyFile(r.path, r.sum) != nil {
			return false
		}
		r.progress.done.Store(fi.Size())
		r.progress.total.Store(fi.Size())
		return true
	}
	var mk marker
	b, err := readBeneath(r.dir, r.markerPath())
	if err != nil || json.Unmarshal(b, &mk) != nil {
		return false
	}
	sameUUID := r.spec.UUID != "" && mk.UUID == r.spec.UUID // the same content, whatever its urls
	if mk.Checksum != r.spec.Checksum || mk.Extract != r.spec.Extract || (r.sum.Empty() && !sameUUID && !slices.Equal(mk.URLs, r.spec.URLs)) {
		return false
	}
	if !r.spec.Extract {
		r.digest = mk.Digest
		return fi.Mode().IsRegular()
	}
	if !fi.IsDir() {
		return false
	}
	tree, err := treeDigest(r.path)
	if err != nil || tree != mk.Tree {
		return false
	}
	r.tree = tree
	return true
}

// stageStatic fetches the resource (unless mayAdopt and adoptStatic keep what is in
// place) and returns a verified file or extracted directory beside the target, or ""
// when the target is already right. A file another resource with the same checksum
// has is copied instead of downloaded (copyLocal). rounds bounds the rounds over all
// URLs (0: until ctx ends).
func (m *Manager) stageStatic(ctx context.Context, r *static, rounds int, mayAdopt bool) (string, error) {
	removeStale(r.dir, r.dir, r.spec.Name)
	if mayAdopt {
		adopted, err := m.adoptStatic(ctx, r)
		if err != nil {
			return "", err
		}
		if adopted {
			m.opts.Log.Info().Str("resource", r.spec.Name).Msg("resource already in place")
			return "", nil
		}
	}
	if staged, ok := m.takeCached(r); ok {
		return staged, nil
	}
	r.mu.Lock()
	r.state = status.ResourceFetching
	r.mu.Unlock()
	m.opts.Changed()
	m.opts.Log.Info().Str("resource", r.spec.Name).Strs("urls", r.spec.URLs).Msg("fetching resource")
	src := Source{Name: r.spec.Name, URLs: r.spec.URLs, Checksum: r.sum, Root: r.dir}
	prefix := "." + r.spec.Name + ".tend-part-*"
	var finish func(string) (string, error)
	if r.spec.Extract {
		finish = func(archive string) (string, error) {
			tree, dir, err := m.unpack(r.dir, r.spec.Name, archive, r.dir, "."+r.spec.Name+".tend-stage-*")
			if err == nil {
				r.tree = tree
			}
			return dir, err
		}
	}
	wrap := func(download func() (string, error)) (string, error) {
		if r.shareable() {
			return m.copyOrDownload(ctx, r, prefix, download)
		}
		if finish != nil {
			if dir, ok := m.unpackStored(ctx, r, prefix, finish); ok {
				return dir, nil
			}
		}
		return m.withSpace(r, download)
	}
	return m.fetch.fetch(ctx, src, r.dir, prefix, &r.progress, rounds, finish, wrap, func(err error) {
		r.set(status.ResourceFailed, false, err.Error())
		m.opts.Changed()
	})
}

// unpack extracts archive into a new directory in dir (resolved beneath root) and
// returns its tree digest and path; the archive is removed either way.
func (m *Manager) unpack(root, name, archive, dir, pattern string) (string, string, error) {
	defer beneath.RemoveAll(root, archive)
	fi, err := os.Stat(archive)
	if err != nil {
		return "", "", err
	}
	stage, err := mkdirTemp(root, dir, pattern)
	if err != nil {
		return "", "", err
	}
	// Extraction writes by path below the stage: through the stage's descriptor's
	// /proc entry, so that a directory above it swapped for a symlink meanwhile (by
	// a container's user who owns storage_dir's parent) cannot redirect it.
	sd, err := beneath.OpenDir(root, stage)
	if err != nil {
		_ = beneath.RemoveAll(root, stage)
		return "", "", err
	}
	defer sd.Close()
	pinned := "/proc/self/fd/" + strconv.Itoa(int(sd.Fd())) + "/." // "/.": the directory, not the link (Lstat, WalkDir)
	if fi, err := os.Stat(pinned); err != nil || !fi.IsDir() {
		pinned = stage // no /proc
	}
	skipped, err := extract(archive, pinned, m.opts.limitsFor(fi.Size()))
	if err == nil {
		err = sd.Chmod(0o755)
	}
	if err != nil {
		_ = beneath.RemoveAll(root, stage)
		return "", "", fmt.Errorf("extract: %w", renamedPaths(err, pinned, stage))
	}
	if skipped > 0 {
		m.opts.Log.Warn().Str("resource", name).Int("entries", skipped).Msg("archive: device files and fifos skipped")
	}
	tree, err := treeDigest(pinned)
	if err != nil {
		_ = beneath.RemoveAll(root, stage)
		return "", "", renamedPaths(err, pinned, stage)
	}
	return tree, stage, nil
}

// renamedPaths is err with the path from in its message shown as to (errors.Is and
// As still see err).
func renamedPaths(err error, from, to string) error {
	if from == to || !strings.Contains(err.Error(), from) {
		return err
	}
	return &renamedError{err: err, msg: strings.ReplaceAll(err.Error(), from, to)}
}

type renamedError struct {
	err error
	msg string
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// commitStatic puts a staged resource in place and records it in its marker. The
// content it replaces goes to the cache when its marker says cached: true and it is
// other content (retireReplaced).
func (m *Manager) commitStatic(r *static, staged string) error {
	fail := func(err error) error {
		if staged != "" {
			_ = beneath.RemoveAll(r.dir, staged)
		}
		r.set(status.ResourceFailed, false, err.Error())
		m.opts.Changed()
		return fmt.Errorf("resource %q: %w", r.spec.Name, err)
	}
	if err := r.makeExecutable(staged); err != nil {
		return fail(err)
	}
	recordDigest := r.spec.Cached && !r.spec.Extract && r.sum.Empty()
	if recordDigest && (staged != "" || r.digest == "") {
		// What the cache will check the file against once the spec drops it: the
		// checksum says nothing. One more read, of cached: true EMPTY: files only.
		path := staged
		if path == "" {
			path = r.path
		}
		d, err := FileDigest(path)
		if err != nil {
			return fail(err)
		}
		r.digest = d
	}
	if staged != "" {
		m.retireReplaced(r)
		if err := replace(r.dir, staged, r.path); err != nil {
			return fail(err)
		}
	}
	r.fromCache = ""
	mk := marker{URLs: r.spec.URLs, Checksum: r.spec.Checksum, Extract: r.spec.Extract, Tree: r.tree, Cached: r.spec.Cached, UUID: r.spec.UUID}
	if recordDigest {
		mk.Digest = r.digest
	}
	if err := writeJSONAtomic(r.dir, r.markerPath(), mk); err != nil {
		m.opts.Log.Warn().Str("resource", r.spec.Name).Err(err).Msg("cannot write the resource marker; it will be fetched again after a restart")
	}
	r.set(status.ResourceReady, true, "")
	m.opts.Changed()
	if staged != "" {
		m.opts.Log.Info().Str("resource", r.spec.Name).Str("path", r.path).Msg("resource in place")
	}
	return nil
}

// makeExecutable gives an `executable: true` file mode 0755 (spec/executable.go):
// the staged file before it is put in place, or the file already there.
func (r *static) makeExecutable(staged string) error {
	if !r.spec.Executable || r.spec.Extract {
		return nil
	}
	if staged == "" {
		staged = r.path
	}
	return chmodBeneath(r.dir, staged, 0o755)
}

// verify re-hashes what is in place.
func (r *static) verify() error {
	if !r.spec.Extract {
		return VerifyFile(r.path, r.sum)
	}
	tree, err := treeDigest(r.path)
	if err != nil {
		return err
	}
	if tree != r.tree {
		return errors.New("contents changed on disk")
	}
	return nil
}

// startRecheck re-verifies r every check_period until stopRecheck or the end of the
// manager's lifetime; a mismatch is shown in status, logged once and fetched again.
func (m *Manager) startRecheck(r *static) {
	if r.period <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(m.bg)
	r.stopLoop, r.loopDone = cancel, make(chan struct{})
	go func() {
		defer close(r.loopDone)
		for restart.Sleep(ctx, r.period) {
			err := r.verify()
			if err == nil {
				m.opts.Log.Debug().Str("resource", r.spec.Name).Msg("resource re-verified")
				continue
			}
			m.opts.Log.Warn().Str("resource", r.spec.Name).Err(err).Msg("re-verification failed; fetching the resource again")
			r.set(status.ResourceFetching, false, "re-verification failed: "+err.Error())
			m.opts.Changed()
			staged, err := m.stageStatic(ctx, r, 0, false)
			if err != nil {
				return // ctx ended
			}
			_ = m.commitStatic(r, staged)
		}
	}()
}

func (r *static) stopRecheck() {
	if r.stopLoop != nil {
		r.stopLoop()
		<-r.loopDone
		r.stopLoop = nil
	}
}
