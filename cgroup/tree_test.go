package cgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeV2 builds a cgroup2 tree under a temp root where tend started in /pod/app with
// the given controllers offered to it.
func fakeV2(t *testing.T, controllers string) (root, start string) {
	root = t.TempDir()
	writeFixture(t, filepath.Join(root, "proc/self/cgroup"), "0::/pod/app\n")
	mount := filepath.Join(root, "sys/fs/cgroup")
	writeFixture(t, filepath.Join(mount, "cgroup.controllers"), "cpuset cpu io memory pids\n")
	start = filepath.Join(mount, "pod/app")
	writeFixture(t, filepath.Join(start, "cgroup.controllers"), controllers+"\n")
	writeFixture(t, filepath.Join(start, "cgroup.procs"), "4242\n")
	writeFixture(t, filepath.Join(start, "cgroup.subtree_control"), "")
	return root, start
}

func TestOpenV2MovesToLeafAndEnablesControllers(t *testing.T) {
	root, start := fakeV2(t, "cpu io memory pids")
	tree, err := Open(root, "auto", 4242)
	if err != nil || tree.Mode != ModeV2 {
		t.Fatalf("Open = %+v, %v; want mode v2", tree, err)
	}
	if got := readString(t, filepath.Join(start, "tend/cgroup.procs")); got != "4242" {
		t.Errorf("tend/cgroup.procs = %q, want tend's pid 4242 (the leaf move)", got)
	}
	for _, dir := range []string{start, filepath.Join(start, "containers")} {
		if got := readString(t, filepath.Join(dir, "cgroup.subtree_control")); got != "+cpu +memory +pids" {
			t.Errorf("%s/cgroup.subtree_control = %q, want +cpu +memory +pids", dir, got)
		}
	}
	if exists(filepath.Join(start, "init")) {
		t.Error("<start>/init made before an init container needs it")
	}
	for range 2 { // made once, for the first
		if _, err := tree.Group(KindInit, "migrate"); err != nil {
			t.Fatal(err)
		}
	}
	if got := readString(t, filepath.Join(start, "init/cgroup.subtree_control")); got != "+cpu +memory +pids" {
		t.Errorf("init/cgroup.subtree_control = %q, want +cpu +memory +pids", got)
	}
	if !exists(filepath.Join(start, "init/migrate")) {
		t.Error("no init/migrate")
	}
	g, err := tree.Group(KindContainers, "web")
	if err != nil {
		t.Fatal(err)
	}
	if g.Path() != "/pod/app/containers/web" || g.FD() < 0 {
		t.Errorf("Path, FD = %q, %d; want /pod/app/containers/web and an open fd", g.Path(), g.FD())
	}
	if err := g.Remove(); err != nil {
		t.Error(err)
	}
	if exists(filepath.Join(start, "containers/web")) {
		t.Error("Remove left containers/web")
	}
}

