package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// alive reports whether pid is a living (not zombie) process.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// Processes that left their container's process group (setsid, a daemon's double
// fork) do not outlive tend, also when tend is not PID 1; a stopped one is woken so it
// can handle its SIGTERM. With cgroups off: that is the sweep when tend exits (with
// cgroups each container's exit takes them, TestGrandchildGoneBeforeRestart).
func TestNothingOutlivesTend(t *testing.T) {
	tp := start(t, `
instance: {cgroups: off}
containers:
  - name: escaper
    command: ["sh", "-c", "setsid sleep 600 & echo $! > {DIR}/setsid.pid; (setsid sh -c 'sleep 600 & echo $! > {DIR}/daemon.pid' &); exec sleep 600"]
  - name: stopped
    command: ["sh", "-c", "trap 'echo term > {DIR}/stopped.term; exit 0' TERM; touch {DIR}/stopped.up; sleep 600 & wait $!"]
    stop_policy: {term_timeout_ms: 20000}
`, runOpts{as: asChild})
	var pids []int
	for _, f := range []string{"setsid.pid", "daemon.pid"} {
		var pid int
		waitFor(t, 10*time.Second, f+" written", func() (bool, string) {
			b, _ := os.ReadFile(filepath.Join(tp.dir, f))
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			pid = n
			return err == nil && n > 0, string(b)
		})
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "stopped.up"))
	doc := tp.waitStatus(10*time.Second, "stopped running", func(d status.Document) bool {
		return containerStatus(d, "stopped").Pid != nil
	})
	if err := syscall.Kill(*containerStatus(doc, "stopped").Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	sent, exited := termAndWait(t, tp, 15*time.Second)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d that left its container's group outlived tend", pid)
		}
	}
	waitFile(t, time.Second, filepath.Join(tp.dir, "stopped.term"))
	if took := exited.Sub(sent); took > 10*time.Second {
		t.Errorf("shutdown took %v: the stopped process was not woken for its SIGTERM", took)
	}
}

// children lists the pids of pid's children.
func children(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// pipes counts the pipes tend holds open.
func pipes(t *testing.T, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, _ := os.Readlink(filepath.Join(dir, e.Name())); strings.HasPrefix(target, "pipe:") {
			n++
		}
	}
	return n
}

// What a container's process leaves behind in its process group is killed when the
// process exits, so restarts accumulate neither processes nor output pipes in tend.
func TestRestartsLeaveNothingBehind(t *testing.T) {
	tp := start(t, `
containers:
  - name: flap
    command: [sh, -c, "echo x >> {DIR}/starts; sleep 600 & if [ $(wc -l < {DIR}/starts) -ge 30 ]; then exec sleep 600; fi; exit 1"]
    restart_policy: {min_period_ms: 0, max_jitter_ms: 0}
`)
	pid := tp.pid()
	tp.waitStatus(20*time.Second, "30 starts, the last one running", func(d status.Document) bool {
		c := containerStatus(d, "flap")
		return c.Restarts >= 29 && c.State == status.Running
	})
	// The leftovers of the exited runs die (and their pipes close) soon after each exit.
	waitFor(t, 5*time.Second, "the leftovers of 29 exited runs gone", func() (bool, string) {
		kids, n := children(t, pid), pipes(t, pid)
		return len(kids) <= 3 && n <= 10, fmt.Sprintf("%d children %v, %d pipes", len(kids), kids, n)
	})
}
