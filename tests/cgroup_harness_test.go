package tests

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testControllers are the v1 hierarchies tend uses (cgroup.v1Controllers).
var testControllers = []string{"cpu", "cpuacct", "memory", "pids", "freezer"}

// unified is the cgroup2 hierarchy of a hybrid host, as a key of testCgroup's maps
// (/proc/PID/cgroup's "0::" line) and where it is mounted.
const (
	unified      = ""
	unifiedMount = "/sys/fs/cgroup/unified"
)

// testCgroup is a fresh cgroup v1 group, one directory per hierarchy tend uses (and the
// cgroup2 one on a hybrid host), below the test process's own: a tend started in it has
// a starting cgroup of its own.
type testCgroup struct {
	dirs  map[string]string // controller list ("memory", "cpu,cpuacct") -> directory
	paths map[string]string // controller list -> path as /proc/PID/cgroup shows it
}

// newTestCgroup creates a testCgroup, removed (after what is left in it is killed)
// when the test ends. nil where there are no writable v1 hierarchies (not root, a
// cgroup v2 host): tend then starts in the test's own cgroup.
func newTestCgroup(t *testing.T) *testCgroup {
	t.Helper()
	if os.Geteuid() != 0 || !exists("/sys/fs/cgroup/memory/cgroup.procs") || exists("/sys/fs/cgroup/cgroup.controllers") {
		return nil
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "tend-test-" + hex.EncodeToString(b)
	cg := &testCgroup{dirs: map[string]string{}, paths: map[string]string{}}
	t.Cleanup(cg.remove)
	for list, own := range ownCgroups(t) {
		mount := filepath.Join("/sys/fs/cgroup", list)
		if list == unified {
			mount = unifiedMount
		}
		if !exists(filepath.Join(mount, own)) {
			return nil // no cgroup namespace: /proc shows a path the mount does not have
		}
		dir := filepath.Join(mount, own, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("test cgroup: %v", err)
		}
		cg.dirs[list], cg.paths[list] = dir, filepath.Join(own, name)
	}
	return cg
}

// ownCgroups is /proc/self/cgroup's v1 lines of the hierarchies tend uses, and its
// cgroup2 line on a hybrid host.
func ownCgroups(t *testing.T) map[string]string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == unified && exists(filepath.Join(unifiedMount, "cgroup.controllers")) {
			out[unified] = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if slices.Contains(testControllers, c) {
				out[parts[1]] = parts[2]
			}
		}
	}
	return out
}

// wrap is a command that joins the group and execs the rest ("0" is the writer
// itself): tend and all it starts begin there. None for a nil group.
func (cg *testCgroup) wrap() []string {
	if cg == nil {
		return nil
	}
	script := ""
	for _, dir := range cg.dirs {
		script += "echo 0 > " + filepath.Join(dir, "cgroup.procs") + " || exit 125; "
	}
	return []string{"sh", "-c", script + `exec "$@"`, "sh"}
}

// path is the group's path in the hierarchy of controller, as /proc/PID/cgroup shows.
func (cg *testCgroup) path(controller string) string {
	for list, p := range cg.paths {
		if slices.Contains(strings.Split(list, ","), controller) {
			return p
		}
	}
	return ""
}

// dir is the group's directory in the hierarchy of controller.
func (cg *testCgroup) dir(controller string) string {
	for list, d := range cg.dirs {
		if slices.Contains(strings.Split(list, ","), controller) {
			return d
		}
	}
	return ""
}

// remove kills whatever is left in the group and below it, then removes it all,
// deepest first (a cgroup with children or processes cannot be removed).
func (cg *testCgroup) remove() {
	if cg == nil {
		return
	}
	for _, dir := range cg.dirs {
		var below []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				below = append(below, p)
			}
			return nil
		})
		slices.Reverse(below)
		for _, d := range below {
			killIn(d)
			rmdirEmptied(d)
		}
	}
}

// killIn SIGKILLs the processes in cgroup directory dir until it is empty, for at
// most 5 s.
func killIn(dir string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		pids := strings.Fields(string(data))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// rmdirEmptied removes cgroup directory dir, trying again for at most 5 s while the
// kernel says it is busy: a cgroup2 group is populated until its killed processes have
// fully exited, after cgroup.procs stopped listing them.
func rmdirEmptied(dir string) {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := syscall.Rmdir(dir); err != syscall.EBUSY || time.Now().After(deadline) {
			return
		}
	}
}
