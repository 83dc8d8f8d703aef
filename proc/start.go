package proc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// defaultPath is searched when the environment has no PATH (the Docker default).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// startSlots bounds the starts in progress at once. A start is a series of blocking
// system calls (stat, access, open, pipe, clone, and a read until the exec), and the
// Go runtime gives a goroutine blocked in one its own thread, which it keeps for good:
// a thousand containers started together left tend with up to hundreds of idle
// threads (8-87 in ten runs on a loaded 2-CPU machine, 8 with two slots, and no
// slower). fork/exec itself is serialised by the runtime anyway (syscall.ForkLock);
// two slots rather than one, so that one slow start (a stat on a hung mount) does
// not hold up every other.
var startSlots = make(chan struct{}, 2)

// notFoundError is a command name that is not in PATH.
type notFoundError struct{ name string }

func (e *notFoundError) Error() string { return fmt.Sprintf("exec: %q: not found", e.name) }
func (e *notFoundError) Unwrap() error { return exec.ErrNotFound }

// lookPath resolves name like execvp does, with the PATH of env. A name found only
// without execute permission is reported as permission denied, as shells do.
func lookPath(name string, env []string) (string, error) {
	if name == "" {
		return "", &notFoundError{name}
	}
	if strings.Contains(name, "/") {
		return name, nil // checked by execve itself, relative to Dir
	}
	path := defaultPath
	for i := len(env) - 1; i >= 0; i-- { // the last definition wins, as in getenv
		if v, found := strings.CutPrefix(env[i], "PATH="); found {
			path = v
			break
		}
	}
	var denied error
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		file := filepath.Join(dir, name)
		// unix.Stat, not os.Stat: no FileInfo or error to allocate for each directory
		// of PATH that has no such file, at every start of every container.
		var st unix.Stat_t
		if unix.Stat(file, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
			continue
		}
		if err := unix.Access(file, unix.X_OK); err != nil {
			if denied == nil {
				denied = &fs.PathError{Op: "exec", Path: file, Err: err}
			}
			continue
		}
		return file, nil
	}
	if denied != nil {
		return "", denied
	}
	return "", &notFoundError{name}
}

// checkDir tells a bad working directory apart from a missing executable: the child
// reports both as ENOENT. Its error is deliberately not fs.ErrNotExist (status 126, not 127).
func checkDir(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return fmt.Errorf("working directory %s: %v", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("working directory %s: not a directory", dir)
	}
	return nil
}

// outputs holds the child's stdin, stdout and stderr while starting: the descriptors
// the child gets and the pipes whose read ends feed non-file writers (through the
// output poller, poller.go).
//
// The child's ends are plain descriptors, not *os.File: an *os.File pipe end is put
// in non-blocking mode and registered with the runtime's poller when made, and taken
// out of both again by Fd() for the child, four to five system calls per pipe that a
// start (serialised by the fork) does not need. /dev/null is opened once (devNull).
type outputs struct {
	child   [3]int // stdin, stdout, stderr as given to the child
	closing []int  // child ends opened here, closed after the fork
	pipes   []*outPipe
}

// nullIn and nullOut are /dev/null open for reading (every child's stdin) and for
// writing (a discarded output), shared by every child. They stay open: children
// only inherit them.
var (
	nullIn  = sync.OnceValues(func() (int, error) { return openNull(unix.O_RDONLY) })
	nullOut = sync.OnceValues(func() (int, error) { return openNull(unix.O_WRONLY) })
)

func openNull(mode int) (int, error) {
	fd, err := unix.Open(os.DevNull, mode|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: os.DevNull, Err: err}
	}
	return fd, nil
}

func openOutputs(stdout, stderr io.Writer) (*outputs, error) {
	stdin, err := nullIn()
	if err != nil {
		return nil, err
	}
	null, err := nullOut()
	if err != nil {
		return nil, err
	}
	o := &outputs{child: [3]int{stdin, -1, -1}}
	if o.child[1], err = o.open(stdout, null); err == nil {
		if sameWriter(stdout, stderr) {
			o.child[2] = o.child[1]
		} else {
			o.child[2], err = o.open(stderr, null)
		}
	}
	if err != nil {
		o.closeChildEnds()
		o.closeReadEnds()
		return nil, err
	}
	return o, nil
}

func (o *outputs) open(w io.Writer, null int) (int, error) {
	switch w := w.(type) {
	case nil:
		return null, nil
	case *os.File:
		return int(w.Fd()), nil
	default:
		if _, err := outputPoller(); err != nil {
			return -1, err
		}
		// Both ends non-blocking from the start, as the poller needs the read end;
		// the child's end is made blocking again, as programs expect of their stdout.
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			return -1, fmt.Errorf("output pipe: %w", err)
		}
		if err := unix.SetNonblock(p[1], false); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, fmt.Errorf("output pipe: %w", err)
		}
		o.closing = append(o.closing, p[1])
		o.pipes = append(o.pipes, newOutPipe(p[0], w))
		return p[1], nil
	}
}

// sameWriter compares writers without panicking on uncomparable dynamic types.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}

func (o *outputs) childFds() []uintptr {
	return []uintptr{uintptr(o.child[0]), uintptr(o.child[1]), uintptr(o.child[2])}
}

// closeChildEnds closes this process's copies of what only the child needs.
func (o *outputs) closeChildEnds() {
	for _, fd := range o.closing {
		unix.Close(fd)
	}
	o.closing = nil
}

// closeReadEnds closes the read ends when nothing was started.
func (o *outputs) closeReadEnds() {
	for _, p := range o.pipes {
		unix.Close(p.fd)
	}
	o.pipes = nil
}

// watch hands the pipes to the output poller, which closes done once they have all
// ended; done is closed at once when there are none. It returns what CloseOutput
// needs, nil without pipes.
func (o *outputs) watch(done chan struct{}) *procOutput {
	if len(o.pipes) == 0 {
		close(done)
		return nil
	}
	out := &procOutput{pipes: o.pipes, open: len(o.pipes), done: done}
	for _, p := range o.pipes {
		p.out = out
	}
	o.pipes = nil
	pl, _ := outputPoller() // made when the first pipe was
	pl.request(pollRequest{out: out})
	return out
}
