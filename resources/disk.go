package resources

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/status"
)

// A static resource with a size is fetched only when the filesystem it goes to has
// that much free space beside what the downloads under way have reserved (ISS
// reserves the space before a download); otherwise it fails with reason
// InsufficientDisk and nothing is fetched (docs/reference.md "Disk space").

// InsufficientDiskError is a resource whose size does not fit the free space.
type InsufficientDiskError struct {
	Name       string
	Dir        string
	Need, Free int64
}

func (e *InsufficientDiskError) Error() string {
	return fmt.Sprintf("%s: size %sB, %sB free in %s", status.ReasonInsufficientDisk,
		status.HumanBytes(e.Need), status.HumanBytes(e.Free), e.Dir)
}

// freeSpace is what an unprivileged writer may still use on dir's filesystem (as df
// shows), and the filesystem's id.
var freeSpace = func(dir string) (free int64, fsid [2]int32, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fsid, err
	}
	return int64(st.Bavail) * st.Bsize, st.Fsid.Val, nil
}

// reserve checks r's size against the free space of its directory, less what other
// downloads have reserved there, and reserves it until release. A resource without
// a size reserves nothing.
func (m *Manager) reserve(r *static) (release func(), err error) {
	need := r.spec.Size.Get()
	if need <= 0 {
		return func() {}, nil
	}
	free, fsid, err := freeSpace(r.dir)
	if err != nil {
		return nil, fmt.Errorf("free space of %s: %w", r.dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reserved == nil {
		m.reserved = map[[2]int32]int64{}
	}
	if avail := free - m.reserved[fsid]; avail < need {
		return nil, &InsufficientDiskError{Name: r.spec.Name, Dir: r.dir, Need: need, Free: max(avail, 0)}
	}
	m.reserved[fsid] += need
	return func() {
		m.mu.Lock()
		m.reserved[fsid] -= need
		m.mu.Unlock()
	}, nil
}
