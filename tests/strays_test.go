package tests

import (
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
// can handle its SIGTERM.
func TestNothingOutlivesTend(t *testing.T) {
	tp := start(t, `
containers:
  - name: escaper
    command: ["sh", "-c", "setsid sleep 600 & echo $! > {DIR}/setsid.pid; (setsid sh -c 'sleep 600 & echo $! > {DIR}/daemon.pid' &); exec sleep 600"]
  - name: stopped
    command: ["sh", "-c", "trap 'echo term > {DIR}/stopped.term; exit 0' TERM; touch {DIR}/stopped.up; sleep 600 & wait $!"]
    stop_policy: {term_timeout_ms: 20000}
`, runOpts{as: asChild})
	var pids []int
	for _, f := range []string{"setsid.pid", "daemon.pid"} {
		pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, 10*time.Second, filepath.Join(tp.dir, f))))
		if err != nil {
			t.Fatal(err)
		}
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
