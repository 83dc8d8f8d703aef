package tests

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// zombieChildren lists the zombie children of pid (as seen from this namespace).
func zombieChildren(pid int) []int {
	var zs []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid, ok := procStat(p); ok && state == "Z" && ppid == pid {
			zs = append(zs, p)
		}
	}
	return zs
}

// tend as PID 1 reaps 500 orphaned grandchildren, leaves no zombie, and still sees
// the right exit code of its own child each time.
func TestPID1ReapsOrphansWithoutStealingExits(t *testing.T) {
	tp := start(t, `
containers:
  - name: spawner
    command: ["sh", "-c", "for i in $(seq 250); do (sleep 0.2 &); done; echo x >> {DIR}/rounds; exit 7"]
    restart_policy: {min_period_ms: 10, backoff: 50, max_jitter_ms: 0, stable_after_ms: 60000, mode: on_failure}
  - name: keeper
    command: ["sleep", "600"]
`, runOpts{as: asPID1})
	tendPid := tp.pid()
	// Stop the spawner after two rounds (500 orphans) by asking for it over the API,
	// while it waits 500 ms in backoff (backoff 50): a stop that came after the third
	// start would end that run with SIGTERM, not 7.
	waitFor(t, 30*time.Second, "two rounds of 250 orphans", func() (bool, string) {
		n := len(lines(t, filepath.Join(tp.dir, "rounds")))
		return n >= 2, strconv.Itoa(n)
	})
	resp, err := tp.client().Post("http://tend/v1/containers/spawner/stop", "", nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stop spawner: %v %v", resp, err)
	}
	doc := tp.waitStatus(10*time.Second, "spawner stopped", func(d status.Document) bool {
		return containerStatus(d, "spawner").State == status.Stopped
	})
	c := containerStatus(doc, "spawner")
	if c.LastExit == nil || c.LastExit.Code != 7 {
		t.Errorf("spawner last_exit = %+v, want code 7 (no stolen exit status)", c.LastExit)
	}
	rounds := len(lines(t, filepath.Join(tp.dir, "rounds")))
	waitFor(t, 10*time.Second, "every orphan reaped", func() (bool, string) {
		resp, err := tp.client().Get("http://tend/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "tend_orphans_reaped_total "); ok {
				n, _ := strconv.Atoi(v)
				return n >= rounds*250, l
			}
		}
		return false, "no tend_orphans_reaped_total"
	})
	if zs := zombieChildren(tendPid); len(zs) != 0 {
		t.Errorf("zombies left under tend (pid %d): %v", tendPid, zs)
	}
	if keeper := containerStatus(doc, "keeper"); keeper.State != status.Running || keeper.Restarts != 0 {
		t.Errorf("keeper = %+v, want running untouched", keeper)
	}
	termAndWait(t, tp, 10*time.Second)
}

// Without a PID namespace tend is a child subreaper: orphans of its containers are
// reaped by it, not left as zombies, and SIGUSR1 is forwarded to the containers.
func TestSubreaperAndSignalForwarding(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "trap 'echo usr1 >> {DIR}/signals' USR1; (sleep 0.1 &); touch {DIR}/up; while true; do sleep 0.05; done"]
`, runOpts{as: asChild})
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "up"))
	tendPid := tp.pid()
	tp.signal(syscall.SIGUSR1)
	waitFor(t, 5*time.Second, "SIGUSR1 forwarded", func() (bool, string) {
		return len(lines(t, filepath.Join(tp.dir, "signals"))) == 1, ""
	})
	waitFor(t, 5*time.Second, "no zombie under tend", func() (bool, string) {
		zs := zombieChildren(tendPid)
		return len(zs) == 0, fmt.Sprint(zs)
	})
	termAndWait(t, tp, 10*time.Second)
}
