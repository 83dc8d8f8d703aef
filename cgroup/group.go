package cgroup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// leftoverKillTimeout bounds the kill of a group an earlier tend left behind.
const leftoverKillTimeout = 5 * time.Second

// Group is the cgroup of one container or init container, in every hierarchy tend uses.
// With cgroups off every method does nothing (SetLimits reports each limit unapplied).
// Usage, Kill and Remove are safe to call at once from any goroutine: the instance's
// sampler reads every group while each container's goroutine (and its exit path) kills
// and removes its own. The other methods belong to the container's goroutine.
type Group struct {
	mode    Mode
	reason  string // why mode is off
	path    string // as /proc/PID/cgroup shows it
	sub     string // <kind>/<name>, below <start>
	places  []place
	unified string  // hybrid: the group in the cgroup2 hierarchy, which holds every process
	joined  []place // hybrid: the places of places that SetLimits made, for its limits
	tree    *Tree   // hybrid: makes <start>/containers and /init of v1 at the first limit
	fd      int     // v2, hybrid: the open directory, for clone3's CLONE_INTO_CGROUP
	fresh   bool    // create made every directory anew (see Fresh)

	// mu guards what follows, and joined: the files Usage and Kill read through
	// descriptors kept open, which Remove closes.
	mu      sync.Mutex
	files   map[fileKey]int // open usage files (read), or missing
	removed bool            // Remove has run: Usage is an error, nothing is kept open
	members []int           // the last pids() answer, reused
	statPid int             // the process whose /proc/PID/stat is kept open (readStat), or 0
	statFD  int
	still   stillCounts // what the last Usage read that only a running process changes
	kind    *kindCPU    // cgroup2: the CPU time of every group of its kind; nil on v1
}

// create makes the group's directories. One that exists was left by a tend that crashed
// (its processes may live on): it is killed and made anew so no old limit stays. If it
// cannot be removed (it has children of its own) it is reused as it is. On a hybrid host
// only the cgroup2 group is made here (the v1 ones by SetLimits, for a limit); with a
// leftover cgroup2 group the v1 groups of the crash go too (their processes were in
// the cgroup2 one, and are killed).
func (g *Group) create() error {
	dirs := []string{g.unified}
	if g.unified == "" {
		dirs = dirs[:0]
		for _, p := range g.places {
			dirs = append(dirs, p.dir)
		}
	}
	g.fresh = true
	for _, dir := range dirs {
		leftover, err := g.mkdirFresh(dir)
		if err != nil {
			return err
		}
		g.fresh = g.fresh && !leftover
		if leftover && g.unified != "" {
			if places, err := g.tree.v1Places(); err == nil {
				for _, p := range under(places, g.sub) {
					unix.Rmdir(p.dir)
				}
			}
		}
	}
	dir := g.member()
	if dir == "" {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	g.fd = fd
	return nil
}

// mkdirFresh creates dir, killing and removing a leftover first (see create), and says
// whether there was one.
func (g *Group) mkdirFresh(dir string) (leftover bool, err error) {
	err = os.Mkdir(dir, 0o755)
	if !errors.Is(err, fs.ErrExist) {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), leftoverKillTimeout)
	err = g.Kill(ctx)
	cancel()
	if err == nil && unix.Rmdir(dir) == nil {
		err = os.Mkdir(dir, 0o755)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return true, err
	}
	return true, nil
}

// Fresh says whether the group was made new, with nothing before it: its counts (CPU
// time, OOM kills) start at zero and need no reading before its first run. A leftover
// of a crashed tend, even remade, is not fresh.
func (g *Group) Fresh() bool { return g.fresh }

// member is the directory of the cgroup2 group, which holds every process of the
// group (v2, hybrid); "" on plain v1 and off.
func (g *Group) member() string {
	switch {
	case g.mode == ModeV2:
		return g.places[0].dir
	case g.unified != "":
		return g.unified
	}
	return ""
}

// Path is the group's path as /proc/PID/cgroup shows it, <start>/containers/NAME (on v1
// the memory hierarchy's, on a hybrid host the cgroup2 one's: the "0::" line); "" when
// cgroups are off.
func (g *Group) Path() string { return g.path }

// FD is an O_DIRECTORY descriptor of the group for syscall.SysProcAttr's UseCgroupFD
// and CgroupFD: clone3 with CLONE_INTO_CGROUP starts the child in the group, so not even
// its first instruction runs outside. -1 unless on v2 or a hybrid host. Valid until
// Remove.
func (g *Group) FD() int { return g.fd }

