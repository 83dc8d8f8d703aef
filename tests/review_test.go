package tests

// Regression tests for bugs found in a review of the container and supervisor loops.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

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

// A container that is not running and waits at the TERM barrier (WAIT) must not count
// as an IGNORE container arriving: here the crash-looping WAIT container would open
// the barrier for w before a's stop handler has ended.
func TestReviewIdleWaitContainerDoesNotOpenBarrier(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: a
    command: [sh, -c, "trap '{EV} a term; exit 0' TERM; {EV} a up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "{EV} a handler-start; sleep 0.5; {EV} a handler-end"]}
  - name: w
    term_barrier: WAIT
    command: [sh, -c, "trap '{EV} w term; exit 0' TERM; {EV} w up; while true; do sleep 0.02; done"]
  - name: crash
    term_barrier: WAIT
    command: [sh, -c, "{EV} crash start; exit 1"]
    restart_policy: {min_period_ms: 60000, max_period_ms: 60000, max_jitter_ms: 0}
`)
	waitEvent(t, tp, "a", "up", 1)
	waitEvent(t, tp, "w", "up", 1)
	tp.waitStatus(10*time.Second, "crash in backoff", func(d status.Document) bool {
		return containerStatus(d, "crash").State == status.Backoff
	})
	termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)
	if wTerm, aEnd := tl.one(t, "w", "term"), tl.one(t, "a", "handler-end"); wTerm.Before(aEnd) {
		t.Errorf("w (WAIT) got SIGTERM before a's stop handler ended; events:\n%s", tl)
	}
}

// What a container's process leaves behind in its process group is killed when the
// process exits, so restarts accumulate neither processes nor output pipes in tend.
func TestReviewRestartsLeaveNothingBehind(t *testing.T) {
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

// A reload queued behind a reload in progress, and one asked for while preparing, are
// answered when the instance shuts down instead, rather than left hanging.
func TestReviewQueuedReloadAnsweredAtShutdown(t *testing.T) {
	postAsync := func(tp *tend, path string) <-chan string {
		got := make(chan string, 1)
		go func() {
			resp, err := tp.client().Post("http://tend"+path, "", nil)
			if err != nil {
				got <- err.Error()
				return
			}
			resp.Body.Close()
			got <- fmt.Sprint(resp.StatusCode)
		}()
		return got
	}
	expect := func(t *testing.T, got <-chan string) {
		t.Helper()
		select {
		case g := <-got:
			if g != fmt.Sprint(http.StatusConflict) {
				t.Errorf("queued reload answered %s, want %d (the instance is stopping)", g, http.StatusConflict)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("queued reload not answered")
		}
	}
	t.Run("behind a reload", func(t *testing.T) {
		const spec = `
containers:
  - name: x
    env: [{name: VERSION, value: "1"}]
    command: [sh, -c, "trap 'exit 0' TERM; touch {DIR}/x-up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "touch {DIR}/x-handler; while [ ! -e {DIR}/release ]; do sleep 0.02; done"]}
      time_limit: {max_execution_time_ms: 60000}
`
		tp := start(t, spec)
		waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-up"))
		next := strings.ReplaceAll(strings.ReplaceAll(spec, `"1"`, `"2"`), "{DIR}", tp.dir)
		if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
		tp.signal(syscall.SIGHUP)
		waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-handler"))
		got := postAsync(tp, "/v1/reload")
		waitFor(t, 5*time.Second, "the reload queued", func() (bool, string) {
			return strings.Contains(tp.stderr.String(), "reload queued"), ""
		})
		tp.signal(syscall.SIGTERM)
		if err := os.WriteFile(filepath.Join(tp.dir, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		expect(t, got)
		if code := tp.wait(10 * time.Second); code != 0 {
			t.Errorf("exit code = %d, want 0", code)
		}
	})
	t.Run("while preparing", func(t *testing.T) {
		tp := start(t, `
init_containers:
  - name: slow
    command: [sh, -c, "touch {DIR}/init-up; exec sleep 600"]
containers:
  - name: app
    command: [sleep, "600"]
`)
		waitFile(t, 10*time.Second, filepath.Join(tp.dir, "init-up"))
		got := postAsync(tp, "/v1/reload")
		waitFor(t, 5*time.Second, "the reload queued", func() (bool, string) {
			return strings.Contains(tp.stderr.String(), "reload queued"), ""
		})
		tp.signal(syscall.SIGTERM)
		expect(t, got)
		if code := tp.wait(10 * time.Second); code != 0 {
			t.Errorf("exit code = %d, want 0", code)
		}
	})
}

// An init container killed by a signal shows the signal's name in last_exit.signal,
// as containers do.
func TestReviewInitContainerExitSignalName(t *testing.T) {
	tp := start(t, `
init_containers:
  - name: once
    command: [sh, -c, "if [ -e {DIR}/ran ]; then exec sleep 600; fi; touch {DIR}/ran; kill -KILL $$"]
    time_limit: {min_restart_period_ms: 0}
containers:
  - name: app
    command: [sleep, "600"]
`)
	doc := tp.waitStatus(10*time.Second, "one attempt of the init container", func(d status.Document) bool {
		return len(d.InitContainers) == 1 && d.InitContainers[0].Attempts >= 1
	})
	x := doc.InitContainers[0].LastExit
	if x == nil || x.Signal != "SIGKILL" || x.Code != 137 {
		t.Errorf("init container last_exit = %+v, want signal SIGKILL and code 137", x)
	}
}

// A reload that fails while building its containers (here a log file that cannot be
// opened) changes nothing: a target_state change in the same reload is not applied.
func TestReviewFailedReloadChangesNothing(t *testing.T) {
	tp := start(t, `
containers:
  - name: a
    command: [sleep, "600"]
`)
	doc := tp.waitStatus(10*time.Second, "a running", func(d status.Document) bool {
		return containerStatus(d, "a").State == status.Running
	})
	pidA := *containerStatus(doc, "a").Pid
	if err := os.WriteFile(filepath.Join(tp.dir, "blocker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	next := strings.ReplaceAll(`
containers:
  - name: a
    command: [sleep, "600"]
    target_state: removed
  - name: b
    command: [sleep, "600"]
    log: {file: "{DIR}/blocker/b.log"}
`, "{DIR}", tp.dir)
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	tp.signal(syscall.SIGHUP)
	doc = tp.waitStatus(10*time.Second, "reload_error", func(d status.Document) bool { return d.ReloadError != "" })
	if a := containerStatus(doc, "a"); a.State != status.Running || a.TargetState != "active" || a.Pid == nil || *a.Pid != pidA {
		t.Errorf("the failed reload touched a: %+v (pid was %d)", a, pidA)
	}
}

// An explicit start or restart is a fresh start: the backoff of the crashes before it
// does not carry over, however the request and the stop interleave (a restart while
// running already resets it).
func TestReviewStartResetsBackoff(t *testing.T) {
	tp := start(t, `
containers:
  - name: crash
    command: [sh, -c, "exit 1"]
    restart_policy: {min_period_ms: 100, max_period_ms: 60000, backoff: 100, max_jitter_ms: 0, stable_after_ms: 60000}
`)
	// After two short runs the next start is 10 s away.
	inLongBackoff := func(d status.Document) bool {
		c := containerStatus(d, "crash")
		return c.State == status.Backoff && c.NextStartAt != nil && c.LastExit != nil && c.NextStartAt.Sub(c.LastExit.At.Time) > 5*time.Second
	}
	// The first run after a fresh start waits min_period_ms, not 60 s.
	shortBackoff := func(after int) func(d status.Document) bool {
		return func(d status.Document) bool {
			c := containerStatus(d, "crash")
			return c.Restarts > after && c.State == status.Backoff && c.NextStartAt != nil && c.LastExit != nil &&
				c.NextStartAt.Sub(c.LastExit.At.Time) < 5*time.Second
		}
	}
	doc := tp.waitStatus(10*time.Second, "a long backoff", inLongBackoff)
	if code := post(t, tp, "/v1/containers/crash/stop"); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	tp.waitStatus(10*time.Second, "stopped", func(d status.Document) bool { return containerStatus(d, "crash").State == status.Stopped })
	if code := post(t, tp, "/v1/containers/crash/start"); code != 200 {
		t.Fatalf("start: %d", code)
	}
	restarts := containerStatus(doc, "crash").Restarts
	tp.waitStatus(5*time.Second, "a short backoff after stop and start", shortBackoff(restarts))

	doc = tp.waitStatus(10*time.Second, "a long backoff again", inLongBackoff)
	if code := post(t, tp, "/v1/containers/crash/restart"); code != 200 {
		t.Fatalf("restart: %d", code)
	}
	tp.waitStatus(5*time.Second, "a short backoff after a restart in backoff", shortBackoff(containerStatus(doc, "crash").Restarts))
}

// Reloads queued behind a reload in progress are all answered, also when the first
// of them finds an invalid spec (it used to leave the others queued for good).
func TestReviewInvalidQueuedReloadDoesNotStrandOthers(t *testing.T) {
	const spec = `
containers:
  - name: x
    env: [{name: VERSION, value: "1"}]
    command: [sh, -c, "trap 'exit 0' TERM; touch {DIR}/x-up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "touch {DIR}/x-handler; while [ ! -e {DIR}/release ]; do sleep 0.02; done"]}
      time_limit: {max_execution_time_ms: 60000}
`
	tp := start(t, spec)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-up"))
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(strings.ReplaceAll(text, "{DIR}", tp.dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(strings.ReplaceAll(spec, `"1"`, `"2"`))
	tp.signal(syscall.SIGHUP)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-handler"))
	write("containers: [{name: bad, command: []}]\n")
	answers := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := tp.client().Post("http://tend/v1/reload", "", nil)
			if err != nil {
				answers <- -1
				return
			}
			resp.Body.Close()
			answers <- resp.StatusCode
		}()
	}
	waitFor(t, 5*time.Second, "two reloads queued", func() (bool, string) {
		n := strings.Count(tp.stderr.String(), "reload queued")
		return n >= 2, fmt.Sprint(n)
	})
	if err := os.WriteFile(filepath.Join(tp.dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case code := <-answers:
			if code != http.StatusUnprocessableEntity {
				t.Errorf("queued reload of an invalid spec answered %d, want %d", code, http.StatusUnprocessableEntity)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 2 queued reloads answered", i)
		}
	}
}

// A `stop NAME` that arrives while a reload is replacing NAME is queued until the
// reload is done (README: requests during a reload are queued) and then stops the new
// container; it used to go to the old container being stopped and be lost.
func TestReviewStopDuringReloadOfSameContainer(t *testing.T) {
	const spec = `
containers:
  - name: x
    env: [{name: VERSION, value: "1"}]
    command: [sh, -c, "trap 'exit 0' TERM; echo $VERSION >> {DIR}/x-up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "touch {DIR}/x-handler; while [ ! -e {DIR}/release ]; do sleep 0.02; done"]}
      time_limit: {max_execution_time_ms: 60000}
`
	tp := start(t, spec)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-up"))
	next := strings.ReplaceAll(strings.ReplaceAll(spec, `"1"`, `"2"`), "{DIR}", tp.dir)
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	tp.signal(syscall.SIGHUP)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-handler"))
	answer := make(chan int, 1)
	go func() {
		resp, err := tp.client().Post("http://tend/v1/containers/x/stop", "", nil)
		if err != nil {
			answer <- -1
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	waitFor(t, 5*time.Second, "the stop request handled or queued", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "queued") || len(answer) > 0, ""
	})
	if err := os.WriteFile(filepath.Join(tp.dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-answer:
		if code != http.StatusOK {
			t.Errorf("stop during the reload answered %d, want 200", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stop during the reload not answered")
	}
	tp.waitStatus(10*time.Second, "the new x stopped for good", func(d status.Document) bool {
		x := containerStatus(d, "x")
		return d.ReloadError == "" && x.State == status.Stopped && x.TargetState == "removed"
	})
}
