package resources

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/spec"
)

// A static resource the spec no longer names is taken out of instance.dir at the
// next prepare (start-up, or a reload's re-prepare): deleted, or moved to the cache
// when its marker says cached: true; a later spec that names the same content again
// takes it from there without a fetch (docs/reference.md "Removed resources and the
// cache"). Every path here goes through internal/beneath.

// useCache makes the cache the one of s's instance.dir and cache_max_bytes.
func (m *Manager) useCache(s *spec.Spec) *Cache {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.cache; c == nil || c.root != s.Instance.Dir || c.maxBytes != s.Instance.CacheMaxBytes.Get() {
		m.cache = OpenCache(s.Instance.Dir, s.Instance.CacheMaxBytes.Get(), m.opts.Log)
	}
	return m.cache
}

func (m *Manager) currentCache() *Cache {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cache
}

// retireUnnamed retires every resource a marker in s's instance.dir records that
// s does not name (a resource dropped while tend was not running, or by a spec it
// started with), then evicts beyond cache_max_bytes.
func (m *Manager) retireUnnamed(s *spec.Spec, cache *Cache) {
	root := s.Instance.Dir
	d, err := beneath.OpenDir(root, root)
	if err != nil {
		return
	}
	files, _ := d.Readdirnames(-1)
	d.Close()
	for _, f := range files {
		name, ok := nameOfMarker(f)
		if !ok || slices.ContainsFunc(s.Resources, func(r spec.Resource) bool { return r.Name == name }) {
			continue
		}
		mk, err := readMarker(root, name)
		if err != nil {
			m.opts.Log.Warn().Str("resource", name).Err(err).Msg("unreadable resource marker left alone")
			continue
		}
		m.retire(cache, root, name, mk)
	}
	cache.Evict()
}

func readMarker(root, name string) (marker, error) {
	f, err := beneath.OpenFile(root, filepath.Join(root, markerName(name)), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return marker{}, err
	}
	defer f.Close()
	var mk marker
	err = json.NewDecoder(f).Decode(&mk)
	return mk, err
}

// retire takes the resource name out of instance.dir root: into the cache when its
// marker says cached and the content still holds what was put there, else deleted;
// then its marker. Something of another kind than the marker says (a directory
// where a file was put) is not tend's: it is left alone.
func (m *Manager) retire(cache *Cache, root, name string, mk marker) {
	path := filepath.Join(root, name)
	log := m.opts.Log.With().Str("resource", name).Logger()
	defer func() { _ = beneath.RemoveAll(root, filepath.Join(root, markerName(name))) }()
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return // gone already
	case mk.Extract && !fi.IsDir(), !mk.Extract && !fi.Mode().IsRegular():
		log.Warn().Str("path", path).Msg("a resource no longer in the spec: what is there now is not what tend put there; left alone")
		return
	}
	if mk.Cached {
		digest, err := retiredDigest(path, mk)
		if err == nil {
			if err = cache.Put(path, mk.key(), name, digest, contentSize(path)); err == nil {
				return
			}
		}
		log.Warn().Err(err).Msg("a cached resource no longer in the spec cannot be kept: removing it")
	}
	if err := beneath.RemoveAll(root, path); err != nil {
		log.Warn().Err(err).Msg("cannot remove a resource no longer in the spec")
		return
	}
	log.Info().Str("path", path).Msg("removed a resource no longer in the spec")
}

// retiredDigest checks that the content at path is what its marker says tend put
// there and returns its digest for the cache.
func retiredDigest(path string, mk marker) (string, error) {
	if mk.Extract {
		tree, err := treeDigest(path)
		if err == nil && tree != mk.Tree {
			err = fmt.Errorf("contents changed on disk")
		}
		return tree, err
	}
	digest, err := FileDigest(path)
	if err != nil {
		return "", err
	}
	if mk.Digest != "" {
		if digest != mk.Digest {
			return "", fmt.Errorf("contents changed on disk")
		}
		return digest, nil
	}
	sum, err := ParseChecksum(mk.Checksum)
	if err == nil && sum.Empty() {
		err = fmt.Errorf("no digest was recorded for it")
	}
	if err == nil {
		err = VerifyFile(path, sum)
	}
	return digest, err
}

// retireReplaced moves what is at r's target to the cache before a staged file
// replaces it, when its marker says cached: true and it is other content than r
// (a re-fetch of the same content replaces it as usual).
func (m *Manager) retireReplaced(r *static) {
	mk, err := readMarker(r.dir, r.spec.Name)
	if err != nil || !mk.Cached || mk.key().matches(r.key()) {
		return
	}
	if cache := m.currentCache(); cache != nil {
		m.retire(cache, r.dir, r.spec.Name, mk)
	}
}

// retireRemoved retires the resources of old that list no longer names (a reload).
func (m *Manager) retireRemoved(old, list []*static) {
	cache := m.currentCache()
	if cache == nil {
		return
	}
	for _, o := range old {
		if slices.ContainsFunc(list, func(n *static) bool { return n.spec.Name == o.spec.Name && n.dir == o.dir }) {
			continue
		}
		mk, err := readMarker(o.dir, o.spec.Name)
		if err != nil {
			continue // never put in place
		}
		m.retire(cache, o.dir, o.spec.Name, mk)
	}
	cache.Evict()
}

// takeCached stages r from the cache: the content moves to a stage name beside
// r's target, which commit puts in place. It reports whether the cache had it.
func (m *Manager) takeCached(r *static) (string, bool) {
	cache := m.currentCache()
	if cache == nil {
		return "", false
	}
	staged := filepath.Join(r.dir, fmt.Sprintf(".%s.tend-stage-%d", r.spec.Name, rand.Uint64()))
	digest, ok, err := cache.Take(r.key(), staged)
	if err != nil {
		m.opts.Log.Warn().Str("resource", r.spec.Name).Err(err).Msg("cannot take the resource from the cache")
	}
	if !ok {
		return "", false
	}
	if r.spec.Extract {
		r.tree = digest
	} else {
		r.digest = digest
	}
	r.fromCache = digest
	size := contentSize(staged)
	r.progress.done.Store(size)
	r.progress.total.Store(size)
	r.mu.Lock()
	r.staged = staged
	r.mu.Unlock()
	m.opts.Log.Info().Str("resource", r.spec.Name).Msg("resource taken from the cache")
	return staged, true
}

// putBack returns a staged entry taken from the cache (an abandoned reload).
func (m *Manager) putBack(r *static, staged string) bool {
	cache := m.currentCache()
	if r.fromCache == "" || cache == nil {
		return false
	}
	digest := r.fromCache
	r.fromCache = ""
	return cache.Put(staged, r.key(), r.spec.Name, digest, contentSize(staged)) == nil
}

// withSpace runs a download of r once its size is reserved (disk.go).
func (m *Manager) withSpace(r *static, download func() (string, error)) (string, error) {
	release, err := m.reserve(r)
	if err != nil {
		return "", err
	}
	defer release()
	return download()
}