func TestV2LimitsWrittenWhere(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	tree, err := Open(root, "required", 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := tree.Group(KindInit, "migrate")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(start, "init/migrate")
	writeFixture(t, filepath.Join(dir, "memory.swap.max"), "max\n")
	if errs := g.SetLimits(Limits{CPU: 1.5, Memory: 512 << 20, Pids: 200}); errs != nil {
		t.Fatalf("SetLimits: %v", errs)
	}
	want := map[string]string{"cpu.max": "150000 100000", "memory.max": "536870912",
		"memory.swap.max": "0", "memory.oom.group": "1", "pids.max": "200"}
	for file, v := range want {
		if got := readString(t, filepath.Join(dir, file)); got != v {
			t.Errorf("%s = %q, want %q", file, got, v)
		}
	}
	// Below the kernel's 1 ms quota it is raised to it, as kubelet does.
	g.SetLimits(Limits{CPU: 0.001})
	if got := readString(t, filepath.Join(dir, "cpu.max")); got != "1000 100000" {
		t.Errorf("cpu.max for 1m = %q, want 1000 100000", got)
	}
}

// instance.limits go to <start>/instance, a cgroup tend makes that holds /containers
// and /init and not tend (its leaf <start>/tend): never to the starting cgroup, which
// tend did not make and which whatever launched tend keeps after it exits.
func TestV2InstanceLimitsBelowTend(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	tree, err := Open(root, "required", 4242)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if errs := tree.SetLimits(Limits{CPU: 2, Memory: 2 << 30}); errs != nil {
		t.Fatalf("Tree.SetLimits: %v", errs)
	}
	for _, f := range []string{"memory.max", "cpu.max", "memory.oom.group"} {
		if exists(filepath.Join(start, f)) {
			t.Errorf("%s written to tend's starting cgroup", f)
		}
	}
	inst := filepath.Join(start, "instance")
	want := map[string]string{"memory.max": "2147483648", "cpu.max": "200000 100000", "cgroup.subtree_control": "+cpu +memory +pids"}
	for f, v := range want {
		if got := readString(t, filepath.Join(inst, f)); got != v {
			t.Errorf("<start>/instance/%s = %q, want %q", f, got, v)
		}
	}
	if exists(filepath.Join(inst, "memory.oom.group")) {
		t.Error("memory.oom.group on the instance's group: one OOM kill would take every container")
	}
	if got := readString(t, filepath.Join(start, "tend/cgroup.procs")); got != "4242" {
		t.Errorf("tend/cgroup.procs = %q, want tend in its leaf, outside <start>/instance", got)
	}
	web, err := tree.Group(KindContainers, "web")
	if err != nil {
		t.Fatal(err)
	}
	setup, err := tree.Group(KindInit, "setup")
	if err != nil {
		t.Fatal(err)
	}
	if web.Path() != "/pod/app/instance/containers/web" || setup.Path() != "/pod/app/instance/init/setup" {
		t.Errorf("paths %q, %q; want below /pod/app/instance", web.Path(), setup.Path())
	}
	if !exists(filepath.Join(inst, "containers/web")) || !exists(filepath.Join(inst, "init/setup")) {
		t.Error("the groups are not below <start>/instance")
	}
	web.Remove()
	setup.Remove()
}

// A second tree in the same starting cgroup is off, and does not move itself into
// the first one's leaf; once the first is closed the lock is free again.
func TestV2SecondTreeInOneCgroupIsOff(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	first, err := Open(root, "auto", 4242)
	if err != nil || first.Mode != ModeV2 {
		t.Fatalf("first Open = %+v, %v", first, err)
	}
	second, err := Open(root, "auto", 5353)
	want := "another tend uses " + filepath.Join(start, "containers")
	if err != nil || second.Mode != ModeOff || second.Reason != want {
		t.Fatalf("second Open = %+v, %v; want off, %q", second, err, want)
	}
	if got := readString(t, filepath.Join(start, "tend/cgroup.procs")); got != "4242" {
		t.Errorf("tend/cgroup.procs = %q: the second tree moved itself", got)
	}
	if _, err := Open(root, "required", 5353); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open required = %v, want an error naming %q", err, want)
	}
	first.Close()
	third, err := Open(root, "auto", 6464)
	if err != nil || third.Mode != ModeV2 {
		t.Fatalf("Open after Close = %+v, %v; want v2", third, err)
	}
	third.Close()
}

func TestV2MissingControllerIsLimitError(t *testing.T) {
	root, start := fakeV2(t, "memory io")
	tree, err := Open(root, "auto", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(start, "cgroup.subtree_control")); got != "+memory" {
		t.Errorf("subtree_control = %q, want +memory (only what is offered)", got)
	}
	g, _ := tree.Group(KindContainers, "web")
	errs := g.SetLimits(Limits{CPU: 1, Memory: 1 << 20, Pids: 10})
	var limits []string
	for _, e := range errs {
		limits = append(limits, e.Limit)
		if !strings.Contains(e.Err.Error(), "no "+e.Limit+" controller") {
			t.Errorf("error %q does not say the controller is missing", e)
		}
	}
	if !slices.Equal(limits, []string{"cpu", "pids"}) {
		t.Errorf("unapplied limits = %v, want [cpu pids]", limits)
	}
}

func TestV2UsageFromFiles(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	tree, _ := Open(root, "auto", 1)
	g, _ := tree.Group(KindContainers, "web")
	dir := filepath.Join(start, "containers/web")
	writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n")
	writeFixture(t, filepath.Join(dir, "memory.current"), "104857600\n")
	writeFixture(t, filepath.Join(dir, "memory.stat"), "anon 52428800\nfile 52428800\nactive_file 10485760\ninactive_file 41943040\n")
	writeFixture(t, filepath.Join(dir, "pids.current"), "7\n")
	writeFixture(t, filepath.Join(dir, "memory.events"), "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 1\n")
	u, err := g.Usage()
	want := Usage{CPUSeconds: 2.5, MemoryBytes: 104857600 - 41943040, Pids: 7, OOMKills: 2}
	if err != nil || u != want {
		t.Errorf("Usage = %+v, %v; want %+v", u, err, want)
	}
}

