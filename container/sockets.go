package container

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/spec"
)

// Sockets are the listening sockets of a container (docs/reference.md "Restarts without downtime", systemd's socket
// activation, sd_listen_fds(3)). They are bound at the container's first start and
// held across all its processes, so that connections made while no process runs
// wait in the backlog; a reload that keeps the sockets of a changed container hands
// the same Sockets to its replacement. The container's loop binds them; whoever
// built them (the supervisor) closes them once no container uses them any more.
type Sockets struct {
	list []boundSocket

	mu    sync.Mutex
	files []*os.File // bound, in list order; nil until bound
}

type boundSocket struct {
	network, addr, name string
	root                string // instance.dir: a unix socket's directory is resolved beneath it
}

// NewSockets returns the sockets of sc, addresses resolved by s; nil when it has none.
func NewSockets(s *spec.Spec, sc *spec.Container) *Sockets {
	if len(sc.Sockets) == 0 {
		return nil
	}
	ss := &Sockets{}
	for _, sock := range sc.Sockets {
		network, addr := s.SocketAddr(sock)
		ss.list = append(ss.list, boundSocket{network: network, addr: addr, name: sock.Name, root: s.Instance.Dir})
	}
	return ss
}

// Same reports whether other would bind exactly these sockets, under the same names.
func (ss *Sockets) Same(other *Sockets) bool {
	if ss == nil || other == nil {
		return ss == nil && other == nil
	}
	if len(ss.list) != len(other.list) {
		return false
	}
	for i := range ss.list {
		if ss.list[i] != other.list[i] {
			return false
		}
	}
	return true
}

// Files binds the sockets if they are not bound yet and returns them in order, to be
// the fds 3, 4, ... of a process. All are bound or none: a failure closes what this
// call bound, and the next start tries again.
func (ss *Sockets) Files() ([]*os.File, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.files != nil {
		return ss.files, nil
	}
	var files []*os.File
	for _, b := range ss.list {
		f, err := b.bind()
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("socket %s: %w", b.addr, err)
		}
		files = append(files, f)
	}
	ss.files = files
	return files, nil
}

// Env is the socket activation environment of a process given the sockets:
// LISTEN_FDS, LISTEN_FDNAMES, and an empty LISTEN_PID that the exec shim fills with
// the process's own pid (proc.Cmd.Env). Entries of env that these replace are dropped.
func (ss *Sockets) Env(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LISTEN_FDS=") && !strings.HasPrefix(kv, "LISTEN_PID=") && !strings.HasPrefix(kv, "LISTEN_FDNAMES=") {
			out = append(out, kv)
		}
	}
	names := make([]string, len(ss.list))
	for i, b := range ss.list {
		names[i] = b.name
	}
	return append(out, "LISTEN_FDS="+strconv.Itoa(len(ss.list)), "LISTEN_FDNAMES="+strings.Join(names, ":"), "LISTEN_PID=")
}

// Close closes the sockets (a unix socket's file is left: the next bind removes it).
func (ss *Sockets) Close() {
	if ss == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, f := range ss.files {
		f.Close()
	}
	ss.files = nil
}

// bind creates the listening socket: blocking (the process decides, as with
// systemd's sockets) and close-on-exec, so that no process but the ones it is passed
// to (by dup2 onto fd 3 and up) ever holds it.
func (b boundSocket) bind() (*os.File, error) {
	var sa unix.Sockaddr
	domain := unix.AF_UNIX
	var dir *os.File // a unix socket's directory, opened beneath instance.dir
	if b.network == "unix" {
		d, name, err := beneath.OpenParent(b.root, b.addr)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		if err := removeStaleSocket(d, name, b.addr); err != nil {
			return nil, err
		}
		dir = d
		sa = &unix.SockaddrUnix{Name: b.addr}
	} else {
		ap, err := netip.ParseAddrPort(b.addr)
		if err != nil {
			return nil, err
		}
		if ap.Addr().Is4() {
			domain, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
		} else {
			domain, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
		}
	}
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := listenOn(fd, domain, sa, dir, b.addr); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), b.network+":"+b.addr), nil
}

// listenOn binds fd to sa and listens, with the backlog Go's own listeners use. A
// unix socket's file is in dir (opened beneath instance.dir), where it gets its mode.
func listenOn(fd, domain int, sa unix.Sockaddr, dir *os.File, addr string) error {
	if domain != unix.AF_UNIX {
		// A restart of tend, or a socket closed by a reload, must not wait out
		// TIME_WAIT connections before the address binds again.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fmt.Errorf("SO_REUSEADDR: %w", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if domain == unix.AF_UNIX {
		// Group members may connect; others may not (docs/reference.md).
		if err := chmodSocket(dir, filepath.Base(addr), addr); err != nil {
			return err
		}
	}
	if err := unix.Listen(fd, listenBacklog()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return nil
}

// removeStaleSocket removes what an earlier run left at name in dir (path, for
// messages), only if it is a socket: any other file there is not tend's to remove,
// and bind reports it.
func removeStaleSocket(dir *os.File, name, path string) error {
	var st unix.Stat_t
	err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		return &fs.PathError{Op: "lstat", Path: path, Err: err}
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// chmodSocket gives the socket file name in dir mode 0660 without following a
// symlink: the directory's owner could swap one in after bind, and a chmod by name
// would then loosen whatever root file it points to. The file is opened O_PATH (a
// symlink is opened as itself), checked to be a socket, and changed through its
// descriptor's /proc entry.
func chmodSocket(dir *os.File, name, path string) error {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("chmod %s: replaced by something other than a socket after bind", path)
	}
	err = unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), 0o660, 0)
	if errors.Is(err, unix.ENOENT) { // no /proc: by name, just checked to be a socket
		err = unix.Fchmodat(int(dir.Fd()), name, 0o660, 0)
	}
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	return nil
}

// listenBacklog is the kernel's somaxconn, as Go's net package uses (the kernel caps
// a larger backlog at it anyway); unix.SOMAXCONN when it cannot be read.
var listenBacklog = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return unix.SOMAXCONN
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return unix.SOMAXCONN
	}
	return min(n, 1<<16-1) // the kernel's field is 16 bits before 4.1
})

// Sockets are the container's listening sockets (nil: none).
func (c *Container) Sockets() *Sockets { return c.cfg.Sockets }

// withSockets adds the container's sockets to a process about to start: they become
// its fds 3, 4, ... beside the hooks' files, and env gets the LISTEN_ variables. A
// socket that cannot be bound fails the start, with the address and the reason.
func (l *loop) withSockets(env []string, files map[int]*os.File) ([]string, map[int]*os.File, error) {
	ss := l.cfg.Sockets
	if ss == nil {
		return env, files, nil
	}
	socks, err := ss.Files()
	if err != nil {
		return nil, nil, err
	}
	all := make(map[int]*os.File, len(files)+len(socks))
	for n, f := range files {
		all[n] = f
	}
	for i, f := range socks {
		all[listenFDsStart+i] = f
	}
	return ss.Env(env), all, nil
}

// listenFDsStart is the first passed socket's fd (SD_LISTEN_FDS_START).
const listenFDsStart = 3
