package tests

import (
	"encoding/json"
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

// Init containers run in order, each retried until it exits 0, and the containers
// start only after all of them succeeded.
func TestInitContainersInOrderWithRetry(t *testing.T) {
	tp := start(t, `
init_containers:
  - name: first
    command: ["sh", "-c", "echo first >> {DIR}/order; n=$(cat {DIR}/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > {DIR}/n; [ $n -ge 3 ]"]
    time_limit: {min_restart_period_ms: 50, max_restart_period_ms: 50}
  - name: second
    command: ["sh", "-c", "echo second >> {DIR}/order"]
containers:
  - name: app
    command: ["sh", "-c", "echo app >> {DIR}/order; exec sleep 60"]
`)
	doc := tp.waitStatus(10*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	waitFor(t, 5*time.Second, "app to record its start", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "order"))
		return len(l) == 5, strings.Join(l, ",")
	})
	got := strings.Join(lines(t, filepath.Join(tp.dir, "order")), ",")
	if want := "first,first,first,second,app"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
	if doc.Installed.Status != "True" || doc.InitContainers[0].Attempts != 3 || doc.InitContainers[0].State != "succeeded" {
		t.Errorf("status after preparing: installed=%v init=%+v", doc.Installed, doc.InitContainers)
	}
	termAndWait(t, tp, 10*time.Second)
}

// Restarts back off exponentially while runs are short (jitter 0 here): the delays
// tend logs follow the policy, and each start comes no earlier than its delay.
func TestRestartBackoffIntervals(t *testing.T) {
	tp := start(t, `
containers:
  - name: crash
    command: ["sh", "-c", "date +%s%N >> {DIR}/starts; exit 1"]
    restart_policy: {min_period_ms: 100, max_period_ms: 400, backoff: 2, max_jitter_ms: 0, stable_after_ms: 10000}
`)
	waitFor(t, 15*time.Second, "six starts", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "starts"))
		return len(l) >= 6, strconv.Itoa(len(l))
	})
	var starts []time.Time
	for _, l := range lines(t, filepath.Join(tp.dir, "starts"))[:6] {
		ns, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, time.Unix(0, ns))
	}
	// Delays 100, 200, 400, 400 (capped), 400 ms between exits and starts.
	want := []time.Duration{100, 200, 400, 400, 400}
	// tend's log reaches stderr through a queue of its own: a delay's line may come
	// after the next run has written its start.
	var delays []time.Duration
	waitFor(t, 5*time.Second, "5 backoff delays in the log", func() (bool, string) {
		delays = backoffDelays(t, tp, "crash")
		return len(delays) >= len(want), fmt.Sprint(delays)
	})
	for i, w := range want {
		w *= time.Millisecond
		if delays[i] != w {
			t.Errorf("backoff delay %d = %v, want %v (all %v)", i+1, delays[i], w, delays)
		}
		// A run takes a few milliseconds, and a loaded machine is slow to start the
		// next one, but not by seconds.
		if got := starts[i+1].Sub(starts[i]); got < w || got > w+2*time.Second {
			t.Errorf("interval %d between starts = %v, want its delay %v or a little more", i+1, got, w)
		}
	}
	doc, _ := tp.status()
	c := containerStatus(doc, "crash")
	if c.Restarts < 5 || c.LastExit == nil || c.LastExit.Code != 1 {
		t.Errorf("status: restarts=%d last_exit=%+v", c.Restarts, c.LastExit)
	}
}

// backoffDelays returns the delays before restarts tend logged for container name.
func backoffDelays(t *testing.T, tp *tend, name string) []time.Duration {
	t.Helper()
	var delays []time.Duration
	for _, l := range strings.Split(tp.stderr.String(), "\n") {
		var rec struct {
			Container string `json:"container"`
			Message   string `json:"message"`
			DelayMs   int64  `json:"delay_ms"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Container == name && rec.Message == "backoff before restart" {
			delays = append(delays, time.Duration(rec.DelayMs)*time.Millisecond)
		}
	}
	return delays
}

// A run of at least stable_after_ms resets the backoff: the restart is immediate.
func TestStableRunResetsBackoff(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "date +%s%N >> {DIR}/starts; sleep 0.3; exit 1"]
    restart_policy: {min_period_ms: 2000, max_period_ms: 2000, max_jitter_ms: 0, stable_after_ms: 200}
`)
	waitFor(t, 10*time.Second, "three starts", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "starts"))
		return len(l) >= 3, strconv.Itoa(len(l))
	})
	l := lines(t, filepath.Join(tp.dir, "starts"))
	a, _ := strconv.ParseInt(l[1], 10, 64)
	b, _ := strconv.ParseInt(l[2], 10, 64)
	if gap := time.Duration(b - a); gap > 1500*time.Millisecond {
		t.Errorf("restart after a stable run took %v, want immediate (run 300ms, no 2s backoff)", gap)
	}
}

