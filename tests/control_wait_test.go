package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// tend restart, start and stop answer when what they asked is done: started and
// ready, stopped. --timeout bounds the wait (exit 1 naming what it waits for),
// --no-wait returns at once, an unknown name says the closest one.
func TestControlCommandsWait(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "600"]
    readiness_probe: {exec: {command: test -e go}, period: 50ms, initial_delay: 0s}
  - name: slow
    command: ["sh", "-c", "trap 'sleep 1; exit 0' TERM; while :; do sleep 0.05; done"]
`)
	goFile := filepath.Join(tp.dir, "go")
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := tp.waitStatus(10*time.Second, "web ready, slow running", func(d status.Document) bool {
		return containerStatus(d, "web").Ready.True() && containerStatus(d, "slow").State == status.Running
	})
	oldPid := *containerStatus(doc, "web").Pid

	// restart waits for the new run to be ready: it is still waiting while the probe
	// fails, and answers once the probe passes.
	if err := os.Remove(goFile); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tendBin, "restart", "web")
	cmd.Dir = tp.dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tp.waitStatus(10*time.Second, "web restarted, not ready", func(d status.Document) bool {
		c := containerStatus(d, "web")
		return c.State == status.Running && c.Pid != nil && *c.Pid != oldPid && !c.Ready.True()
	})
	select {
	case err := <-exited:
		t.Fatalf("tend restart web returned (%v, %q) while web was not ready", err, out.String())
	default:
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil || out.String() != "restart web: ok\n" {
			t.Fatalf("tend restart web: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("tend restart web did not return once web was ready")
	}
	if d, _ := tp.status(); !containerStatus(d, "web").Ready.True() {
		t.Errorf("restart returned, but web is not ready: %+v", containerStatus(d, "web"))
	}

	// --timeout: exit 1 saying what it waits for.
	if err := os.Remove(goFile); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, tp.dir, "restart", "web", "--timeout", "300ms")
	want := "tend: restart web: not done after 300ms (--timeout): waiting for web to be ready (ready False: "
	if code != 1 || !strings.HasPrefix(stderr, want) {
		t.Errorf("restart --timeout 300ms: exit %d, stderr %q; want exit 1 and %q...", code, stderr, want)
	}
	// --no-wait: at once, the container not ready yet.
	stdout, stderr, code := runCLI(t, tp.dir, "restart", "--no-wait", "web")
	if code != 0 || stdout != "restart web: ok\n" {
		t.Errorf("restart --no-wait: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if d, _ := tp.status(); containerStatus(d, "web").Ready.True() {
		t.Errorf("restart --no-wait: web is ready already, so the test shows nothing")
	}
	os.WriteFile(goFile, nil, 0o644)

	// stop waits for the stop sequence: slow takes a second after its SIGTERM.
	began := time.Now()
	stdout, stderr, code = runCLI(t, tp.dir, "stop", "slow", "web")
	if code != 0 || stdout != "stop slow: ok\nstop web: ok\n" {
		t.Errorf("stop slow web: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	d, _ := tp.status()
	for _, name := range []string{"slow", "web"} {
		if c := containerStatus(d, name); c.State != status.Stopped {
			t.Errorf("stop returned with %s %s", name, c.State)
		}
	}
	if took := time.Since(began); took < 900*time.Millisecond {
		t.Errorf("stop slow returned after %v, before slow's TERM handler ended (1s)", took)
	}
	// start waits for started and ready.
	stdout, stderr, code = runCLI(t, tp.dir, "start", "web", "slow")
	if code != 0 || stdout != "start web: ok\nstart slow: ok\n" {
		t.Errorf("start web slow: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	d, _ = tp.status()
	if c := containerStatus(d, "web"); c.State != status.Running || !c.Ready.True() {
		t.Errorf("start returned with web %s, ready %s", c.State, c.Ready.Status)
	}

	// An unknown name: exit 1 with the closest name; the others still act.
	_, stderr, code = runCLI(t, tp.dir, "restart", "wbe")
	if code != 1 || !strings.Contains(stderr, `restart wbe: no such container "wbe" (did you mean web?)`) {
		t.Errorf("restart wbe: exit %d, stderr %q", code, stderr)
	}
	termAndWait(t, tp, 30*time.Second)
}

// start (and restart) of a container waiting for its schedule runs it now, once; the
// schedule goes on.
func TestStartScheduledRunsNow(t *testing.T) {
	tp := start(t, `
containers:
  - name: backup
    command: ["sh", "-c", "echo ran >> runs"]
    restart_policy: {mode: never}
    schedule: "@daily"
`)
	tp.waitStatus(10*time.Second, "backup waiting for its schedule", func(d status.Document) bool {
		return containerStatus(d, "backup").NextStartAt != nil
	})
	stdout, stderr, code := runCLI(t, tp.dir, "start", "backup")
	if code != 0 || stdout != "start backup: ok\n" {
		t.Fatalf("start backup: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	doc := tp.waitStatus(10*time.Second, "backup's run ended", func(d status.Document) bool {
		c := containerStatus(d, "backup")
		return c.LastExit != nil && c.State != status.Running
	})
	if got := lines(t, filepath.Join(tp.dir, "runs")); len(got) != 1 {
		t.Errorf("runs %q, want one run", got)
	}
	if c := containerStatus(doc, "backup"); c.NextStartAt == nil || time.Until(c.NextStartAt.Time) < time.Hour {
		t.Errorf("after the run, next_start_at %v: want the next day's time", c.NextStartAt)
	}
	stdout, stderr, code = runCLI(t, tp.dir, "restart", "backup")
	if code != 0 || stdout != "restart backup: ok\n" {
		t.Fatalf("restart backup: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	tp.waitStatus(10*time.Second, "backup's second run ended", func(d status.Document) bool {
		c := containerStatus(d, "backup")
		return c.Restarts >= 1 && c.State != status.Running
	})
	waitFor(t, 10*time.Second, "two runs", func() (bool, string) {
		got := lines(t, filepath.Join(tp.dir, "runs"))
		return len(got) == 2, strings.Join(got, ",")
	})
	termAndWait(t, tp, 30*time.Second)
}
