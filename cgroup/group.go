package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// leftoverKillTimeout bounds the kill of a group an earlier tend left behind.
const leftoverKillTimeout = 5 * time.Second

// Group is the cgroup of one container or init container, in every hierarchy tend uses.
// With cgroups off every method does nothing (SetLimits reports each limit unapplied).
// A Group belongs to its container's goroutine: its methods are not safe to call at once.
type Group struct {
	mode    Mode
	reason  string // why mode is off
	path    string // as /proc/PID/cgroup shows it
	places  []place
	unified string  // hybrid: the group in the cgroup2 hierarchy, which holds every process
	joined  []place // hybrid: the places of places that SetLimits made, for its limits
	tree    *Tree   // hybrid: makes <start>/containers and /init of v1 at the first limit
	fd      int     // v2, hybrid: the open directory, for clone3's CLONE_INTO_CGROUP
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
	for _, dir := range dirs {
		leftover, err := g.mkdirFresh(dir)
		if err != nil {
			return err
		}
		if leftover && g.unified != "" {
			for _, p := range g.places {
				unix.Rmdir(p.dir)
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
// removed). One already gone is fine.
func (g *Group) Remove() error {
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	var errs []error
	for _, p := range append([]place{{dir: g.unified}}, g.places...) {
		if p.dir == "" {
			continue
		}
		if err := unix.Rmdir(p.dir); err != nil && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p.dir, err))
		}
	}
	return errors.Join(errs...)
}

// pids lists the processes in the group, over every hierarchy: on v1 a process could
// have been moved out of one hierarchy and not another.
func (g *Group) pids() ([]int, error) {
	seen := map[int]bool{}
	var pids []int
	places := g.places
	if g.unified != "" {
		places = append([]place{{dir: g.unified}}, g.joined...)
	}
	for _, p := range places {
		data, err := os.ReadFile(filepath.Join(p.dir, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
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
