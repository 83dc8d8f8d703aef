package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// errRemoved is what Usage answers once Remove has run: the group's files are closed.
var errRemoved = errors.New("removed")

// errGone is a read of a file in a group directory that does not exist (any more).
var errGone = errors.New("is gone")

// fileKey names a file the group keeps open.
type fileKey struct{ dir, name string }

// missing is the descriptor recorded for a file that does not exist (a controller
// not enabled): it reads as nothing, every time, without another lookup.
const missing = -1

// readBufs are read buffers shared by every group: the sampler reads one group at a
// time, so a buffer each would only add to tend's memory.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// read reads dir/name into *buf through a descriptor kept open from the first read
// (closed by Remove or SetLimits): a pread at offset 0 on an open cgroup or /proc file
// costs about a tenth of the open, a kernfs lookup, that os.ReadFile makes each time.
// A file that does not exist reads as nil, nil; one in a directory that does not
// exist is an error wrapping errGone. After Remove nothing is kept open. The caller
// holds g.mu.
func (g *Group) read(dir, name string, buf *[]byte) ([]byte, error) {
	if g.removed {
		return readOnce(dir, name, buf)
	}
	k := fileKey{dir, name}
	fd, ok := g.files[k]
	if !ok {
		var err error
		if fd, err = openKept(dir, name); err != nil {
			return nil, err
		}
		if g.files == nil {
			g.files = map[fileKey]int{}
		}
		g.files[k] = fd
	}
	if fd == missing {
		return nil, nil
	}
	return preadAll(fd, buf, dir, name)
}

// readOnce is read with a descriptor of its own, closed at once: for a v1
// cgroup.procs, which a kept descriptor would read stale (the kernel reuses the pid
// list it made for the descriptor for a second after each read, so a process started
// meanwhile would be missing, and Kill would not see it).
func readOnce(dir, name string, buf *[]byte) ([]byte, error) {
	fd, err := openKept(dir, name)
	if err != nil || fd == missing {
		return nil, err
	}
	defer unix.Close(fd)
	return preadAll(fd, buf, dir, name)
}

// openKept opens dir/name for read; missing if the file does not exist in a directory
// that does.
func openKept(dir, name string) (int, error) {
	fd, err := unix.Open(filepath.Join(dir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		if exists(dir) {
			return missing, nil
		}
		return 0, fmt.Errorf("cgroup %s %w", dir, errGone)
	}
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", filepath.Join(dir, name), err)
	}
	return fd, nil
}

// preadAll reads the whole file at fd from offset 0 into *buf, growing it until the
// file fits (a read that fills the buffer may have more to come).
func preadAll(fd int, buf *[]byte, dir, name string) ([]byte, error) {
	for {
		n, err := unix.Pread(fd, *buf, 0)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, name), err)
		}
		if n < len(*buf) {
			return (*buf)[:n], nil
		}
		*buf = make([]byte, 2*len(*buf))
	}
}

// closeFiles closes every file the group keeps open. The caller holds g.mu.
func (g *Group) closeFiles() {
	for k, fd := range g.files {
		if fd != missing {
			unix.Close(fd)
		}
		delete(g.files, k)
	}
}

// readInt reads a file holding one integer; a missing file (a controller not enabled)
// is 0. The caller holds g.mu.
func (g *Group) readInt(dir, name string, buf *[]byte) (int64, error) {
	data, err := g.read(dir, name, buf)
	if err != nil || data == nil {
		return 0, err
	}
	n, err := atoi(bytes.TrimSpace(data))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
	}
	return n, nil
}

// readKey reads the integer after key in a flat-keyed file ("key value" lines); a
// missing file or key is 0. The caller holds g.mu.
func (g *Group) readKey(dir, name, key string, buf *[]byte) (int64, error) {
	data, err := g.read(dir, name, buf)
	if err != nil {
		return 0, err
	}
	v, ok := valueOf(data, key)
	if !ok {
		return 0, nil
	}
	n, err := atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", filepath.Join(dir, name), key, err)
	}
	return n, nil
}

// nextLine splits the first line off data, without its newline.
func nextLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], data[i+1:]
	}
	return data, nil
}

// valueOf is the value after key in a flat-keyed text, without allocating.
func valueOf(data []byte, key string) ([]byte, bool) {
	for len(data) > 0 {
		var line []byte
		line, data = nextLine(data)
		if k, v, ok := bytes.Cut(line, []byte{' '}); ok && string(k) == key {
			return bytes.TrimSpace(v), true
		}
	}
	return nil, false
}

// atoi parses a decimal integer from bytes. The conversion to string does not
// allocate: ParseInt keeps no reference to it (its errors copy it).
func atoi(b []byte) (int64, error) {
	return strconv.ParseInt(string(b), 10, 64)
}
