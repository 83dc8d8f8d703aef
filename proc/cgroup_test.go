package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/cgroup"
	"github.com/tend-sh/tend/internal/testutil"
)

// cgroupOf runs `cat /proc/self/cgroup` as c and returns what it printed.
func cgroupOf(t *testing.T, c Cmd) string {
	t.Helper()
	var out testutil.SyncBuffer
	c.Argv, c.Env, c.Stdout, c.Stderr = []string{"cat", "/proc/self/cgroup"}, os.Environ(), &out, &out
	e := Run(context.Background(), c, testTimeout)
	if !e.Success() {
		t.Fatalf("cat /proc/self/cgroup: %v: %s", e, out.String())
	}
	return out.String()
}

// On cgroup v1 the exec shim joins the group before it execs: the program's first
// look at /proc/self/cgroup shows it inside, in every hierarchy, also with rlimits. A
// memory limit makes a hybrid host's group join v1 memory as well (clone3 places it in
// the cgroup2 one).
func TestStartInCgroupV1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("cgroup v1 groups need root")
	}
	tree, err := cgroup.Open("/", "auto", os.Getpid())
	if err != nil || tree.Mode != cgroup.ModeV1 {
		t.Skipf("no writable cgroup v1 here (mode %v, %v)", tree.Mode, err)
	}
	g, err := tree.Group(cgroup.KindContainers, fmt.Sprintf("proc-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Kill(context.Background()); g.Remove(); tree.Close() })
	if errs := g.SetLimits(cgroup.Limits{Memory: 1 << 30}); errs != nil {
		t.Fatal(errs)
	}
	got := cgroupOf(t, Cmd{Cgroup: &Cgroup{FD: g.FD(), ProcsFiles: g.ProcsFiles()}})
	name := fmt.Sprintf("/containers/proc-test-%d", os.Getpid())
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",memory,") && !strings.HasSuffix(parts[2], name) {
			t.Errorf("memory cgroup %q, want <start>%s", parts[2], name)
		}
	}
	if !strings.Contains(got, g.Path()) {
		t.Errorf("/proc/self/cgroup does not show %s:\n%s", g.Path(), got)
	}
}

// On cgroup v2 clone3 starts the process in the group (CLONE_INTO_CGROUP): no shim.
func TestStartInCgroupV2(t *testing.T) {
	const unified = "/sys/fs/cgroup/unified"
	var st unix.Statfs_t
	if err := unix.Statfs(unified, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC || os.Geteuid() != 0 {
		t.Skip("no writable cgroup2 mount at " + unified)
	}
	dir := filepath.Join(unified, fmt.Sprintf("tend-proc-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	got := cgroupOf(t, Cmd{Cgroup: &Cgroup{FD: fd}})
	want := "0::/" + filepath.Base(dir)
	if !strings.Contains(got, want+"\n") {
		t.Errorf("/proc/self/cgroup has no %q:\n%s", want, got)
	}
}
