package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"

	"github.com/tend-sh/tend/status"
)

// Resources with the same uuid, or else the same checksum, are identical (as in
// ISS): a static resource that must be fetched is copied from a file another
// resource of the instance already has with that content, when one still verifies,
// instead of downloaded.

// shareable reports whether r may be copied from a file of another resource: it is
// a file (an extracted archive is gone after unpacking) and its uuid or checksum
// says what the file holds (EMPTY: alone says nothing).
func (r *static) shareable() bool {
	return !r.spec.Extract && (r.spec.UUID != "" || !r.sum.Empty())
}

// shareKey names r's content among the instance's resources: its uuid, else its
// checksum.
func (r *static) shareKey() string {
	if r.spec.UUID != "" {
		return "uuid:" + r.spec.UUID
	}
	return r.sum.String()
}

// lockSum waits until no other resource with the content key is being adopted or
// fetched, and returns the unlock: two resources with the same content staged at
// once download once, and the second copies what the first got.
func (m *Manager) lockSum(ctx context.Context, sum string) (func(), error) {
	m.mu.Lock()
	if m.sums == nil {
		m.sums = map[string]chan struct{}{}
	}
	lock := m.sums[sum]
	if lock == nil {
		lock = make(chan struct{}, 1) // a mutex a waiter can give up on when ctx ends
		m.sums[sum] = lock
	}
	m.mu.Unlock()
	select {
	case lock <- struct{}{}:
		return func() { <-lock }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// adoptStatic is adopt under the checksum's lock, and shows an adopted resource
// ready at once: a resource with the same checksum waiting for the lock then copies
// it instead of downloading.
func (m *Manager) adoptStatic(ctx context.Context, r *static) (bool, error) {
	if r.shareable() {
		unlock, err := m.lockSum(ctx, r.shareKey())
		if err != nil {
			return false, err
		}
		defer unlock()
	}
	if !r.adopt() {
		return false, nil
	}
	r.set(status.ResourceReady, true, "")
	m.opts.Changed()
	return true, nil
}

// copyOrDownload is one round of fetching r under its checksum's lock: a copy of a
// local file with the checksum when one verifies, else the download. The staged
// file is published before the lock is released, so that a resource with the same
// checksum waiting for the lock copies it even before it is committed (a reload
// commits only after staging everything).
func (m *Manager) copyOrDownload(ctx context.Context, r *static, prefix string, download func() (string, error)) (string, error) {
	unlock, err := m.lockSum(ctx, r.shareKey())
	if err != nil {
		return "", err
	}
	defer unlock()
	release, err := m.reserve(r) // a copy takes the space a download would
	if err != nil {
		return "", err
	}
	defer release()
	path, ok := m.copyLocal(ctx, r, prefix)
	if !ok {
		if path, err = download(); err != nil {
			return "", err
		}
	}
	r.mu.Lock()
	r.staged = path
	r.mu.Unlock()
	return path, nil
}

// localFile is a file another resource has that should hold a checksum.
type localFile struct {
	from  string   // the resource it belongs to, for the log
	paths []string // tried in order until one verifies
}

// copyLocal copies the first local file with r's checksum that still verifies (it
// may have changed on disk since) into a temporary file in r.dir named after prefix,
// the way a file: URL is fetched: read once, hashed on the way, mode 0644, fsynced.
func (m *Manager) copyLocal(ctx context.Context, r *static, prefix string) (string, bool) {
	src := Source{Name: r.spec.Name, Checksum: r.sum, Root: r.dir}
	for _, lf := range m.localFiles(r) {
		for _, p := range lf.paths {
			path, err := m.fetch.attempt(ctx, src, fileURL(p), r.dir, prefix, &r.progress)
			if err == nil {
				m.opts.Log.Info().Str("resource", r.spec.Name).Str("from", lf.from).Msg("resource copied from a local file with the same checksum")
				return path, true
			}
			m.opts.Log.Debug().Str("resource", r.spec.Name).Str("from", lf.from).Str("path", p).Err(err).Msg("local copy failed")
		}
	}
	return "", false
}

// localFiles lists the files other resources of the instance have with r's
// checksum: static resources staged or in place, then the kept versions of dynamic
// resources.
func (m *Manager) localFiles(r *static) []localFile {
	m.mu.Lock()
	statics, dynamics := slices.Clone(m.static), slices.Clone(m.dynamic)
	m.mu.Unlock()
	var out []localFile
	for _, o := range statics {
		if o == r || o.spec.Extract || o.shareKey() != r.shareKey() {
			continue
		}
		o.mu.Lock()
		switch {
		case o.spec.Extract:
		case o.staged != "":
			// Committing renames the staged file to o.path before o is ready: a
			// copy that finds it gone (or swapped) finds it there.
			out = append(out, localFile{o.spec.Name, []string{o.staged, o.path}})
		case o.state == status.ResourceReady:
			out = append(out, localFile{o.spec.Name, []string{o.path}})
		}
		o.mu.Unlock()
	}
	if r.sum.Empty() {
		return out // a uuid alone: dynamic resources have none
	}
	for _, d := range dynamics {
		out = append(out, d.keptFiles(r.sum)...)
	}
	if m.opts.Stored != nil {
		if paths := m.opts.Stored(r.sum); len(paths) > 0 {
			out = append(out, localFile{"a kept revision", paths})
		}
	}
	return out
}

// keptFiles lists d's kept versions that are files with checksum sum. It reads the
// state file, not d.st: that belongs to the goroutine preparing or reloading d.
func (d *dynamic) keptFiles(sum Checksum) []localFile {
	b, err := readBeneath(d.root, filepath.Join(d.storage, stateFile))
	var st dynState
	if err != nil || json.Unmarshal(b, &st) != nil {
		return nil
	}
	var out []localFile
	for _, k := range st.Kept {
		if c, err := ParseChecksum(k.Checksum); err == nil && c == sum && !k.Extract {
			from := fmt.Sprintf("%s (revision %d)", d.name(), k.Revision)
			out = append(out, localFile{from, []string{filepath.Join(d.storage, k.Path)}})
		}
	}
	return out
}

// fileURL is the file: URL of an absolute path, escaped so that it parses back.
func fileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: path}).String()
}

// unpackStored unpacks an archive a kept revision's store holds for r (by its
// checksum, verified on the way) instead of fetching it: a rollback to a revision
// with an extracted resource fetches nothing.
func (m *Manager) unpackStored(ctx context.Context, r *static, prefix string, finish func(string) (string, error)) (string, bool) {
	if r.sum.Empty() || m.opts.Stored == nil {
		return "", false
	}
	src := Source{Name: r.spec.Name, Checksum: r.sum, Root: r.dir}
	for _, p := range m.opts.Stored(r.sum) {
		archive, err := m.fetch.attempt(ctx, src, fileURL(p), r.dir, prefix, &r.progress)
		if err == nil {
			var dir string
			if dir, err = finish(archive); err == nil {
				m.opts.Log.Info().Str("resource", r.spec.Name).Str("from", p).Msg("resource unpacked from a kept revision's store")
				return dir, true
			}
		}
		m.opts.Log.Info().Str("resource", r.spec.Name).Str("path", p).Err(err).Msg("a kept revision's copy does not verify; fetching")
	}
	return "", false
}
