package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// grow is a program whose memory grows by 10 MiB every 100 ms up to 300 MiB, then
// waits: past any memory_restart of the tests well within a few seconds, never a
// danger to the machine.
const grow = `import time
a = []
while len(a) < 30:
    a.append(b"x" * (10 << 20))
    time.sleep(0.1)
time.sleep(600)
`

// hold is a program that takes about 50 MiB, says so in the file it is given, and
// waits.
const hold = `import sys, time
b = b"x" * (50 << 20)
open(sys.argv[1], "w").close()
time.sleep(600)
`

// writeProgram writes a Python program into a fresh directory and returns its path.
func writeProgram(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A process the kernel's OOM killer kills (it allocates past a 64Mi limit) is named:
// last_exit.reason OOMKilled, oom_kills counted, an OOMKilled warning event, and the
// container restarted by its policy (the second run only sleeps).
func TestOOMKilledNamed(t *testing.T) {
	cg := needTestCgroup(t)
	tp := start(t, `
containers:
  - name: hog
    command: ["sh", "-c", "[ -e {DIR}/ran ] && exec sleep 600; touch {DIR}/ran; exec python3 -c 'b = b\"x\" * (200 << 20); import time; time.sleep(60)'"]
    limits: {memory: 64Mi}
    restart_policy: {min_period_ms: 10, max_jitter_ms: 0}
`, runOpts{cgroup: cg})
	doc := tp.waitStatus(20*time.Second, "hog restarted after an OOM kill", func(d status.Document) bool {
		c := containerStatus(d, "hog")
		return c.Restarts >= 1 && c.State == status.Running && c.Usage.OOMKills >= 1
	})
	hog := containerStatus(doc, "hog")
	if hog.LastExit == nil || hog.LastExit.Reason != "OOMKilled" || hog.LastExit.Signal != "SIGKILL" || hog.Restarts != 1 || hog.Usage.OOMKills != 1 {
		t.Errorf("hog: restarts %d, usage %+v, last_exit %+v; want 1, oom_kills 1, OOMKilled by SIGKILL", hog.Restarts, hog.Usage, hog.LastExit)
	}
	var d status.ContainerDetail
	resp, err := tp.client().Get("http://tend/v1/containers/hog")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range d.Events {
		found = found || (e.Reason == status.ReasonOOMKilled && e.Type == status.Warning)
	}
	if !found {
		t.Errorf("no OOMKilled warning among the events %+v", d.Events)
	}
}

// Usage from the cgroup: a process holding ~50 MiB shows about that much, a busy loop
// shows its CPU time growing and a CPU %, and `tend status` prints CPU and MEM.
func TestUsageFromCgroup(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	cg := needTestCgroup(t)
	prog := writeProgram(t, "hold.py", hold)
	tp := start(t, `
containers:
  - name: mem
    command: ["python3", "`+prog+`", "{DIR}/held"]
  - name: busy
    command: ["sh", "-c", "while :; do :; done"]
    limits: {cpu: 0.2}
`, runOpts{cgroup: cg})
	waitFile(t, 20*time.Second, filepath.Join(tp.dir, "held"))
	var first float64
	doc := tp.waitStatus(10*time.Second, "usage sampled after mem took its memory", func(d status.Document) bool {
		busy := containerStatus(d, "busy")
		if first == 0 {
			first = busy.Usage.CPUSeconds
		}
		return containerStatus(d, "mem").Usage.MemoryBytes >= 45<<20 && busy.Usage.CPUSeconds > first && first > 0 && busy.Usage.CPUPercent > 0
	})
	mem, busy := containerStatus(doc, "mem"), containerStatus(doc, "busy")
	if m := mem.Usage.MemoryBytes; m < 45<<20 || m > 120<<20 || mem.Usage.Pids < 1 {
		t.Errorf("mem usage %+v: want 45..120 MiB and a pid", mem.Usage)
	}
	if busy.Usage.CPUPercent > 60 {
		t.Errorf("busy cpu_percent %.1f under a 0.2 core limit", busy.Usage.CPUPercent)
	}
	out, errOut, code := runCLI(t, tp.dir, "status", "--listen", "unix:"+tp.sock)
	if code != 0 {
		t.Fatalf("tend status: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "CPU") || !strings.Contains(out, "MEM") || !regexp.MustCompile(`(?m)^mem .* [0-9.]+% +[0-9.]+Mi `).MatchString(out) {
		t.Errorf("tend status has no CPU and MEM of mem:\n%s", out)
	}
}

// memory_restart restarts a container whose memory stays above it through its stop
// policy, from the cgroup and, with cgroups off, from /proc: last_exit says why and
// the restart counts.
func TestMemoryRestart(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	prog := writeProgram(t, "grow.py", grow)
	for _, mode := range []string{"auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			var opts runOpts
			if mode == "auto" {
				opts.cgroup = needTestCgroup(t)
			}
			tp := start(t, `
instance: {cgroups: `+mode+`}
containers:
  - name: leaky
    command: ["sh", "-c", "[ -e {DIR}/ran ] && touch {DIR}/restarted && exec sleep 600; touch {DIR}/ran; exec python3 `+prog+`"]
    memory_restart: 40Mi
`, opts)
			// Restarted with nobody reading the status: memory_restart has its
			// container sampled by itself.
			waitFile(t, 20*time.Second, filepath.Join(tp.dir, "restarted"))
			doc := tp.waitStatus(20*time.Second, "leaky restarted", func(d status.Document) bool {
				c := containerStatus(d, "leaky")
				return c.Restarts >= 1 && c.State == status.Running
			})
			leaky := containerStatus(doc, "leaky")
			if leaky.Restarts != 1 || leaky.LastExit == nil || leaky.LastExit.Reason != "memory above memory_restart" {
				t.Errorf("leaky: restarts %d, last_exit %+v; want 1, memory above memory_restart", leaky.Restarts, leaky.LastExit)
			}
			// tend's log reaches stderr through a queue of its own: wait for the line.
			if mode == "auto" {
				waitFor(t, 5*time.Second, "tend's log saying cgroups v1", func() (bool, string) {
					return strings.Contains(tp.stderr.String(), `"mode":"v1"`), tail(tp.stderr.String(), 2000)
				})
			} else if strings.Contains(tp.stderr.String(), `"mode":"v1"`) {
				t.Errorf("cgroups %s: tend's log says otherwise", mode)
			}
		})
	}
}

