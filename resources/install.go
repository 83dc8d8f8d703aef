package resources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// Install keeps the static resources of s that have a checksum in dir, a revision's
// store beneath s.Instance.Dir, each as dir/<name> (an archive as it was fetched: it
// is unpacked when the revision is activated), while everything keeps running
// (docs/reference.md "Updates and rollback"). A file with the checksum that the
// instance already has (a resource in place, a kept revision's store, a kept version
// of a dynamic resource) is hard-linked, or copied and verified where a link is not
// possible: only the others are fetched, up to rounds rounds over their URLs. It
// returns name → checksum of what dir holds, also on an error (which names the
// resource). Resources without a checksum say nothing of their content: they are
// fetched at activation, as in a reload.
func (m *Manager) Install(ctx context.Context, s *spec.Spec, dir string, rounds int) (map[string]string, error) {
	root := s.Instance.Dir
	var mu sync.Mutex
	kept := map[string]string{}
	err := parallel(len(s.Resources), func(i int) error {
		rs := s.Resources[i]
		sum, err := ParseChecksum(rs.Checksum)
		if err != nil {
			return fmt.Errorf("resource %q: %w", rs.Name, err)
		}
		if sum.Empty() {
			return nil
		}
		dst := filepath.Join(dir, rs.Name)
		d, err := beneath.MkdirAll(root, filepath.Dir(dst), 0o700)
		if err != nil {
			return fmt.Errorf("resource %q: %w", rs.Name, err)
		}
		d.Close()
		if err := m.installOne(ctx, root, rs, sum, dst, rounds); err != nil {
			return fmt.Errorf("resource %q: %w", rs.Name, err)
		}
		mu.Lock()
		kept[rs.Name] = sum.String()
		mu.Unlock()
		return nil
	})
	return kept, err
}

// installOne puts a file with checksum sum at dst: linked from a file the instance
// has, else copied from it (verified on the way), else fetched.
func (m *Manager) installOne(ctx context.Context, root string, rs spec.Resource, sum Checksum, dst string, rounds int) error {
	if same, err := hasFile(root, dst); err == nil && same {
		return nil // kept by an earlier try of this install
	}
	have := m.filesWithSum(sum)
	for _, p := range have {
		if p == dst {
			continue
		}
		_ = beneath.RemoveAll(root, dst)
		if linkBeneath(root, p, dst) == nil {
			m.opts.Log.Info().Str("resource", rs.Name).Str("from", p).Msg("resource kept in the revision's store: linked to a file with the same checksum")
			return nil
		}
	}
	src := Source{Name: rs.Name, URLs: rs.URLs, Checksum: sum, Root: root}
	prefix := "." + filepath.Base(dst) + ".tend-part-*"
	var progress Progress
	progress.reset(-1)
	for _, p := range have {
		if tmp, err := m.fetch.attempt(ctx, src, fileURL(p), filepath.Dir(dst), prefix, &progress); err == nil {
			m.opts.Log.Info().Str("resource", rs.Name).Str("from", p).Msg("resource kept in the revision's store: copied from a file with the same checksum")
			return beneath.Rename(root, tmp, dst)
		}
	}
	m.opts.Log.Info().Str("resource", rs.Name).Strs("urls", rs.URLs).Msg("fetching resource into the revision's store")
	tmp, err := m.fetch.fetch(ctx, src, filepath.Dir(dst), prefix, &progress, rounds, nil, nil, func(err error) {
		m.opts.Log.Warn().Str("resource", rs.Name).Err(err).Msg("fetching resource into the revision's store failed")
	})
	if err != nil {
		return err
	}
	return beneath.Rename(root, tmp, dst)
}

// filesWithSum lists the files the instance has that should hold sum: static
// resources in place, the stores of kept revisions, kept versions of dynamic
// resources. Whoever copies one verifies it; a link is verified at activation.
func (m *Manager) filesWithSum(sum Checksum) []string {
	m.mu.Lock()
	statics, dynamics := append([]*static(nil), m.static...), append([]*dynamic(nil), m.dynamic...)
	m.mu.Unlock()
	var out []string
	for _, o := range statics {
		o.mu.Lock()
		if !o.spec.Extract && o.sum == sum && o.state == status.ResourceReady {
			out = append(out, o.path)
		}
		o.mu.Unlock()
	}
	if m.opts.Stored != nil {
		out = append(out, m.opts.Stored(sum)...)
	}
	for _, d := range dynamics {
		for _, lf := range d.keptFiles(sum) {
			out = append(out, lf.paths...)
		}
	}
	return out
}

// hasFile reports whether path beneath root is a regular file.
func hasFile(root, path string) (bool, error) {
	f, err := beneath.OpenFile(root, path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular(), err
}

// linkBeneath hard-links the regular file src to dst, both resolved beneath root.
func linkBeneath(root, src, dst string) error {
	if ok, err := hasFile(root, src); !ok {
		if err == nil {
			err = fmt.Errorf("%s: not a regular file", src)
		}
		return err
	}
	return beneath.Link(root, src, dst)
}
