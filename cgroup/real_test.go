package cgroup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests in this file use the machine's real cgroups, below the test process's own
// cgroup in a directory tend-test-<random> of their own, and remove all they create.

func testName() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "tend-test-" + hex.EncodeToString(b)
}

// realV1Tree opens a v1 tree whose starting cgroup is tend-test-<random> below the test
// process's own cgroup in each hierarchy, as tend would below its own.
func realV1Tree(t *testing.T) *Tree {
	t.Helper()
	tree, err := openV1("/", realV1Paths(t), v1Controllers, false, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tree.Close(); err != nil {
			t.Error(err)
		}
	})
	return tree
}

// realV1Paths creates tend-test-<random> below the test process's own cgroup in each
// v1 hierarchy tend uses and returns /proc/self/cgroup's map as if the process were
// there.
func realV1Paths(t *testing.T) map[string]string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("v1 cgroups are writable by root only")
	}
	if exists("/sys/fs/cgroup/cgroup.controllers") || !exists("/sys/fs/cgroup/memory/cgroup.procs") {
		t.Skip("no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")
	}
	name, paths := testName(), selfCgroups("/")
	for list, own := range paths {
		if list == "" || !isUsed(list) {
			continue
		}
		dir := filepath.Join(onDisk(v1Mount("/", paths, strings.Split(list, ",")[0]), own), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dir) })
		paths[list] = own + "/" + name
	}
	return paths
}

// Two tends started in one cgroup would share <start>/containers/NAME, and each
// would kill the other's group as a leftover: the second finds the first's lock.
func TestV1SecondTreeInOneCgroupIsLockedOut(t *testing.T) {
	paths := realV1Paths(t)
	first, err := openV1("/", paths, v1Controllers, false, "")
	if err != nil {
		t.Fatal(err)
	}
	g := realGroup(t, first, "web")
	if _, err := openV1("/", paths, v1Controllers, false, ""); err == nil || !strings.Contains(err.Error(), "another tend uses /sys/fs/cgroup/") {
		t.Fatalf("second openV1 = %v, want \"another tend uses <start>/containers\"", err)
	}
	if !exists(filepath.Join(dirOf(g.places, "memory"), "cgroup.procs")) {
		t.Error("the first tree's group is gone after the second open")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g.Kill(ctx)
	g.Remove()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := openV1("/", paths, v1Controllers, false, "")
	if err != nil {
		t.Fatalf("openV1 after the first tree closed: %v", err)
	}
	again.Close()
}

func isUsed(list string) bool {
	for _, c := range strings.Split(list, ",") {
		for _, u := range v1Controllers {
			if c == u {
				return true
			}
		}
	}
	return false
}

// realGroup creates a group that is killed and removed when the test ends, passed or not.
func realGroup(t *testing.T, tree *Tree, name string) *Group {
	t.Helper()
	g, err := tree.Group(KindContainers, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Kill(ctx); err != nil {
			t.Error(err)
		}
		g.Remove()
	})
	return g
}

func startCmd(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}

// sleepers waits until the group holds n processes, all sleep.
func sleepers(t *testing.T, g *Group, n int) []int {
	t.Helper()
	var pids []int
	waitFor(t, "the sleeps in the group", func() (bool, string) {
		pids, _ = g.listPids()
		var comms []string
		for _, pid := range pids {
			comm, _ := os.ReadFile(filepath.Join("/proc", itoa(int64(pid)), "comm"))
			comms = append(comms, strings.TrimSpace(string(comm)))
		}
		return len(pids) == n && strings.Count(strings.Join(comms, " "), "sleep") == n, strings.Join(comms, " ")
	})
	return pids
}

func TestV1LimitsReadBack(t *testing.T) {
	tree := realV1Tree(t)
	g := realGroup(t, tree, "web")
	dirs := map[string]string{"cpu": dirOf(g.places, "cpu"), "memory": dirOf(g.places, "memory"), "pids": dirOf(g.places, "pids")}
	// Down from no limit, down again, then up: memsw must stay ≥ the limit at every write.
	for _, mem := range []int64{64 << 20, 32 << 20, 128 << 20} {
		if errs := g.SetLimits(Limits{CPU: 0.5, Memory: mem, Pids: 50}); errs != nil {
			t.Fatalf("SetLimits(memory %d): %v", mem, errs)
		}
		want := map[string]string{"cpu/cpu.cfs_period_us": "100000", "cpu/cpu.cfs_quota_us": "50000",
			"memory/memory.limit_in_bytes": itoa(mem), "pids/pids.max": "50"}
		if exists(filepath.Join(dirs["memory"], "memory.memsw.limit_in_bytes")) {
			want["memory/memory.memsw.limit_in_bytes"] = itoa(mem)
		}
		for f, v := range want {
			c, file, _ := strings.Cut(f, "/")
			if got := readString(t, filepath.Join(dirs[c], file)); got != v {
				t.Errorf("%s = %q, want %q", f, got, v)
			}
		}
	}
}