// SIGTERM stops every container: SIGTERM to each group, SIGKILL after term_timeout_ms
// to the one that ignores it, then exit 0.
func TestShutdownTermThenKill(t *testing.T) {
	tp := start(t, `
containers:
  - name: stubborn
    command: ["sh", "-c", "trap 'echo term >> {DIR}/stubborn' TERM; touch {DIR}/stubborn.up; while true; do sleep 0.05; done"]
    stop_policy: {term_timeout_ms: 500}
  - name: polite
    command: ["sh", "-c", "trap 'echo term >> {DIR}/polite; exit 0' TERM; touch {DIR}/polite.up; while true; do sleep 0.05; done"]
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "stubborn.up"))
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "polite.up"))
	begin := time.Now()
	termAndWait(t, tp, 10*time.Second)
	took := time.Since(begin)
	if took < 450*time.Millisecond || took > 5*time.Second {
		t.Errorf("shutdown took %v, want about term_timeout_ms (500ms)", took)
	}
	if got := lines(t, filepath.Join(tp.dir, "stubborn")); len(got) == 0 {
		t.Errorf("stubborn never saw SIGTERM")
	}
	if got := lines(t, filepath.Join(tp.dir, "polite")); len(got) != 1 {
		t.Errorf("polite saw SIGTERM %d times, want 1", len(got))
	}
}

// A second SIGTERM during shutdown kills everything at once.
func TestSecondSignalKillsAtOnce(t *testing.T) {
	tp := start(t, `
containers:
  - name: stubborn
    command: ["sh", "-c", "trap '' TERM; touch {DIR}/up; while true; do sleep 0.05; done"]
    stop_policy: {term_timeout_ms: 60000}
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "up"))
	tp.signal(syscall.SIGTERM)
	tp.waitStatus(5*time.Second, "stopping", func(d status.Document) bool { return d.State == status.InstanceStopping })
	begin := time.Now()
	tp.signal(syscall.SIGINT)
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("second signal took %v to end tend, want at once", took)
	}
}

// Job mode: tend exits once no container can run again, with the final exit code of
// the first container (in spec order) that did not end with 0.
func TestJobExitCodes(t *testing.T) {
	tp := start(t, `
containers:
  - name: ok
    command: ["true"]
    restart_policy: {mode: never}
  - name: flaky
    command: ["sh", "-c", "if [ -e {DIR}/flaky ]; then exit 0; fi; touch {DIR}/flaky; exit 5"]
    restart_policy: {mode: on_failure, min_period_ms: 10, max_jitter_ms: 0}
  - name: bad
    command: ["sh", "-c", "exit 3"]
    restart_policy: {mode: never}
  - name: worse
    command: ["sh", "-c", "exit 4"]
    restart_policy: {mode: never}
`)
	if code := tp.wait(20 * time.Second); code != 3 {
		t.Errorf("job exit code = %d, want 3 (bad is the first failing container; flaky's final exit is 0)", code)
	}

	tp2 := start(t, `
containers:
  - name: a
    command: ["true"]
    restart_policy: {mode: never}
  - name: b
    command: ["sh", "-c", "if [ -e {DIR}/b ]; then exit 0; fi; touch {DIR}/b; exit 9"]
    restart_policy: {mode: on_failure, min_period_ms: 10, max_jitter_ms: 0}
`)
	if code := tp2.wait(20 * time.Second); code != 0 {
		t.Errorf("job exit code = %d, want 0 (every final exit was 0)", code)
	}

	tp3 := start(t, `
containers:
  - name: killed
    command: ["sh", "-c", "kill -9 $$"]
    restart_policy: {mode: never}
`)
	if code := tp3.wait(20 * time.Second); code != 137 {
		t.Errorf("job exit code = %d, want 137 (128+SIGKILL)", code)
	}
}