// ProcsFiles are the v1 cgroup.procs files a process of the group must join as it
// starts: v1 has no CLONE_INTO_CGROUP, so an exec shim writes its own pid into each
// (JoinSelf) before it execs the program, and the program and all it forks start
// inside. On plain v1 they are every hierarchy's; on a hybrid host only those of the
// limits SetLimits wrote (a container without limits joins none: FD places it); on v2
// none.
func (g *Group) ProcsFiles() []string {
	places := g.places
	switch {
	case g.mode == ModeV2:
		return nil
	case g.unified != "":
		places = g.joined
	}
	var files []string
	for _, p := range places {
		files = append(files, filepath.Join(p.dir, "cgroup.procs"))
	}
	return files
}

// JoinSelf moves the calling process into each cgroup.procs file given, for the v1
// exec shim (see ProcsFiles).
func JoinSelf(procsFiles []string) error {
	pid := strconv.Itoa(os.Getpid())
	for _, f := range procsFiles {
		if err := writeFile(filepath.Dir(f), filepath.Base(f), pid); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// Remove deletes the group's directories (after Kill: a cgroup with processes cannot be
// removed) and closes what the group keeps open; Usage afterwards is an error. One
// already gone is fine.
func (g *Group) Remove() error {
	_, err := g.remove(false)
	return err
}

// RemoveEmpty is Remove for a group that should be empty (its processes were killed):
// when the kernel says a process is still in it (EBUSY) it removes nothing, keeps
// everything open and reports false, and the caller kills what is left (Kill) and
// removes it (Remove). An empty group costs one rmdir a hierarchy, without a read of
// its processes first.
func (g *Group) RemoveEmpty() (bool, error) {
	return g.remove(true)
}

// remove is Remove; ifEmpty: unless the first directory (the one that holds every
// process, or a v1 one) is busy.
func (g *Group) remove(ifEmpty bool) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	dirs := make([]string, 0, 1+len(g.places))
	for _, p := range append([]place{{dir: g.unified}}, g.places...) {
		if p.dir != "" {
			dirs = append(dirs, p.dir)
		}
	}
	var errs []error
	if ifEmpty && len(dirs) > 0 {
		switch err := unix.Rmdir(dirs[0]); err {
		case unix.EBUSY:
			return false, nil
		case nil, unix.ENOENT:
		default:
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[0], err))
		}
		dirs = dirs[1:]
	}
	g.removed = true
	g.closeFiles()
	g.dropStat()
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	for _, dir := range dirs {
		if err := unix.Rmdir(dir); err != nil && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
		}
	}
	return true, errors.Join(errs...)
}

// listPids is pids for Kill, which holds no lock between its steps: a copy of its own.
func (g *Group) listPids() ([]int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	buf := readBufs.Get().(*[]byte)
	defer readBufs.Put(buf)
	pids, err := g.pids(buf)
	return slices.Clone(pids), err
}

// pids lists the processes in the group, over every hierarchy: on v1 a process could
// have been moved out of one hierarchy and not another. The slice is g.members, valid
// until the next call; a directory that does not exist lists none. The caller holds g.mu.
func (g *Group) pids(buf *[]byte) ([]int, error) {
	g.members = g.members[:0]
	g.still.members = false // read for another caller: Usage reads them again
	dirs := 0
	add := func(dir string, v1 bool) error {
		var data []byte
		var err error
		if v1 {
			data, err = readOnce(dir, "cgroup.procs", buf) // see readOnce
		} else {
			data, err = g.read(dir, "cgroup.procs", buf)
		}
		if errors.Is(err, errGone) {
			return nil
		}
		dirs++
		for len(data) > 0 {
			var line []byte
			line, data = nextLine(data)
			if pid, err := atoi(bytes.TrimSpace(line)); err == nil {
				g.members = append(g.members, int(pid))
			}
		}
		return err
	}
	places := g.places
	if g.unified != "" {
		if err := add(g.unified, false); err != nil {
			return nil, err
		}
		places = g.joined
	}
	for _, p := range places {
		if err := add(p.dir, g.mode == ModeV1); err != nil {
			return nil, err
		}
	}
	if dirs > 1 {
		slices.Sort(g.members)
		g.members = slices.Compact(g.members)
	}
	return g.members, nil
}

// dirOf is the group's directory holding controller c, "" if no hierarchy has it.
func dirOf(places []place, c string) string {
	for _, p := range places {
		for _, pc := range p.controllers {
			if pc == c {
				return p.dir
			}
		}
	}
	return ""
}
