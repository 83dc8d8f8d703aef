package cgroup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeHybrid builds a hybrid host under a temp root: v1 hierarchies (cpu and cpuacct
// together) and a controller-less cgroup2 at sys/fs/cgroup/unified, tend started in
// /pod in each.
func fakeHybrid(t *testing.T) (root, v1, unified string) {
	root = t.TempDir()
	writeFixture(t, filepath.Join(root, "proc/self/cgroup"),
		"4:memory:/pod\n3:pids:/pod\n2:cpu,cpuacct:/pod\n1:freezer:/pod\n0::/pod\n")
	v1 = filepath.Join(root, "sys/fs/cgroup")
	for _, list := range []string{"memory", "pids", "cpu,cpuacct", "freezer"} {
		writeFixture(t, filepath.Join(v1, list, "cgroup.procs"), "")
		writeFixture(t, filepath.Join(v1, list, "pod/cgroup.procs"), "")
	}
	unified = filepath.Join(v1, "unified")
	writeFixture(t, filepath.Join(unified, "cgroup.controllers"), "")
	writeFixture(t, filepath.Join(unified, "pod/cgroup.procs"), "")
	return root, v1, filepath.Join(unified, "pod")
}

// On a hybrid host a container without limits is placed by FD alone in the cgroup2
// group (no v1 group, no shim); one with limits joins the v1 groups of those limits.
func TestHybridJoinsV1OnlyForLimits(t *testing.T) {
	root, v1, unified := fakeHybrid(t)
	tree, err := Open(root, "required", 1)
	if err != nil || tree.Mode != ModeV1 {
		t.Fatalf("Open = %+v, %v; want mode v1 (hybrid)", tree, err)
	}
	for _, list := range []string{"memory", "pids", "cpu,cpuacct", "freezer"} {
		if exists(filepath.Join(v1, list, "pod/containers")) {
			t.Errorf("v1 %s: <start>/containers made before a limit needs it", list)
		}
	}
	if exists(filepath.Join(unified, "init")) {
		t.Error("cgroup2 <start>/init made before an init container needs it")
	}
	if _, err := tree.Group(KindInit, "migrate"); err != nil || !exists(filepath.Join(unified, "init/migrate")) {
		t.Errorf("init group: %v; want cgroup2 <start>/init/migrate", err)
	}
	plain, err := tree.Group(KindContainers, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if errs := plain.SetLimits(Limits{}); errs != nil {
		t.Fatal(errs)
	}
	if tree.v1Probed {
		t.Error("the v1 hierarchies were probed before a limit needed them")
	}
	if plain.Path() != "/pod/containers/plain" || plain.FD() < 0 || plain.ProcsFiles() != nil {
		t.Errorf("plain: Path %q FD %d ProcsFiles %v; want /pod/containers/plain, an fd, none", plain.Path(), plain.FD(), plain.ProcsFiles())
	}
	if !exists(filepath.Join(unified, "containers/plain")) || exists(filepath.Join(v1, "memory/pod/containers/plain")) {
		t.Error("plain: want the cgroup2 group and no v1 memory group")
	}
	web, _ := tree.Group(KindContainers, "web")
	if errs := web.SetLimits(Limits{CPU: 0.5, Memory: 64 << 20}); errs != nil {
		t.Fatal(errs)
	}
	want := []string{filepath.Join(v1, "memory/pod/containers/web/cgroup.procs"), filepath.Join(v1, "cpu,cpuacct/pod/containers/web/cgroup.procs")}
	if got := web.ProcsFiles(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("web ProcsFiles = %v, want %v", got, want)
	}
	if got := readString(t, filepath.Join(v1, "memory/pod/containers/web/memory.limit_in_bytes")); got != "67108864" {
		t.Errorf("memory.limit_in_bytes = %q", got)
	}
	if exists(filepath.Join(v1, "pids/pod/containers")) || exists(filepath.Join(v1, "freezer/pod/containers")) {
		t.Error("web: a v1 group made for a controller without a limit")
	}
	if !exists(filepath.Join(v1, "memory/pod/init")) {
		t.Error("the first memory limit did not make <start>/init in v1 memory")
	}
	// A fake tree's limit files keep web's directories: plain's go.
	if err := plain.Remove(); err != nil || exists(filepath.Join(unified, "containers/plain")) {
		t.Errorf("Remove = %v; want the cgroup2 group gone", err)
	}
	tree.Close()
}

// On a hybrid host instance.limits go to the v1 <start>/instance, never to tend's
// starting cgroup, and every container and init container joins the v1 hierarchies of
// those limits (below <start>/instance), also one without limits of its own: else the
// instance's limits would bound none of it.
func TestHybridInstanceLimitsBelowTend(t *testing.T) {
	root, v1, unified := fakeHybrid(t)
	tree, err := Open(root, "required", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if errs := tree.SetLimits(Limits{Memory: 96 << 20}); errs != nil {
		t.Fatalf("Tree.SetLimits: %v", errs)
	}
	if exists(filepath.Join(v1, "memory/pod/memory.limit_in_bytes")) {
		t.Error("memory.limit_in_bytes written to tend's starting cgroup")
	}
	if got := readString(t, filepath.Join(v1, "memory/pod/instance/memory.limit_in_bytes")); got != "100663296" {
		t.Errorf("<start>/instance/memory.limit_in_bytes = %q, want 100663296", got)
	}
	plain, err := tree.Group(KindContainers, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if errs := plain.SetLimits(Limits{}); errs != nil {
		t.Fatal(errs)
	}
	setup, err := tree.Group(KindInit, "setup")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Path() != "/pod/instance/containers/plain" || !exists(filepath.Join(unified, "instance/containers/plain")) {
		t.Errorf("plain: Path %q; want /pod/instance/containers/plain in cgroup2", plain.Path())
	}
	for g, want := range map[*Group]string{plain: "memory/pod/instance/containers/plain/cgroup.procs", setup: "memory/pod/instance/init/setup/cgroup.procs"} {
		if got := g.ProcsFiles(); !slices.Equal(got, []string{filepath.Join(v1, want)}) {
			t.Errorf("%s ProcsFiles = %v, want [%s]", g.Path(), got, want)
		}
	}
	plain.Remove()
	setup.Remove()
}

// A hybrid host without usable v1 hierarchies still places containers in the cgroup2
// hierarchy; each limit, instance-wide or a container's, is then an error naming it.
func TestHybridWithoutV1LimitsAreErrors(t *testing.T) {
	root, v1, unified := fakeHybrid(t)
	for _, list := range []string{"memory", "pids", "cpu,cpuacct"} {
		if err := os.RemoveAll(filepath.Join(v1, list)); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := Open(root, "required", 1)
	if err != nil || tree.Mode != ModeV1 || tree.unified != unified {
		t.Fatalf("Open = %+v, %v; want hybrid", tree, err)
	}
	defer tree.Close()
	g, err := tree.Group(KindContainers, "web")
	if err != nil || g.FD() < 0 {
		t.Fatalf("Group = %v; want placement by FD", err)
	}
	errs := g.SetLimits(Limits{Memory: 1 << 30, Pids: 10})
	if len(errs) != 2 || errs[0].Limit != "memory" || errs[1].Limit != "pids" || !strings.Contains(errs[0].Error(), "no cgroup hierarchy") {
		t.Errorf("SetLimits = %v; want a memory and a pids error", errs)
	}
	if errs := tree.SetLimits(Limits{CPU: 1}); len(errs) != 1 || errs[0].Limit != "cpu" {
		t.Errorf("instance SetLimits = %v; want a cpu error", errs)
	}
}

// A second tend in the same cgroups is off (the flock rule on the cgroup2
// <start>/containers); the first's v1 groups, made at its first limit, are locked too.
func TestHybridSecondTreeIsOff(t *testing.T) {
	root, v1, unified := fakeHybrid(t)
	first, err := Open(root, "auto", 1)
	if err != nil || first.unified == "" {
		t.Fatalf("first Open = %+v, %v; want hybrid", first, err)
	}
	defer first.Close()
	want := "another tend uses " + filepath.Join(unified, "containers")
	if second, err := Open(root, "auto", 2); err != nil || second.Mode != ModeOff || second.Reason != want {
		t.Errorf("second Open = %+v, %v; want off, %q", second, err, want)
	}
	g, _ := first.Group(KindContainers, "web")
	if errs := g.SetLimits(Limits{Memory: 1 << 30}); errs != nil {
		t.Fatal(errs)
	}
	if _, err := lockContainers(filepath.Join(v1, "memory/pod"), ""); err == nil || !strings.Contains(err.Error(), "another tend uses") {
		t.Errorf("lock of v1 memory <start>/containers after the first limit = %v, want held", err)
	}
}

func TestHybridKillAndUsage(t *testing.T) {
	root, v1, unified := fakeHybrid(t)
	tree, _ := Open(root, "auto", 1)
	defer tree.Close()
	g, _ := tree.Group(KindContainers, "web")
	dir := filepath.Join(unified, "containers/web")
	// Kill freezes the cgroup2 group, which holds every process.
	sleep := reapedSleep(t)
	writeFixture(t, filepath.Join(dir, "cgroup.freeze"), "0")
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), itoa(int64(sleep.Process.Pid))+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	g.Kill(ctx) // the fake cgroup.procs keeps the pid: Kill ends by ctx
	if alive(sleep.Process.Pid) || readString(t, filepath.Join(dir, "cgroup.freeze")) != "0" {
		t.Error("Kill did not kill the process listed in the cgroup2 group, or left it frozen")
	}
	// Without v1 groups: CPU from cpu.stat, memory and pids from /proc over cgroup.procs.
	writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 1500000\nuser_usec 1000000\n")
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), itoa(int64(os.Getpid()))+"\n")
	u, err := g.Usage()
	if err != nil || u.CPUSeconds != 1.5 || u.MemoryBytes <= 0 || u.Pids < 1 || u.OOMKills != 0 {
		t.Errorf("Usage without v1 groups = %+v, %v; want 1.5 s, this process's RSS and threads", u, err)
	}
	// With a memory limit: memory and OOM kills from the v1 memory group.
	g.SetLimits(Limits{Memory: 1 << 30})
	mem := filepath.Join(v1, "memory/pod/containers/web")
	writeFixture(t, filepath.Join(mem, "memory.usage_in_bytes"), "104857600\n")
	writeFixture(t, filepath.Join(mem, "memory.stat"), "total_inactive_file 4857600\n")
	writeFixture(t, filepath.Join(mem, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	u, err = g.Usage()
	if err != nil || u.CPUSeconds != 1.5 || u.MemoryBytes != 100000000 || u.OOMKills != 2 || u.Pids < 1 {
		t.Errorf("Usage with a memory group = %+v, %v; want 1.5 s, 100000000 bytes, 2 OOM kills", u, err)
	}
}

// realHybridTree is realV1Tree with a cgroup2 group tend-test-<random> below the test
// process's own at /sys/fs/cgroup/unified: a hybrid tree.
func realHybridTree(t *testing.T) *Tree {
	t.Helper()
	const mount = "/sys/fs/cgroup/unified"
	paths := realV1Paths(t)
	own, ok := paths[""]
	if !ok || !exists(filepath.Join(mount, "cgroup.controllers")) {
		t.Skip("no cgroup2 hierarchy at " + mount)
	}
	start := filepath.Join(own, testName())
	if err := os.Mkdir(filepath.Join(mount, start), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(filepath.Join(mount, start)) })
	tree := &Tree{Mode: ModeV1, root: "/", paths: paths} // as detect makes a hybrid one
	if err := tree.openUnified(mount, start); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.v1Places(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tree.Close(); err != nil {
			t.Error(err)
		}
	})
	if tree.unified == "" {
		t.Fatal("openUnified did not take " + start)
	}
	return tree
}

// cgroupOf is the path of hierarchy list ("" for cgroup2) in a /proc/PID/cgroup text.
func cgroupOf(text, list string) string {
	for _, line := range strings.Split(text, "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == list {
			return parts[2]
		}
	}
	return ""
}

// A group without limits places a process by clone3 alone, in the cgroup2 group and
// in no v1 group, and Kill takes a setsid grandchild from there.
func TestHybridRealPlacementByFDAndKill(t *testing.T) {
	tree := realHybridTree(t)
	g := realGroup(t, tree, "web")
	if files := g.ProcsFiles(); files != nil {
		t.Fatalf("ProcsFiles = %v, want none", files)
	}
	out, err := cloneInto(g, "cat", "/proc/self/cgroup").Output()
	if err != nil {
		t.Fatal(err)
	}
	if cgroupOf(string(out), "") != g.Path() || strings.HasSuffix(cgroupOf(string(out), "memory"), "/containers/web") {
		t.Errorf("child's /proc/self/cgroup:\n%s\nwant 0::%s and memory outside containers/web", out, g.Path())
	}
	cmd := cloneInto(g, "sh", "-c", `setsid sh -c "sleep 100 &" & exec sleep 100`)
	startCmd(t, cmd)
	pids := sleepers(t, g, 2)
	if u, err := g.Usage(); err != nil || u.CPUSeconds <= 0 || u.MemoryBytes <= 0 || u.Pids < 2 {
		t.Errorf("Usage = %+v, %v; want CPU from cpu.stat, memory and pids from /proc", u, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d survived the kill", pid)
		}
	}
	if got := populated(readString(t, filepath.Join(g.unified, "cgroup.events"))); got != "0" {
		t.Errorf("populated = %q after Kill", got)
	}
	testNextRunStarts(t, g)
}

// A group with a memory limit also joins the v1 memory group, through the shim: the
// limit holds, and its OOM kill is counted.
func TestHybridRealMemoryLimitJoinsV1(t *testing.T) {
	tree := realHybridTree(t)
	g := realGroup(t, tree, "hog")
	if errs := g.SetLimits(Limits{Memory: 64 << 20}); errs != nil {
		t.Fatal(errs)
	}
	memDir := dirOf(g.places, "memory")
	if files := g.ProcsFiles(); !slices.Equal(files, []string{filepath.Join(memDir, "cgroup.procs")}) {
		t.Fatalf("ProcsFiles = %v, want the v1 memory group's alone", files)
	}
	cat := shimCommand(g, "cat", "/proc/self/cgroup")
	cat.SysProcAttr.UseCgroupFD, cat.SysProcAttr.CgroupFD = true, g.FD()
	out, err := cat.Output()
	if err != nil {
		t.Fatal(err)
	}
	if cgroupOf(string(out), "") != g.Path() || !strings.HasSuffix(cgroupOf(string(out), "memory"), "/containers/hog") {
		t.Errorf("child's /proc/self/cgroup:\n%s\nwant 0::%s and memory .../containers/hog", out, g.Path())
	}
	hog := shimCommand(g, os.Args[0], "-test.run=^$")
	hog.SysProcAttr.UseCgroupFD, hog.SysProcAttr.CgroupFD = true, g.FD()
	hog.Env = append(hog.Env, "TEND_CGROUP_ALLOC=200")
	err = hog.Run()
	if ws, ok := hog.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("a process allocating 200 MiB under 64 MiB ended with %v, want SIGKILL", err)
	}
	if u, err := g.Usage(); err != nil || u.OOMKills != 1 {
		t.Errorf("Usage = %+v, %v; want 1 OOM kill", u, err)
	}
	if n, err := g.OOMKills(); err != nil || n != 1 {
		t.Errorf("OOMKills = %d, %v; want 1, as Usage", n, err)
	}
}

