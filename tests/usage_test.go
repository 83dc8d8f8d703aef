package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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
    command: ["sh", "-c", "[ -e {DIR}/ran ] && exec sleep 600; touch {DIR}/ran; exec python3 `+prog+`"]
    memory_restart: 40Mi
`, opts)
			doc := tp.waitStatus(20*time.Second, "leaky restarted", func(d status.Document) bool {
				c := containerStatus(d, "leaky")
				return c.Restarts >= 1 && c.State == status.Running
			})
			leaky := containerStatus(doc, "leaky")
			if leaky.Restarts != 1 || leaky.LastExit == nil || leaky.LastExit.Reason != "memory above memory_restart" {
				t.Errorf("leaky: restarts %d, last_exit %+v; want 1, memory above memory_restart", leaky.Restarts, leaky.LastExit)
			}
			if strings.Contains(tp.stderr.String(), `"mode":"v1"`) != (mode == "auto") {
				t.Errorf("cgroups %s: tend's log says otherwise", mode)
			}
		})
	}
}
