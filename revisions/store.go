package revisions

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
)

// Names under instance.dir.
const (
	StateDir     = ".tend"                // tend's own state
	revisionsDir = ".tend/revisions"      // one store per revision, named by its id
	stateFile    = ".tend/revisions.json" // State, written atomically
	keyFile      = ".tend/revision.key"   // the key of the revision ids' keyed digest
	specName     = "spec"                 // a revision's spec, as it was read
	resourceDir  = "resources"            // a revision's static resources, linked
	manifestName = "resources.json"       // name → checksum of what resourceDir holds
	maxStateFile = 4 << 20                // a state file beyond this is not read
)

// Store is the revisions' place on disk, <instance.dir>/.tend/ (docs/reference.md
// "Updates and rollback"). Every path is resolved beneath instance.dir: a container
// user may own it. A store that cannot be made (a read-only instance.dir) is
// Disabled: only the active revision is kept, in memory.
type Store struct {
	dir      string // instance.dir
	Disabled error  // why nothing is kept on disk; nil when the store works

	mu     sync.Mutex
	sums   map[string]map[string]string // revision → resource name → checksum
	keyVal []byte
}

// Open opens (making it if needed) the store of instance.dir.
func Open(instanceDir string) *Store {
	st := &Store{dir: instanceDir, sums: map[string]map[string]string{}}
	d, err := beneath.MkdirAll(instanceDir, st.path(revisionsDir), 0o700)
	if err != nil {
		st.Disabled = err
		return st
	}
	d.Close()
	probe := st.path(StateDir, ".write-test")
	f, err := beneath.OpenFile(instanceDir, probe, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		st.Disabled = err
		return st
	}
	f.Close()
	beneath.RemoveAll(instanceDir, probe)
	return st
}

func (st *Store) path(parts ...string) string {
	return filepath.Join(append([]string{st.dir}, parts...)...)
}

// Dir is the store of revision id ({REVISION_DIR}).
func (st *Store) Dir(id string) string { return st.path(revisionsDir, id) }

// Key is the random key of the keyed digest in revision ids, made on first use; a
// disabled store has none (nil: a fixed key).
func (st *Store) Key() []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.Disabled != nil {
		return nil
	}
	if st.keyVal != nil {
		return st.keyVal
	}
	p := st.path(keyFile)
	if b, err := readSmall(st.dir, p, 1024); err == nil && len(b) >= 32 {
		st.keyVal = b
		return b
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := writeAtomic(st.dir, p, key, 0o600); err != nil {
		return nil
	}
	st.keyVal = key
	return key
}

// MakeDir makes revision id's store, if it is not there yet.
func (st *Store) MakeDir(id string) error {
	if st.Disabled != nil {
		return st.Disabled
	}
	d, err := beneath.MkdirAll(st.dir, st.Dir(id), 0o700)
	if err != nil {
		return fmt.Errorf("revision %s: %w", id, err)
	}
	return d.Close()
}

// Chown gives revision id's store (the directory, not what is in it) to uid:gid: an
// init container with at: install that runs as that user writes there. The
// directories above it become searchable (not listable) by everyone to reach it.
func (st *Store) Chown(id string, uid, gid int) error {
	for _, dir := range []string{st.path(StateDir), st.path(revisionsDir)} {
		d, err := beneath.OpenDir(st.dir, dir)
		if err != nil {
			return err
		}
		fi, err := d.Stat()
		if err == nil && fi.Mode().Perm()&0o011 != 0o011 {
			err = d.Chmod(fi.Mode().Perm() | 0o011)
		}
		d.Close()
		if err != nil {
			return err
		}
	}
	d, err := beneath.OpenDir(st.dir, st.Dir(id))
	if err != nil {
		return fmt.Errorf("revision %s: %w", id, err)
	}
	defer d.Close()
	if err := d.Chown(uid, gid); err != nil {
		return fmt.Errorf("revision %s: %w", id, err)
	}
	return nil
}

// SaveSpec keeps the spec a revision was made from.
func (st *Store) SaveSpec(id string, data []byte) error {
	if st.Disabled != nil {
		return nil
	}
	d, err := beneath.MkdirAll(st.dir, st.Dir(id), 0o700)
	if err != nil {
		return fmt.Errorf("revision %s: %w", id, err)
	}
	d.Close()
	return writeAtomic(st.dir, filepath.Join(st.Dir(id), specName), data, 0o600)
}

// Spec reads the spec a revision was made from.
func (st *Store) Spec(id string) ([]byte, error) {
	return readSmall(st.dir, filepath.Join(st.Dir(id), specName), 1<<20)
}