// Usage is read for whoever asks for it: until the status is asked for, only the
// container with memory_restart has its /proc/PID/stat read (the sampler keeps the
// file open from one read to the next); the first status shows every running
// container's usage all the same, read then; from then on every container is read.
func TestUsageSampledWhenAsked(t *testing.T) {
	tp := start(t, `
instance: {cgroups: off}
containers:
  - name: plain
    command: ["sleep", "601"]
  - name: limited
    command: ["sleep", "602"]
    memory_restart: 1Gi
`, runOpts{})
	tendPid := tp.pid()
	var plain, limited int
	waitFor(t, 10*time.Second, "both sleeps running", func() (bool, string) {
		for _, pid := range descendants(tendPid) {
			switch cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); string(cmdline) {
			case "sleep\x00601\x00":
				plain = pid
			case "sleep\x00602\x00":
				limited = pid
			}
		}
		return plain != 0 && limited != 0, fmt.Sprintf("plain %d, limited %d", plain, limited)
	})
	statOpen := func(pid int) bool {
		want := fmt.Sprintf("/proc/%d/stat", nsPid(pid)) // as tend's /proc names it
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", tendPid))
		for _, fd := range fds {
			if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", tendPid, fd.Name())); target == want {
				return true
			}
		}
		return false
	}
	waitFor(t, 10*time.Second, "limited's usage read", func() (bool, string) { return statOpen(limited), "" })
	time.Sleep(1500 * time.Millisecond) // more than a sample period: plain would be read by now
	if statOpen(plain) {
		t.Fatal("plain's usage read before anyone asked for it")
	}

	waitFor(t, 10*time.Second, "the API", func() (bool, string) {
		resp, err := tp.client().Get("http://tend/v1/live")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return true, ""
	})
	doc, ok := tp.status()
	if !ok {
		t.Fatal("no status")
	}
	for _, name := range []string{"plain", "limited"} {
		if u := containerStatus(doc, name).Usage; u.Pids < 1 || u.MemoryBytes <= 0 {
			t.Errorf("%s: usage %+v in the first status; want its sleep's memory and pid", name, u)
		}
	}
	waitFor(t, 5*time.Second, "plain's usage read every second once asked for", func() (bool, string) { return statOpen(plain), "" })
}

// nsPid is the pid of process pid (of this test's PID namespace) in its own innermost
// namespace: tend's, when tend runs as PID 1; 0 when it cannot be read (the process
// is gone).
func nsPid(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "NSpid:" {
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}
