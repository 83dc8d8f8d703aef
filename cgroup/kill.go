package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// killRecheck is how often the freeze-and-kill loop looks again at what is left.
const killRecheck = 10 * time.Millisecond

// Kill ends every process in the group, however it was started (setsid, double fork),
// and returns when the group is empty or ctx ends (docs/reference.md "Cgroups and limits"): the group is frozen so
// nothing in it can fork, every process gets SIGKILL, and it is thawed so they die, until
// empty. cgroup.kill is not used: since Linux 6.14 (kill_seq; seen on 6.18) a cgroup that
// cgroup.kill was written to kills every process later started into it by clone3's
// CLONE_INTO_CGROUP (the kernel compares the target's kill count with the parent
// cgroup's), and the group takes the container's next run.
func (g *Group) Kill(ctx context.Context) error {
	if g.mode == ModeOff {
		return nil
	}
	return g.freezeKill(ctx)
}

// waitEmpty returns when cgroup.events says "populated 0". The kernel signals a change
// of that file as a modification, so this waits on inotify, not on a timer.
func waitEmpty(ctx context.Context, dir string) error {
	events := filepath.Join(dir, "cgroup.events")
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("watch %s: %w", events, err)
	}
	// Non-blocking, so os.File waits in Go's poller and a deadline can interrupt it.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, events, unix.IN_MODIFY); err != nil {
		return waitGone(err, events)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, 4096)
	for {
		data, err := os.ReadFile(events)
		if err != nil {
			return waitGone(err, events)
		}
		if populated(string(data)) == "0" {
			return nil
		}
		if _, err := f.Read(buf); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("wait for %s to empty: %w", dir, ctx.Err())
			}
			return fmt.Errorf("watch %s: %w", events, err)
		}
	}
}

// waitGone treats a cgroup removed meanwhile as empty.
func waitGone(err error, events string) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("watch %s: %w", events, err)
}

// populated is the value of "populated" in a cgroup.events text.
func populated(events string) string {
	for _, line := range strings.Split(events, "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// freezeKill kills what is in the group by freeze, SIGKILL, thaw, until it is empty.
func (g *Group) freezeKill(ctx context.Context) error {
	for round := 0; ; round++ {
		pids, err := g.listPids()
		if err != nil {
			return fmt.Errorf("kill cgroup %s: %w", g.path, err)
		}
		if len(pids) == 0 {
			return nil
		}
		g.freeze(true)
		// Again, with the group frozen: a process forked before the freeze took hold.
		pids, _ = g.listPids()
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		g.freeze(false)
		if err := g.settle(ctx, round == 0); err != nil {
			return fmt.Errorf("kill cgroup %s: %w (%d processes left)", g.path, err, len(pids))
		}
	}
}

// settle gives the killed processes up to killRecheck to go. A cgroup2 group says when
// it is empty (cgroup.events), so the common case returns at once (first: only in the
// first round, so a group that says empty and still lists a process is looked at again
// by the tick, not in a busy loop); v1 has no such event (only a release_agent, one
// program for the whole host), so it waits the whole while. The error is ctx's.
func (g *Group) settle(ctx context.Context, first bool) error {
	wait, cancel := context.WithTimeout(ctx, killRecheck)
	defer cancel()
	if dir := g.member(); first && dir != "" && waitEmpty(wait, dir) == nil {
		return nil
	}
	<-wait.Done()
	return ctx.Err()
}

// freeze freezes or thaws the group, where a freezer is (cgroup.freeze on v2 and a
// hybrid host, the freezer hierarchy on v1). Without one the loop in freezeKill still
// ends, by rounds.
func (g *Group) freeze(on bool) {
	if dir := g.member(); dir != "" {
		if exists(filepath.Join(dir, "cgroup.freeze")) {
			writeFile(dir, "cgroup.freeze", map[bool]string{true: "1", false: "0"}[on])
		}
		return
	}
	if dir := dirOf(g.places, "freezer"); dir != "" {
		writeFile(dir, "freezer.state", map[bool]string{true: "FROZEN", false: "THAWED"}[on])
	}
}