// cloneInto is a command started in g by clone3's CLONE_INTO_CGROUP, in a process group
// of its own.
func cloneInto(g *Group, argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD(), Setpgid: true}
	return cmd
}

// RemoveEmpty removes nothing from a group a process is still in, and it keeps
// working (its usage reads); once the group is emptied it is removed in every
// hierarchy, the v1 one its limit made too.
func TestHybridRealRemoveEmpty(t *testing.T) {
	tree := realHybridTree(t)
	g := realGroup(t, tree, "web")
	if errs := g.SetLimits(Limits{Pids: 50}); errs != nil {
		t.Fatal(errs)
	}
	pidsDir := dirOf(g.places, "pids")
	cmd := cloneInto(g, "sleep", "100")
	startCmd(t, cmd)
	sleepers(t, g, 1)
	if removed, err := g.RemoveEmpty(); removed || err != nil {
		t.Fatalf("RemoveEmpty of a group with a process = %v, %v; want false, nil", removed, err)
	}
	if _, err := g.Usage(); err != nil {
		t.Errorf("Usage after a RemoveEmpty that removed nothing: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if removed, err := g.RemoveEmpty(); !removed || err != nil {
		t.Fatalf("RemoveEmpty of an emptied group = %v, %v; want true, nil", removed, err)
	}
	for _, dir := range []string{g.unified, pidsDir} {
		if exists(dir) {
			t.Errorf("%s not removed", dir)
		}
	}
}