// TestV1KillTakesEveryProcess starts sleeps in the group three ways — through the exec
// shim, placed after start, and a setsid double-forked grandchild — and kills them all.
func TestV1KillTakesEveryProcess(t *testing.T) {
	tree := realV1Tree(t)
	g := realGroup(t, tree, "web")
	shimmed := shimCommand(g, "sleep", "100")
	startCmd(t, shimmed)
	placed := exec.Command("sleep", "100")
	startCmd(t, placed)
	for _, f := range g.ProcsFiles() {
		if err := os.WriteFile(f, []byte(itoa(int64(placed.Process.Pid))), 0); err != nil {
			t.Fatal(err)
		}
	}
	escaper := shimCommand(g, "sh", "-c", `setsid sh -c "sleep 100 &" &`)
	startCmd(t, escaper)
	escaper.Wait()
	pids := sleepers(t, g, 3)
	// pids.current counts a zombie until it is reaped: the setsid shell may be one.
	if u, err := g.Usage(); err != nil || u.Pids < 3 || u.MemoryBytes <= 0 {
		t.Errorf("Usage = %+v, %v; want 3 pids or more and some memory", u, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	shimmed.Wait()
	placed.Wait()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived the kill", pid)
		}
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, f := range g.ProcsFiles() {
		if exists(filepath.Dir(f)) {
			t.Errorf("%s not removed", filepath.Dir(f))
		}
	}
}

// alive says whether pid runs (a zombie, dead and waiting for its parent, does not).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", itoa(int64(pid)), "stat"))
	if err != nil {
		return false
	}
	st := string(stat)
	fields := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestV1PidsMaxStopsAForkLoop(t *testing.T) {
	tree := realV1Tree(t)
	g := realGroup(t, tree, "forker")
	if errs := g.SetLimits(Limits{Pids: 5}); errs != nil {
		t.Fatal(errs)
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd := shimCommand(g, "sh", "-c", `i=0; while [ $i -lt 20 ]; do sleep 100 & i=$((i+1)); done; wait`)
	cmd.Stderr = stderr
	startCmd(t, cmd)
	waitFor(t, "a fork refused", func() (bool, string) {
		u, _ := g.Usage()
		out := readString(t, stderr.Name())
		return strings.Contains(out, "fork"), "pids " + itoa(u.Pids) + ", stderr " + out
	})
	if u, err := g.Usage(); err != nil || u.Pids > 5 {
		t.Errorf("Usage = %+v, %v; want at most 5 pids", u, err)
	}
}

func TestV1OOMKillCounted(t *testing.T) {
	tree := realV1Tree(t)
	g := realGroup(t, tree, "hog")
	if errs := g.SetLimits(Limits{Memory: 64 << 20}); errs != nil {
		t.Fatal(errs)
	}
	cmd := shimCommand(g, os.Args[0], "-test.run=^$")
	cmd.Env = append(cmd.Env, "TEND_CGROUP_ALLOC=200")
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("a process allocating 200 MiB under 64 MiB ended with %v, want SIGKILL", err)
	}
	u, err := g.Usage()
	if err != nil || u.OOMKills != 1 {
		t.Errorf("Usage = %+v, %v; want 1 OOM kill", u, err)
	}
	if n, err := g.OOMKills(); err != nil || n != 1 {
		t.Errorf("OOMKills = %d, %v; want 1, as Usage", n, err)
	}
}

// TestV2Unified uses the controller-less cgroup2 hierarchy of a hybrid host (or any
// writable cgroup2 mount at /sys/fs/cgroup/unified): the leaf move with a stand-in for
// tend, a child started into the group by clone3, cgroup.kill, cgroup.events.
func TestV2Unified(t *testing.T) {
	mount := "/sys/fs/cgroup/unified"
	if os.Geteuid() != 0 || !exists(filepath.Join(mount, "cgroup.controllers")) {
		t.Skip("needs root and a cgroup2 mount at " + mount)
	}
	start := "/" + testName()
	self := exec.Command("sleep", "100") // stands in for tend in the leaf move
	startCmd(t, self)
	if err := os.Mkdir(filepath.Join(mount, start), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, d := range []string{"tend", "containers", "init", ""} {
			os.Remove(filepath.Join(mount, start, d))
		}
	})
	t.Cleanup(func() { self.Process.Kill(); self.Wait() }) // before the leaf is removed
	tree, err := openV2(mount, start, self.Process.Pid, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(mount, start, "tend/cgroup.procs")); got != itoa(int64(self.Process.Pid)) {
		t.Errorf("leaf holds %q, want %d", got, self.Process.Pid)
	}
	g := realGroup(t, tree, "web")
	testCloneIntoCgroup(t, g)
	testV2Kill(t, g)
	if err := tree.Close(); err != nil {
		t.Error(err)
	}
}

// testCloneIntoCgroup starts a child with CLONE_INTO_CGROUP: its first look at
// /proc/self/cgroup already shows the group.
func testCloneIntoCgroup(t *testing.T, g *Group) {
	cmd := exec.Command("cat", "/proc/self/cgroup")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "0::"+g.Path()+"\n") {
		t.Errorf("child's /proc/self/cgroup:\n%s\nwant 0::%s", out, g.Path())
	}
}

func testV2Kill(t *testing.T, g *Group) {
	dir := g.places[0].dir
	cmd := exec.Command("sh", "-c", `setsid sh -c "sleep 100 &" & exec sleep 100`)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD(), Setpgid: true}
	startCmd(t, cmd)
	pids := sleepers(t, g, 2)
	if u, err := g.Usage(); err != nil || u.CPUSeconds <= 0 {
		t.Errorf("Usage = %+v, %v; want some CPU time from cpu.stat", u, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if got := populated(readString(t, filepath.Join(dir, "cgroup.events"))); got != "0" {
		t.Errorf("after Kill populated = %q, want 0", got)
	}
	cmd.Wait()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived the kill", pid)
		}
	}
	testNextRunStarts(t, g)
	if err := g.Remove(); err != nil || exists(dir) {
		t.Errorf("Remove = %v; %s exists: %v", err, dir, exists(dir))
	}
}

// testNextRunStarts starts a process into g by clone3 after a Kill, as a container's
// next run: it must run (a cgroup.kill would have made the kernel kill it at birth).
func testNextRunStarts(t *testing.T, g *Group) {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := cmd.Run(); err != nil {
		t.Errorf("a process started into the group after Kill: %v, want it to run", err)
	}
}