// Link keeps the static resource file at src (in place, a regular file with
// checksum sum) in the store of revision id, as a hard link (a copy where a link is
// not possible): a rollback to the revision then finds it by checksum.
func (st *Store) Link(id, name, src, sum string) error {
	if st.Disabled != nil {
		return nil
	}
	dst := filepath.Join(st.Dir(id), resourceDir, name)
	d, err := beneath.MkdirAll(st.dir, filepath.Dir(dst), 0o700)
	if err != nil {
		return err
	}
	d.Close()
	beneath.RemoveAll(st.dir, dst)
	if err := beneath.Link(st.dir, src, dst); err != nil {
		if err := copyFile(st.dir, src, dst); err != nil {
			return fmt.Errorf("keep resource %q in revision %s: %w", name, id, err)
		}
	}
	st.mu.Lock()
	m := st.sums[id]
	if m == nil {
		m = map[string]string{}
		st.sums[id] = m
	}
	m[name] = sum
	b, _ := json.Marshal(m)
	st.mu.Unlock()
	return writeAtomic(st.dir, filepath.Join(st.Dir(id), manifestName), b, 0o600)
}

// ResourcesDir is where revision id's store keeps its static resources, by name.
func (st *Store) ResourcesDir(id string) string { return filepath.Join(st.Dir(id), resourceDir) }

// Record notes what revision id's store holds (name → checksum), as Install put it
// there, in memory and in its manifest.
func (st *Store) Record(id string, sums map[string]string) error {
	if st.Disabled != nil || len(sums) == 0 {
		return nil
	}
	st.mu.Lock()
	m := st.sums[id]
	if m == nil {
		m = map[string]string{}
		st.sums[id] = m
	}
	for name, sum := range sums {
		m[name] = sum
	}
	b, _ := json.Marshal(m)
	st.mu.Unlock()
	return writeAtomic(st.dir, filepath.Join(st.Dir(id), manifestName), b, 0o600)
}

// Stored lists the files of the kept revisions that should hold checksum sum, for
// the resources to copy instead of fetching. A file that no longer matches is not
// used: whoever copies it verifies it.
func (st *Store) Stored(sum string) []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []string
	for id, m := range st.sums {
		for name, s := range m {
			if s == sum {
				out = append(out, filepath.Join(st.Dir(id), resourceDir, name))
			}
		}
	}
	return out
}

// Known registers a kept revision's resources (read from its manifest) after a
// restart of tend.
func (st *Store) Known(id string) {
	b, err := readSmall(st.dir, filepath.Join(st.Dir(id), manifestName), 1<<20)
	if err != nil {
		return
	}
	var m map[string]string
	if json.Unmarshal(b, &m) == nil {
		st.mu.Lock()
		st.sums[id] = m
		st.mu.Unlock()
	}
}

// IDs lists the revisions that have a store on disk.
func (st *Store) IDs() []string {
	if st.Disabled != nil {
		return nil
	}
	d, err := beneath.OpenDir(st.dir, st.path(revisionsDir))
	if err != nil {
		return nil
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// Remove removes revision id's store.
func (st *Store) Remove(id string) error {
	st.mu.Lock()
	delete(st.sums, id)
	st.mu.Unlock()
	if st.Disabled != nil {
		return nil
	}
	return beneath.RemoveAll(st.dir, st.Dir(id))
}

// DiskBytes is the size of revision id's store (hard links count whole).
func (st *Store) DiskBytes(id string) int64 {
	var n int64
	filepath.WalkDir(st.Dir(id), func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// State is what survives a restart of tend (docs/reference.md "Updates and rollback").
type State struct {
	// SpecFileDigest is the digest of what tend last read from the spec file.
	SpecFileDigest string `json:"spec_file_digest"`
	// SpecFileRevision is the revision id that file gave.
	SpecFileRevision string      `json:"spec_file_revision"`
	Active           string      `json:"active"`
	Revisions        []*Revision `json:"revisions"`
}

// Save writes the state atomically: a crash leaves the old state or the new one.
func (st *Store) Save(s State) error {
	if st.Disabled != nil {
		return nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(st.dir, st.path(stateFile), b, 0o600)
}

// Load reads the state; a missing one is the zero State.
func (st *Store) Load() (State, error) {
	var s State
	if st.Disabled != nil {
		return s, nil
	}
	b, err := readSmall(st.dir, st.path(stateFile), maxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", st.path(stateFile), err)
	}
	return s, nil
}

// writeAtomic writes data to path beneath root through a new temporary file renamed
// over it.
func writeAtomic(root, path string, data []byte, mode os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	beneath.RemoveAll(root, tmp)
	f, err := beneath.OpenFile(root, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = beneath.Rename(root, tmp, path)
	}
	if err != nil {
		beneath.RemoveAll(root, tmp)
	}
	return err
}

// readSmall reads the regular file path beneath root, at most limit bytes.
func readSmall(root, path string, limit int64) ([]byte, error) {
	f, err := beneath.OpenFile(root, path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// copyFile copies the regular file src to dst, both resolved beneath root.
func copyFile(root, src, dst string) error {
	in, err := beneath.OpenFile(root, src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := beneath.OpenFile(root, dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