// A command that cannot start is an exit like any other: shown in status, backed
// off, and tend and the other containers keep running.
func TestMissingExecutable(t *testing.T) {
	tp := start(t, `
containers:
  - name: missing
    command: ./no-such-program --flag
    restart_policy: {min_period_ms: 50, max_jitter_ms: 0}
  - name: fine
    command: ["sleep", "60"]
`)
	doc := tp.waitStatus(10*time.Second, "missing to have failed twice", func(d status.Document) bool {
		c := containerStatus(d, "missing")
		return c.Restarts >= 2 && containerStatus(d, "fine").State == status.Running
	})
	c := containerStatus(doc, "missing")
	if c.LastExit == nil || c.LastExit.Code != 127 || !strings.Contains(string(c.LastExit.Reason), "no-such-program") {
		t.Errorf("last_exit = %+v, want code 127 naming the program", c.LastExit)
	}
	if fine := containerStatus(doc, "fine"); fine.Restarts != 0 || fine.Pid == nil {
		t.Errorf("fine = %+v, want running untouched", fine)
	}
	resp, err := tp.client().Get("http://tend/v1/live")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/v1/live: %v %v", resp, err)
	}
}

// Output goes to tend's stdout line by line, prefixed with the container name.
func TestOutputIsPrefixed(t *testing.T) {
	tp := start(t, `
containers:
  - name: talker
    command: ["sh", "-c", "echo hello; echo to-stderr >&2; printf 'no newline'; touch {DIR}/done; sleep 60"]
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "done"))
	waitFor(t, 5*time.Second, "prefixed output", func() (bool, string) {
		out := tp.stdout.String()
		return strings.Contains(out, "talker | hello\n"), out
	})
	waitFor(t, 5*time.Second, "prefixed stderr", func() (bool, string) {
		errOut := tp.stderr.String()
		return strings.Contains(errOut, "talker | to-stderr\n"), errOut
	})
	tp.signal(syscall.SIGTERM)
	tp.wait(10 * time.Second)
	if out := tp.stdout.String(); !strings.Contains(out, "talker | no newline") {
		t.Errorf("the unfinished last line was lost: %q", out)
	}
}

// The status document has every key docs/reference.md "The status document" shows, with nulls where allowed.
func TestStatusDocumentKeys(t *testing.T) {
	tp := start(t, `
instance: {name: web-1}
init_containers:
  - name: prep
    command: ["true"]
containers:
  - name: app
    command: ["sleep", "60"]
`)
	tp.waitStatus(10*time.Second, "running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && d.Ready.Status == "True"
	})
	resp, err := tp.client().Get("http://tend/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw map[string]any
	if err := jsonDecode(resp.Body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"instance", "revision", "state", "installed", "ready", "init_containers", "containers", "reload_error"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("status has no %q", k)
		}
	}
	if raw["instance"] != "web-1" || raw["state"] != "running" {
		t.Errorf("instance/state = %v/%v", raw["instance"], raw["state"])
	}
	c := raw["containers"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "state", "target_state", "pid", "started_at", "restarts", "next_start_at", "alive", "ready", "last_exit", "stopped_by_request"} {
		if _, ok := c[k]; !ok {
			t.Errorf("container status has no %q", k)
		}
	}
	if c["next_start_at"] != nil || c["last_exit"] != nil {
		t.Errorf("next_start_at/last_exit = %v/%v, want null", c["next_start_at"], c["last_exit"])
	}
	ready := raw["ready"].(map[string]any)
	ts, _ := ready["last_transition_time"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", ts); err != nil {
		t.Errorf("last_transition_time %q is not RFC 3339 with milliseconds in UTC", ts)
	}
	fi, err := os.Stat(tp.sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	r, err := tp.client().Get("http://tend/v1/ready")
	if err != nil || r.StatusCode != 200 {
		t.Errorf("/v1/ready = %v %v, want 200", r, err)
	}
}

// A command that cannot start, with no delay at all configured, is retried through
// the loop without crashing tend, and the instance still shuts down on request.
func TestZeroDelayStartFailureLoop(t *testing.T) {
	tp := start(t, `
containers:
  - name: missing
    command: ./no-such-program
    restart_policy: {min_period_ms: 0, max_jitter_ms: 0, stable_after_ms: 0}
`, runOpts{args: []string{"--log-level", "warn"}})
	tp.waitStatus(10*time.Second, "many failed starts", func(d status.Document) bool {
		return containerStatus(d, "missing").Restarts > 1000
	})
	termAndWait(t, tp, 10*time.Second)
}

// A stop handler's time_limit.initial_delay_ms comes before its first try.
func TestStopHandlerInitialDelay(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "touch {DIR}/up; exec sleep 600"]
    stop_policy:
      exec: {command: "sh -c 'date +%s%N > {DIR}/handler'"}
      time_limit: {initial_delay_ms: 400}
      term_timeout_ms: 1000
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "up"))
	begin := time.Now()
	termAndWait(t, tp, 10*time.Second)
	ns, err := strconv.ParseInt(strings.TrimSpace(waitFile(t, time.Second, filepath.Join(tp.dir, "handler"))), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Unix(0, ns).Sub(begin); d < 380*time.Millisecond {
		t.Errorf("the handler ran %v after SIGTERM, before its initial delay of 400ms", d)
	}
}

// In job mode, a container stopped through the API while it waits to retry a failure
// ends the job with that failure's code.
func TestJobStoppedInBackoffKeepsItsExitCode(t *testing.T) {
	tp := start(t, `
containers:
  - name: retrying
    command: ["sh", "-c", "exit 3"]
    restart_policy: {mode: on_failure, min_period_ms: 60000, max_period_ms: 60000, max_jitter_ms: 0}
`)
	tp.waitStatus(10*time.Second, "retrying in backoff", func(d status.Document) bool {
		return containerStatus(d, "retrying").State == status.Backoff
	})
	if code := post(t, tp, "/v1/containers/retrying/stop"); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	if code := tp.wait(10 * time.Second); code != 3 {
		t.Errorf("job exit code = %d, want 3 (the stopped container's final exit)", code)
	}
}

// An init container killed by a signal shows the signal's name in last_exit.signal,
// as containers do.
func TestInitContainerExitSignalName(t *testing.T) {
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

// While an init container keeps failing, installed says which one, how and when it
// runs again, the init container is in backoff between its tries, and the
// containers are listed as waiting.
func TestFailingInitContainerSaysWhy(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, `
init_containers:
  - name: setup
    command: ["sh", "-c", "n=$(cat {DIR}/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > {DIR}/n; [ $n -ge 3 ]"]
    time_limit: {min_restart_period_ms: 1500, max_restart_period_ms: 1500}
containers:
  - name: app
    command: ["sleep", "60"]
  - name: off
    command: ["sleep", "60"]
    target_state: removed
`)
	doc := tp.waitStatus(10*time.Second, "setup in backoff after its second try", func(d status.Document) bool {
		return len(d.InitContainers) == 1 && d.InitContainers[0].State == status.Backoff && d.InitContainers[0].Attempts == 2
	})
	// The containers are listed meanwhile: waiting, or stopped for target_state removed.
	if app, off := containerStatus(doc, "app"), containerStatus(doc, "off"); app.State != status.Waiting || app.Pid != nil ||
		app.Ready.Status != "False" || off.State != status.Stopped || len(doc.Containers) != 2 {
		t.Errorf("containers while preparing: %+v", doc.Containers)
	}
	if doc.Installed.Status != "False" || doc.Installed.Reason != "InitContainerFailing" ||
		!strings.HasPrefix(doc.Installed.Message, "setup: exit code 1 (try 2), next try in ") {
		t.Errorf("installed while setup fails: %+v", doc.Installed)
	}
	if doc.State != status.InstancePreparing {
		t.Errorf("instance state %s, want preparing", doc.State)
	}
	doc = tp.waitStatus(10*time.Second, "prepared", func(d status.Document) bool { return d.Installed.True() })
	if ic := doc.InitContainers[0]; ic.State != status.Succeeded || ic.Attempts != 3 {
		t.Errorf("setup after preparing: %+v", ic)
	}
}

// Containers get tend's umask, also those started while the API comes up (its
// socket is made 0600 without changing the process's umask, which they would inherit).
func TestContainersGetTendsUmask(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(status), "Umask:")
	want, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	// The race with the API was lost about once in five starts.
	for i := range 20 {
		tp := start(t, `
init_containers:
  - name: first
    command: ["sh", "-c", "umask > {DIR}/init.tmp && mv {DIR}/init.tmp {DIR}/init"]
containers:
  - name: app
    command: ["sh", "-c", "umask > {DIR}/app.tmp && mv {DIR}/app.tmp {DIR}/app; exec sleep 60"]
`)
		for _, name := range []string{"init", "app"} {
			if got := strings.TrimSpace(waitFile(t, 10*time.Second, filepath.Join(tp.dir, name))); got != want {
				t.Errorf("start %d: %s's umask is %s, want tend's %s", i, name, got, want)
			}
		}
		termAndWait(t, tp, 10*time.Second)
	}
}
