package proc

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Descendants returns the PIDs of every living process below pid: its children,
// their children, and so on. As a child subreaper tend gets every orphan of its
// containers, so below tend is where every process it ever started (or that they
// started) is. It reads /proc/PID/task/TID/children, which names only the processes
// below; a kernel without it gets a scan of every process's parent.
func Descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		children, ok := childrenOf(p)
		if !ok {
			return scanDescendants(pid)
		}
		out = append(out, children...)
		queue = append(queue, children...)
	}
	return out
}

// childrenOf lists the children of every thread of p; ok is false when the kernel
// has no children files (CONFIG_PROC_CHILDREN). A process that is gone has none.
func childrenOf(p int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(p) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true // gone meanwhile
	}
	var out []int
	buf := make([]byte, 0, 512)
	for _, t := range tasks {
		b, err := readProc(dir+"/"+t.Name()+"/children", &buf)
		if errors.Is(err, fs.ErrNotExist) {
			if _, statErr := os.Stat(dir + "/" + t.Name()); statErr == nil {
				return nil, false // the task is there, its children file is not
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				if _, ok := parentOf(c); ok { // not a zombie
					out = append(out, c)
				}
			}
		}
	}
	return out, true
}

// readProc reads a small file of /proc whole into *buf (grown as needed) with plain
// system calls: os.ReadFile adds an fstat, four fcntls and an epoll registration that
// fails, which a scan of many children files paid for each.
func readProc(path string, buf *[]byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return preadAll(fd, path, buf)
}

// preadAll reads the file open as fd whole, from its start, into *buf (grown as
// needed). A file of /proc that is generated when read (a children file) is generated
// again by each read from the start.
func preadAll(fd int, path string, buf *[]byte) ([]byte, error) {
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, max(cap(b), 512))
		}
		n, err := unix.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	*buf = b
	return b, nil
}

// scanDescendants is Descendants by reading the parent of every process.
func scanDescendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent of p from /proc/p/stat; zombies count as gone.
func parentOf(p int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold anything: the state
	// and the parent follow the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// KillDescendants ends every process below this one: SIGTERM (and SIGCONT), up to
// grace for them to exit, then SIGKILL, repeated while new ones appear (a process
// may fork as it dies). It returns how many processes it signalled.
func KillDescendants(grace time.Duration) int {
	if !hasChildren() {
		return 0 // the usual end: every container's processes were reaped
	}
	self := ownPid
	seen := map[int]bool{}
	for round := 0; round < 10; round++ {
		pids := Descendants(self)
		if len(pids) == 0 {
			break
		}
		sig := unix.SIGTERM
		if round > 0 {
			sig = unix.SIGKILL
		}
		var fds []int
		for _, p := range pids {
			seen[p] = true
			if fd, err := unix.PidfdOpen(p, 0); err == nil {
				fds = append(fds, fd)
			}
			_ = unix.Kill(p, sig)
			if sig == unix.SIGTERM {
				_ = unix.Kill(p, unix.SIGCONT)
			}
		}
		waitPidfds(fds, grace)
	}
	return len(seen)
}

// hasChildren reports whether this process has a child, alive or not yet reaped: one
// waitid that reaps nothing (WNOWAIT) instead of reading /proc. Without a child there is
// nothing below: an orphan comes to tend, the subreaper, as its child.
func hasChildren() bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err != unix.ECHILD
		}
	}
}

// waitPidfds waits until every process of fds has exited or d has passed, and closes
// the descriptors. A pidfd becomes readable when its process exits.
func waitPidfds(fds []int, d time.Duration) {
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	deadline := time.Now().Add(d)
	pending := fds
	for len(pending) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		pfds := make([]unix.PollFd, len(pending))
		for i, fd := range pending {
			pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		}
		n, err := unix.Poll(pfds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		var still []int
		for i, p := range pfds {
			if p.Revents == 0 {
				still = append(still, pending[i])
			}
		}
		pending = still
	}
}
