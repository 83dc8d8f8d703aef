// Package beneath opens, creates, renames and removes files beneath a root
// directory (a spec's instance.dir) so that a symlink planted there by someone else
// cannot lead tend, running as root, to write or read outside it.
//
// Every function takes the root and an absolute path (or one relative to root).
// A path that is root or lexically beneath it is resolved beneath root: from a
// descriptor of root with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS), one
// system call, or where openat2 is missing (ENOSYS) a walk of one component at a
// time opened O_NOFOLLOW. A symlink that stays beneath root is followed (an
// absolute target beneath root included); one that leads out is an error naming
// the path (errors.Is ErrOutside), and nothing is opened, unless the symlink and
// every directory above it, up to /, are owned by root and writable by nobody else
// (a link shipped in an image, secrets -> /run/secrets): then what it points to is
// used as written. Paths not beneath root are used as written.
//
// The last component is treated like open(2) does: followed unless the flags hold
// O_NOFOLLOW. To create a file nobody can have prepared, pass
// O_CREAT|O_EXCL|O_NOFOLLOW; to replace one atomically, create a temporary file in
// the directory MkdirAll returns and renameat it within that descriptor.
package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrOutside is the cause of an error about a path that a symlink leads out of root.
var ErrOutside = errors.New("a symlink leads out of the instance directory")

// maxLinks bounds the symlinks followed in one resolution, as the kernel does.
const maxLinks = 40

// noOpenat2 is set once openat2 said ENOSYS (or by tests, to force the walk).
var noOpenat2 atomic.Bool