// Kill freezes the group, kills what it lists and thaws it, and never writes
// cgroup.kill (which would kill the next run started into the group: see Kill).
func TestV2KillFreezesKillsThaws(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	tree, _ := Open(root, "auto", 1)
	g, _ := tree.Group(KindContainers, "web")
	dir := filepath.Join(start, "containers/web")
	writeFixture(t, filepath.Join(dir, "cgroup.kill"), "")
	writeFixture(t, filepath.Join(dir, "cgroup.freeze"), "0")
	writeFixture(t, filepath.Join(dir, "cgroup.events"), "populated 1\nfrozen 0\n")
	sleep := reapedSleep(t)
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), itoa(int64(sleep.Process.Pid))+"\n")
	done := make(chan error, 1)
	go func() { done <- g.Kill(context.Background()) }()
	waitFor(t, "the sleep killed", func() (bool, string) { return !alive(sleep.Process.Pid), "alive" })
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), "")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Kill did not return once the group was empty")
	}
	if got := readString(t, filepath.Join(dir, "cgroup.freeze")); got != "0" {
		t.Errorf("cgroup.freeze = %q after Kill, want thawed (0)", got)
	}
	if got := readString(t, filepath.Join(dir, "cgroup.kill")); got != "" {
		t.Errorf("cgroup.kill = %q, want never written", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), "999999999\n")
	if err := g.Kill(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Kill of a group that stays populated = %v, want the deadline", err)
	}
}

func TestV2GroupLeftByACrashIsKilled(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	dir := filepath.Join(start, "containers/web")
	sleep := reapedSleep(t)
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), itoa(int64(sleep.Process.Pid))+"\n")
	go func() { // the kernel's part: a killed process leaves cgroup.procs
		for alive(sleep.Process.Pid) {
			time.Sleep(5 * time.Millisecond)
		}
		os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644)
	}()
	tree, _ := Open(root, "auto", 1)
	if _, err := tree.Group(KindContainers, "web"); err != nil {
		t.Fatal(err)
	}
	if alive(sleep.Process.Pid) {
		t.Error("the process of the leftover group lives on")
	}
}

func TestOpenOff(t *testing.T) {
	empty := t.TempDir()
	os.MkdirAll(filepath.Join(empty, "sys/fs/cgroup"), 0o755)
	tests := []struct {
		root, want, reason string
	}{
		{empty, "auto", "no cgroup hierarchy under /sys/fs/cgroup"},
		{empty, "off", "want off"},
		{filepath.Join(empty, "nothing"), "auto", "no cgroup hierarchy under /sys/fs/cgroup"},
	}
	for _, tt := range tests {
		tree, err := Open(tt.root, tt.want, 1)
		if err != nil || tree.Mode != ModeOff || tree.Reason != tt.reason {
			t.Errorf("Open(%s, %s) = %+v, %v; want off, %q", tt.root, tt.want, tree, err, tt.reason)
		}
	}
	if _, err := Open(empty, "required", 1); err == nil || !strings.Contains(err.Error(), "no cgroup hierarchy") {
		t.Errorf("Open(required) = %v, want an error naming why", err)
	}
	tree, _ := Open(empty, "off", 1)
	g, err := tree.Group(KindContainers, "web")
	if err != nil || g.Path() != "" || g.FD() != -1 || g.Kill(context.Background()) != nil {
		t.Fatalf("Group when off = %+v, %v; want a group that does nothing", g, err)
	}
	errs := g.SetLimits(Limits{Memory: 1, Pids: 1})
	if len(errs) != 2 || errs[0].Error() != "memory: cgroups are off: want off" {
		t.Errorf("SetLimits when off = %v, want one error per limit naming why", errs)
	}
}

// TestOpenReadOnly runs itself in a mount namespace with an empty read-only tmpfs over
// a fake /sys/fs/cgroup, as tend sees a container without a writable cgroup tree.
func TestOpenReadOnly(t *testing.T) {
	if root := os.Getenv("TEND_CGROUP_RO_ROOT"); root != "" {
		tree, err := Open(root, "auto", 1)
		if err != nil || tree.Mode != ModeOff || tree.Reason != "/sys/fs/cgroup is read-only" {
			t.Errorf("Open(auto) = %+v, %v; want off, /sys/fs/cgroup is read-only", tree, err)
		}
		if _, err := Open(root, "required", 1); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("Open(required) = %v, want an error saying read-only", err)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only tmpfs needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	root := t.TempDir()
	writeFixture(t, filepath.Join(root, "proc/self/cgroup"), "0::/\n")
	os.MkdirAll(filepath.Join(root, "sys/fs/cgroup"), 0o755)
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs -o ro tmpfs "$1/sys/fs/cgroup" && exec "$2" -test.run '^TestOpenReadOnly$' -test.v`,
		"sh", root, os.Args[0])
	cmd.Env = append(os.Environ(), "TEND_CGROUP_RO_ROOT="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in a mount namespace: %v\n%s", err, out)
	}
}

// reapedSleep starts a sleep that a goroutine of its own waits for, so that once killed
// it is gone (not a zombie), and that is killed when the test ends.
func reapedSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return cmd
}
