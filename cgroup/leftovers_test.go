package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// leftover makes dir a cgroup left by a tend that crashed: marked with instance (""
// for none), with a process in group NAME below it. A goroutine does the kernel's part
// once the process is killed: its fake cgroup.procs goes (so the fake directory can be
// removed). It returns the process.
func leftover(t *testing.T, dir, instance, name string) int {
	t.Helper()
	group := filepath.Join(dir, name)
	sleep := reapedSleep(t)
	writeFixture(t, filepath.Join(group, "cgroup.procs"), itoa(int64(sleep.Process.Pid))+"\n")
	if instance != "" {
		if err := unix.Setxattr(dir, markXattrs[0], []byte(instance), 0); err != nil {
			t.Skipf("cannot set %s here: %v", markXattrs[0], err)
		}
	}
	go func() {
		for alive(sleep.Process.Pid) {
			time.Sleep(5 * time.Millisecond)
		}
		os.Remove(filepath.Join(group, "cgroup.procs"))
	}()
	return sleep.Process.Pid
}

// At start tend kills and removes what an earlier tend of the same instance left in
// its /containers and /init (nested below /instance too), whatever their names, and
// marks the groups it makes with its instance.
func TestLeftoversOfTheSameInstanceAreRemoved(t *testing.T) {
	root, start := fakeV2(t, "cpu memory pids")
	gone := leftover(t, filepath.Join(start, "containers"), "/srv/a", "b")
	nested := leftover(t, filepath.Join(start, "instance/init"), "/srv/a", "setup")
	tree, err := OpenInstance(root, "required", 4242, "/srv/a")
	if err != nil || tree.Mode != ModeV2 {
		t.Fatalf("Open = %+v, %v; want v2", tree, err)
	}
	defer tree.Close()
	for _, pid := range []int{gone, nested} {
		if alive(pid) {
			t.Errorf("process %d of the earlier tend's groups lives on", pid)
		}
	}
	for _, dir := range []string{"containers/b", "instance/init/setup", "instance/init", "instance"} {
		if exists(filepath.Join(start, dir)) {
			t.Errorf("%s is left", dir)
		}
	}
	if got := instanceMark(filepath.Join(start, "containers")); got != "/srv/a" {
		t.Errorf("<start>/containers mark = %q, want /srv/a", got)
	}
	tree.SetLimits(Limits{Memory: 1 << 30})
	if _, err := tree.Group(KindInit, "setup"); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"instance/containers", "instance/init"} {
		if got := instanceMark(filepath.Join(start, dir)); got != "/srv/a" {
			t.Errorf("<start>/%s mark = %q, want /srv/a", dir, got)
		}
	}
}

// Groups another instance left (or that carry no mark) are not tend's to clean: it
// runs with cgroups off and a reason naming them, or fails with `required`.
func TestLeftoversOfAnotherInstanceAreLeft(t *testing.T) {
	for _, mark := range []string{"/srv/other", ""} {
		root, start := fakeV2(t, "cpu memory pids")
		pid := leftover(t, filepath.Join(start, "containers"), mark, "b")
		tree, err := OpenInstance(root, "auto", 4242, "/srv/a")
		want := filepath.Join(start, "containers") + " holds the cgroups of instance " + mark
		if mark == "" {
			want = filepath.Join(start, "containers") + " holds cgroups that no tend marked"
		}
		if err != nil || tree.Mode != ModeOff || !strings.HasPrefix(tree.Reason, want) {
			t.Errorf("mark %q: Open = %+v, %v; want off, %q", mark, tree, err, want)
		}
		if _, err := OpenInstance(root, "required", 4242, "/srv/a"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("mark %q: Open required = %v, want an error naming %q", mark, err, want)
		}
		if !alive(pid) || !exists(filepath.Join(start, "containers/b")) {
			t.Errorf("mark %q: another's group was cleaned", mark)
		}
		if exists(filepath.Join(start, "tend")) {
			t.Errorf("mark %q: tend moved itself into a tree it does not use", mark)
		}
	}
}
