package tests

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// cpuTime is the CPU time (user + system) pid has used so far, from /proc/PID/stat.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the comm: state(0) ppid(1) ... utime(11) stime(12), in clock ticks.
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ, 100 on every Linux that Go runs on
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// A container waiting for its schedule costs tend nothing: a daily job once kept
// tend busy on a whole core until its first run.
func TestScheduleWaitingIsIdle(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "300"]
  - name: backup
    command: ["true"]
    restart_policy: {mode: on_failure}
    schedule: "30 3 * * *"
`)
	tp.waitStatus(10*time.Second, "backup waiting with its next time", func(d status.Document) bool {
		c := containerStatus(d, "backup")
		return c.State == status.Waiting && c.NextStartAt != nil && containerStatus(d, "web").State == status.Running
	})
	pid := tp.pid()
	before, wallBefore := cpuTime(t, pid), time.Now()
	// Measuring over a period, not waiting for an event: tend must stay idle.
	time.Sleep(2 * time.Second)
	used, wall := cpuTime(t, pid)-before, time.Since(wallBefore)
	t.Logf("tend used %v of CPU in %v", used, wall)
	if used > wall/4 {
		t.Errorf("tend used %v of CPU in %v while a container waited for its schedule; want it idle", used, wall)
	}
}

// A scheduled container never makes the instance not ready: not while it waits for
// its time, not after a run that failed (that shows in its last_exit).
func TestScheduledContainerKeepsInstanceReady(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "300"]
  - name: backup
    command: ["true"]
    restart_policy: {mode: on_failure}
    schedule: "30 3 * * *"
  - name: flaky
    command: ["sh", "-c", "exit 3"]
    restart_policy: {mode: never}
    schedule: "@every 1s"
`)
	doc := tp.waitStatus(10*time.Second, "flaky's failed run", func(d status.Document) bool {
		x := containerStatus(d, "flaky").LastExit
		return containerStatus(d, "web").Ready.True() && x != nil && x.Code == 3
	})
	if !doc.Ready.True() {
		t.Errorf("instance ready = %+v with a scheduled container waiting and one whose last run failed; want True", doc.Ready)
	}
	if c := containerStatus(doc, "backup"); c.State != status.Waiting || !c.Ready.True() || c.Ready.Reason != status.ReasonScheduled {
		t.Errorf("backup: state %s, ready %+v; want waiting, ready True with reason Scheduled", c.State, c.Ready)
	}
	resp, err := tp.client().Get("http://tend/v1/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/ready = %d, want 200", resp.StatusCode)
	}
	if _, errOut, code := runCLI(t, tp.dir, "status", "--ready", "--listen", "unix:"+tp.sock); code != 0 {
		t.Errorf("tend status --ready exit %d, want 0: %s", code, errOut)
	}
}