// Rel is path relative to root when path is root or lexically beneath it, and
// whether it is. A relative path is taken relative to root.
func Rel(root, path string) (string, bool) {
	if root == "" {
		return "", false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// OpenFile is os.OpenFile of path, resolved beneath root when it is beneath it.
func OpenFile(root, path string, flag int, perm os.FileMode) (*os.File, error) {
	rel, ok := Rel(root, path)
	if !ok {
		return os.OpenFile(path, flag, perm)
	}
	full := filepath.Join(root, rel)
	r, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(r.fd)
	fd, outside, err := r.open(rel, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
	switch {
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	case outside != "":
		return os.OpenFile(outside, flag, perm)
	}
	return os.NewFile(uintptr(fd), full), nil
}

// MkdirAll makes path and its missing parents beneath root (mode perm) and returns
// it opened as a directory: its descriptor is where to create, rename and remove
// names of one component (openat, renameat, unlinkat never leave it).
func MkdirAll(root, path string, perm os.FileMode) (*os.File, error) {
	rel, ok := Rel(root, path)
	if !ok {
		if err := os.MkdirAll(path, perm); err != nil {
			return nil, err
		}
		return os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	}
	full := filepath.Join(root, rel)
	r, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(r.fd)
	fd, outside, err := r.mkdirAll(rel, uint32(perm.Perm()))
	switch {
	case err != nil:
		return nil, &fs.PathError{Op: "mkdir", Path: full, Err: err}
	case outside != "":
		return MkdirAll("", outside, perm)
	}
	return os.NewFile(uintptr(fd), full), nil
}

// OpenDir opens the directory path (which must exist) like MkdirAll.
func OpenDir(root, path string) (*os.File, error) {
	return OpenFile(root, path, os.O_RDONLY|unix.O_DIRECTORY, 0)
}

// OpenParent opens the directory that holds path (resolved beneath root) and
// returns it with path's last component, for the *at system calls.
func OpenParent(root, path string) (*os.File, string, error) {
	if !filepath.IsAbs(path) && root != "" {
		path = filepath.Join(root, path)
	}
	path = filepath.Clean(path)
	d, err := OpenDir(root, filepath.Dir(path))
	if err != nil {
		return nil, "", err
	}
	return d, filepath.Base(path), nil
}

// RemoveAll removes path and everything in it, like os.RemoveAll: a symlink at path
// or anywhere below it is removed, never followed. A missing path is no error. root
// itself is never removed.
func RemoveAll(root, path string) error {
	if rel, ok := Rel(root, path); ok && rel == "." {
		return &fs.PathError{Op: "remove", Path: path, Err: errors.New("refusing to remove the instance directory")}
	}
	d, name, err := OpenParent(root, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if err := removeAt(int(d.Fd()), name); err != nil {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// Rename renames oldpath to newpath, both resolved beneath root; a symlink at
// either last component is renamed or replaced, not followed.
func Rename(root, oldpath, newpath string) error {
	return atParents(root, oldpath, newpath, "rename", func(od int, oname string, nd int, nname string) error {
		return unix.Renameat(od, oname, nd, nname)
	})
}

// Link hard-links oldpath to newpath, both resolved beneath root; a symlink at
// oldpath's last component is linked itself, not followed (linkat without
// AT_SYMLINK_FOLLOW).
func Link(root, oldpath, newpath string) error {
	return atParents(root, oldpath, newpath, "link", func(od int, oname string, nd int, nname string) error {
		return unix.Linkat(od, oname, nd, nname, 0)
	})
}

// atParents opens the parents of oldpath and newpath beneath root and calls f with
// each parent's descriptor and last component; f's error is op's *os.LinkError.
func atParents(root, oldpath, newpath, op string, f func(od int, oname string, nd int, nname string) error) error {
	od, oname, err := OpenParent(root, oldpath)
	if err != nil {
		return err
	}
	defer od.Close()
	nd, nname, err := OpenParent(root, newpath)
	if err != nil {
		return err
	}
	defer nd.Close()
	if err := f(int(od.Fd()), oname, int(nd.Fd()), nname); err != nil {
		return &os.LinkError{Op: op, Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// removeAt removes name in the directory dfd and, for a directory, everything in it.
func removeAt(dfd int, name string) error {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	for {
		names, rerr := d.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n); err != nil {
				d.Close()
				return err
			}
		}
		if rerr != nil || len(names) == 0 {
			break
		}
		// Entries were removed while reading: start again from the top.
		if _, err := d.Seek(0, 0); err != nil {
			break
		}
	}
	d.Close()
	err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// resolver resolves relative paths beneath root, whose descriptor fd is.
type resolver struct {
	root string
	fd   int
}

func openRoot(root string) (*resolver, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	return &resolver{root: filepath.Clean(root), fd: fd}, nil
}

// open opens rel beneath the root: a descriptor, or, after a root-owned symlink
// leading out, the path outside to open as written.
func (r *resolver) open(rel string, flags int, mode uint32) (int, string, error) {
	if flags&(unix.O_CREAT|unix.O_TMPFILE) == 0 {
		mode = 0
	}
	if !noOpenat2.Load() {
		for range 3 {
			fd, err := unix.Openat2(r.fd, rel, &unix.OpenHow{
				Flags:   uint64(flags),
				Mode:    uint64(mode),
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
			})
			switch {
			case err == nil:
				return fd, "", nil
			case errors.Is(err, unix.EAGAIN): // a rename raced with ".."; try again
				continue
			case errors.Is(err, unix.ENOSYS):
				noOpenat2.Store(true)
			case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
				// Out of root, an absolute or magic link: the walk tells an absolute
				// target beneath root and a root-owned link from an escape.
			default:
				return -1, "", err
			}
			break
		}
	}
	return r.walk(rel, flags, mode)
}

// mkdirAll makes rel and its missing parents and opens it as a directory.
func (r *resolver) mkdirAll(rel string, mode uint32) (int, string, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
	fd, outside, err := r.open(rel, flags, 0)
	if !errors.Is(err, unix.ENOENT) || rel == "." {
		return fd, outside, err
	}
	pfd, poutside, err := r.mkdirAll(filepath.Dir(rel), mode)
	if err != nil {
		return -1, "", err
	}
	if poutside != "" {
		return -1, filepath.Join(poutside, filepath.Base(rel)), nil
	}
	err = unix.Mkdirat(pfd, filepath.Base(rel), mode)
	unix.Close(pfd)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, "", err
	}
	return r.open(rel, flags, 0)
}

// walk resolves rel one component at a time, never letting the kernel follow a
// symlink: each is read and judged here.
func (r *resolver) walk(rel string, flags int, mode uint32) (fd int, outside string, err error) {
	root, err := unix.Dup(r.fd)
	if err != nil {
		return -1, "", err
	}
	stack := []int{root}      // directories from root down to the current one
	names := []string{r.root} // and their names, for paths outside and errors
	defer func() {
		for _, d := range stack {
			unix.Close(d)
		}
	}()
	comps := split(rel)
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		last := len(comps) == 0
		cur := stack[len(stack)-1]
		switch c {
		case ".":
			if last {
				fd, err := unix.Openat(cur, ".", flags&^(unix.O_CREAT|unix.O_EXCL), 0)
				return fd, "", err
			}
			continue
		case "..":
			if len(stack) == 1 {
				return -1, "", ErrOutside
			}
			unix.Close(cur)
			stack, names = stack[:len(stack)-1], names[:len(names)-1]
			if last {
				fd, err := unix.Openat(stack[len(stack)-1], ".", flags&^(unix.O_CREAT|unix.O_EXCL), 0)
				return fd, "", err
			}
			continue
		}
		var err error
		if last {
			var fd int
			fd, err = unix.Openat(cur, c, flags|unix.O_NOFOLLOW, mode)
			if err == nil || flags&unix.O_NOFOLLOW != 0 {
				return fd, "", err
			}
		} else {
			var fd int
			fd, err = unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				stack, names = append(stack, fd), append(names, c)
				continue
			}
		}
		if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
			return -1, "", err
		}
		target, lerr := readlinkat(cur, c)
		if lerr != nil { // not a symlink: the open's own error
			return -1, "", err
		}
		if links++; links > maxLinks {
			return -1, "", unix.ELOOP
		}
		here := filepath.Join(append(slicesClone(names), c)...)
		if filepath.IsAbs(target) {
			if trel, ok := r.beneath(target); ok {
				for _, d := range stack[1:] {
					unix.Close(d)
				}
				stack, names = stack[:1], names[:1]
				comps = append(split(trel), comps...)
				continue
			}
			if r.trusted(stack, cur, c) {
				return -1, filepath.Join(append([]string{target}, comps...)...), nil
			}
			return -1, "", &outsideError{link: here}
		}
		if climbsOut(len(stack)-1, target) {
			if r.trusted(stack, cur, c) {
				dir := filepath.Join(names...)
				return -1, filepath.Join(append([]string{dir, target}, comps...)...), nil
			}
			return -1, "", &outsideError{link: here}
		}
		comps = append(split(target), comps...)
	}
	// rel was "." or empty
	fd, err = unix.Openat(stack[len(stack)-1], ".", flags&^(unix.O_CREAT|unix.O_EXCL), 0)
	return fd, "", err
}

// beneath is the absolute path p relative to root, if p is beneath root by the name
// the spec gave or by root's real path.
func (r *resolver) beneath(p string) (string, bool) {
	if rel, ok := Rel(r.root, p); ok {
		return rel, true
	}
	if real, err := filepath.EvalSymlinks(r.root); err == nil && real != r.root {
		return Rel(real, p)
	}
	return "", false
}

// trusted reports whether the symlink name in cur may lead out of root: it, every
// directory from root down to cur and every directory above root are owned by root
// and writable by nobody else, so nobody but root can have put it there.
func (r *resolver) trusted(stack []int, cur int, name string) bool {
	var st unix.Stat_t
	if unix.Fstatat(cur, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Uid != 0 {
		return false
	}
	for _, d := range stack {
		if unix.Fstat(d, &st) != nil || !rootOnly(&st) {
			return false
		}
	}
	real, err := filepath.EvalSymlinks(r.root)
	if err != nil {
		return false
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		if unix.Lstat(p, &st) != nil || !rootOnly(&st) {
			return false
		}
		if p == "/" {
			return true
		}
	}
}

// rootOnly: owned by root, writable by neither group nor others.
func rootOnly(st *unix.Stat_t) bool { return st.Uid == 0 && st.Mode&0o022 == 0 }

// climbsOut reports whether the relative link target, read in a directory depth
// levels below root, names a place above root.
func climbsOut(depth int, target string) bool {
	for _, c := range split(target) {
		switch c {
		case ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// outsideError names the symlink that leads out of root.
type outsideError struct{ link string }

func (e *outsideError) Error() string {
	return e.link + " is a symlink leading out of the instance directory"
}
func (e *outsideError) Unwrap() error { return ErrOutside }

func split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func readlinkat(dfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
