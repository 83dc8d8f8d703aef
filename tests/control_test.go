package tests

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

func post(t *testing.T, tp *tend, path string) int {
	t.Helper()
	resp, err := tp.client().Post("http://tend"+path, "", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stop keeps a container stopped (ready once stopped), start brings it back without
// re-running its init commands, restart gives it a new process.
func TestStopStartRestart(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "echo start >> {DIR}/starts; exec sleep 600"]
    init: [{command: "sh -c 'echo init >> {DIR}/inits'"}]
  - name: other
    command: ["sleep", "600"]
`)
	doc := tp.waitStatus(10*time.Second, "app and other running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && containerStatus(d, "other").Pid != nil
	})
	otherPid := *containerStatus(doc, "other").Pid
	waitFile(t, 5*time.Second, filepath.Join(tp.dir, "starts")) // see "two starts" below
	if code := post(t, tp, "/v1/containers/app/stop"); code != 200 {
		t.Fatalf("stop: %d", code)
	}
	tp.waitStatus(10*time.Second, "app stopped and ready", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.State == status.Stopped && c.TargetState == "removed" && c.Ready.Status == "True" && d.Ready.Status == "True"
	})
	if code := post(t, tp, "/v1/containers/app/start"); code != 200 {
		t.Fatalf("start: %d", code)
	}
	doc = tp.waitStatus(10*time.Second, "app running again", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.State == status.Running && c.TargetState == "active"
	})
	first := *containerStatus(doc, "app").Pid
	// A run is stopped by the restart only once its program began (a signal before its
	// first instruction, in the v1 cgroup shim, ends the run without its line).
	waitFor(t, 5*time.Second, "two starts recorded", func() (bool, string) {
		n := len(lines(t, filepath.Join(tp.dir, "starts")))
		return n >= 2, itoa(n)
	})
	if code := post(t, tp, "/v1/containers/app/restart"); code != 200 {
		t.Fatalf("restart: %d", code)
	}
	doc = tp.waitStatus(10*time.Second, "app restarted", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.State == status.Running && c.Pid != nil && *c.Pid != first
	})
	// Status says running once the process exists; its first line may come later.
	waitFor(t, 5*time.Second, "three starts recorded", func() (bool, string) {
		n := len(lines(t, filepath.Join(tp.dir, "starts")))
		return n >= 3, itoa(n)
	})
	if n := len(lines(t, filepath.Join(tp.dir, "inits"))); n != 1 {
		t.Errorf("init commands ran %d times, want 1 (not after stop/start or restart)", n)
	}
	if n := len(lines(t, filepath.Join(tp.dir, "starts"))); n != 3 {
		t.Errorf("app started %d times, want 3", n)
	}
	if o := containerStatus(doc, "other"); *o.Pid != otherPid || o.Restarts != 0 {
		t.Errorf("other was touched: %+v", o)
	}
	if code := post(t, tp, "/v1/containers/nope/restart"); code != 404 {
		t.Errorf("restart of an unknown container: %d, want 404", code)
	}
}

// Concurrent restart requests never run two processes of one container at once. The
// trap comes first: a SIGTERM before it would leave the lock behind without a second
// process.
func TestConcurrentRestartsStartOneProcess(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "trap 'rm -f {DIR}/lock; exit 0' TERM; if [ -e {DIR}/lock ]; then echo twice >> {DIR}/errors; fi; touch {DIR}/lock; echo start >> {DIR}/starts; while true; do sleep 0.02; done"]
`)
	tp.waitStatus(10*time.Second, "running", func(d status.Document) bool { return containerStatus(d, "app").State == status.Running })
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); post(t, tp, "/v1/containers/app/restart") }()
	}
	wg.Wait()
	tp.waitStatus(10*time.Second, "running after the restarts", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if e := lines(t, filepath.Join(tp.dir, "errors")); len(e) != 0 {
		t.Errorf("two processes ran at once %d times", len(e))
	}
}

// Over TCP, mutating calls need the bearer token: none configured 403, missing 403,
// wrong 401, right 200; reads need nothing. The unix socket needs no token.
func TestTokenOverTCP(t *testing.T) {
	spec := "containers:\n  - name: app\n    command: [\"sleep\", \"600\"]\n"
	tokenDir := t.TempDir()
	tokenFile := filepath.Join(tokenDir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withToken := "127.0.0.1:" + itoa(freePort(t))
	tp := start(t, spec, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", withToken, "--api-token-file", tokenFile}})
	noToken := "127.0.0.1:" + itoa(freePort(t))
	tp2 := start(t, spec, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", noToken}})
	tp.waitStatus(10*time.Second, "running", func(d status.Document) bool { return containerStatus(d, "app").State == status.Running })
	tp2.waitStatus(10*time.Second, "running", func(d status.Document) bool { return containerStatus(d, "app").State == status.Running })

	call := func(addr, method, path, token string) int {
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, addr, method, path, token string
		want                            int
	}{
		{"read without token", withToken, "GET", "/v1/status", "", 200},
		{"no token configured", noToken, "POST", "/v1/containers/app/restart", "s3cret", 403},
		{"missing header", withToken, "POST", "/v1/containers/app/restart", "", 403},
		{"wrong token", withToken, "POST", "/v1/containers/app/restart", "wrong", 401},
		{"right token", withToken, "POST", "/v1/containers/app/restart", "s3cret", 200},
	} {
		if got := call(c.addr, c.method, c.path, c.token); got != c.want {
			t.Errorf("%s: %s %s = %d, want %d", c.name, c.method, c.path, got, c.want)
		}
	}
	if code := post(t, tp2, "/v1/containers/app/restart"); code != 200 {
		t.Errorf("restart over the unix socket without a token: %d, want 200", code)
	}
	// The CLI reaches a running tend through --listen and prints a clear error when
	// none is running.
	out, err := exec.Command(tendBin, "status", "--listen", "unix:"+tp.sock).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "app") {
		t.Errorf("tend status: %v\n%s", err, out)
	}
	out, err = exec.Command(tendBin, "restart", "--listen", withToken, "--api-token-file", tokenFile, "app").CombinedOutput()
	if err != nil {
		t.Errorf("tend restart over TCP with the token: %v\n%s", err, out)
	}
	out, err = exec.Command(tendBin, "status", "--listen", "unix:"+filepath.Join(tokenDir, "none.sock")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no tend is answering") {
		t.Errorf("tend status with nothing running: %v\n%s", err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Reload keeps unchanged containers (same pid), restarts changed ones with their
// init commands, stops and destroys removed ones, starts new ones; an invalid spec
// changes nothing and shows reload_error until the next good reload.
func TestReload(t *testing.T) {
	tp := start(t, `
containers:
  - name: same
    command: ["sleep", "600"]
  - name: changed
    command: ["sh", "-c", "echo v1 >> {DIR}/changed; exec sleep 600"]
    init: [{command: "sh -c 'echo init >> {DIR}/changed-init'"}]
  - name: removed
    command: ["sleep", "600"]
    destroy_policy: {exec: {command: "touch {DIR}/removed-destroyed"}}
`)
	doc := tp.waitStatus(10*time.Second, "all running", func(d status.Document) bool {
		for _, n := range []string{"same", "changed", "removed"} {
			if containerStatus(d, n).State != status.Running {
				return false
			}
		}
		return true
	})
	samePid := *containerStatus(doc, "same").Pid
	// Running is not yet begun: the program may not have run its first instruction
	// (the v1 cgroup shim), and a reload now would stop it before it wrote v1.
	waitFor(t, 5*time.Second, "changed to write v1", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "changed"))
		return len(l) == 1, strings.Join(l, ",")
	})
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(strings.ReplaceAll(text, "{DIR}", tp.dir)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("containers: [{name: same, command: [sleep, 600]}, {name: bad, command: []}]\n")
	if code := post(t, tp, "/v1/reload"); code == 200 {
		t.Errorf("reload of an invalid spec answered 200")
	}
	doc = tp.waitStatus(5*time.Second, "reload_error", func(d status.Document) bool { return d.ReloadError != "" })
	if containerStatus(doc, "removed").State != status.Running {
		t.Errorf("an invalid reload changed something: %+v", doc.Containers)
	}
	write(`
containers:
  - name: same
    command: ["sleep", "600"]
  - name: changed
    command: ["sh", "-c", "echo v2 >> {DIR}/changed; exec sleep 600"]
    init: [{command: "sh -c 'echo init >> {DIR}/changed-init'"}]
  - name: added
    command: ["sleep", "600"]
`)
	tp.signal(syscall.SIGHUP)
	doc = tp.waitStatus(10*time.Second, "reload applied", func(d status.Document) bool {
		return d.ReloadError == "" && len(d.Containers) == 3 &&
			containerStatus(d, "added").State == status.Running &&
			containerStatus(d, "changed").State == status.Running && len(lines(t, filepath.Join(tp.dir, "changed"))) == 2
	})
	if s := containerStatus(doc, "same"); *s.Pid != samePid || s.Restarts != 0 {
		t.Errorf("unchanged container was touched: %+v (pid was %d)", s, samePid)
	}
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "changed")), ","); got != "v1,v2" {
		t.Errorf("changed container runs: %s, want v1,v2", got)
	}
	if n := len(lines(t, filepath.Join(tp.dir, "changed-init"))); n != 2 {
		t.Errorf("changed container's init ran %d times, want 2", n)
	}
	waitFile(t, 5*time.Second, filepath.Join(tp.dir, "removed-destroyed"))
}

// The control commands find a running tend through ./tend.sock by default.
func TestCLIDefaultSocketReloadShutdown(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sleep", "600"]
`)
	tp.waitStatus(10*time.Second, "running", func(d status.Document) bool { return containerStatus(d, "app").State == status.Running })
	if out, errOut, code := runCLI(t, tp.dir, "reload"); code != 0 || out != "reload: ok\n" {
		t.Errorf("tend reload: %d %q %q", code, out, errOut)
	}
	if out, _, code := runCLI(t, tp.dir, "status", "--json"); code != 0 || !strings.Contains(out, `"containers"`) {
		t.Errorf("tend status --json: %d %q", code, out)
	}
	if _, errOut, code := runCLI(t, tp.dir, "stop", "nope"); code != 1 || !strings.Contains(errOut, "no such container") {
		t.Errorf("tend stop nope: %d %q", code, errOut)
	}
	if out, errOut, code := runCLI(t, tp.dir, "shutdown"); code != 0 || out != "shutdown: ok\n" {
		t.Errorf("tend shutdown: %d %q %q", code, out, errOut)
	}
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code after tend shutdown = %d, want 0", code)
	}
}

// A container stopped by request stays stopped across reloads, also when the reload
// changes its spec (which updates what start will run), until it is started again.
func TestStopByRequestSticksAcrossReload(t *testing.T) {
	spec := func(bVersion string, extra ...string) string {
		s := `
containers:
  - name: a
    command: ["sh", "-c", "echo a >> {DIR}/a; exec sleep 600"]
  - name: b
    command: ["sh", "-c", "echo ` + bVersion + ` >> {DIR}/b; exec sleep 600"]
`
		for _, name := range extra {
			s += "  - {name: " + name + ", command: [sleep, 600]}\n"
		}
		return s
	}
	tp := start(t, spec("v1"))
	tp.waitStatus(10*time.Second, "a and b running", func(d status.Document) bool {
		return containerStatus(d, "a").State == status.Running && containerStatus(d, "b").State == status.Running
	})
	// Stopped once their programs began (a stop before the first instruction, in the
	// v1 cgroup shim, ends a run without its line).
	for _, f := range []string{"a", "b"} {
		waitFile(t, 5*time.Second, filepath.Join(tp.dir, f))
	}
	for _, n := range []string{"a", "b"} {
		if code := post(t, tp, "/v1/containers/"+n+"/stop"); code != 200 {
			t.Fatalf("stop %s: %d", n, code)
		}
	}
	stoppedByRequest := func(c status.Container) bool {
		return c.State == status.Stopped && c.StoppedByRequest && c.TargetState == "removed" &&
			c.Ready.Status == "True" && c.Ready.Reason == "StoppedByRequest"
	}
	tp.waitStatus(10*time.Second, "a and b stopped by request", func(d status.Document) bool {
		return stoppedByRequest(containerStatus(d, "a")) && stoppedByRequest(containerStatus(d, "b"))
	})
	reload := func(text, marker string) status.Document {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(strings.ReplaceAll(text, "{DIR}", tp.dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := post(t, tp, "/v1/reload"); code != 200 {
			t.Fatalf("reload: %d", code)
		}
		return tp.waitStatus(10*time.Second, "reload applied ("+marker+" running)", func(d status.Document) bool {
			return containerStatus(d, marker).State == status.Running
		})
	}
	// a unchanged, b changed: both stay stopped.
	doc := reload(spec("v2", "m1"), "m1")
	for _, n := range []string{"a", "b"} {
		if c := containerStatus(doc, n); !stoppedByRequest(c) {
			t.Errorf("%s after a reload: %+v, want stopped by request", n, c)
		}
	}
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "b")), ","); got != "v1" {
		t.Errorf("b ran %q after the reload, want only v1", got)
	}
	// start runs what the reload put in place, and clears the flag.
	if code := post(t, tp, "/v1/containers/b/start"); code != 200 {
		t.Fatalf("start b: %d", code)
	}
	doc = tp.waitStatus(10*time.Second, "b running", func(d status.Document) bool {
		c := containerStatus(d, "b")
		return c.State == status.Running && !c.StoppedByRequest && c.TargetState == "active"
	})
	bPid := *containerStatus(doc, "b").Pid
	waitFor(t, 5*time.Second, "b ran v2", func() (bool, string) {
		got := strings.Join(lines(t, filepath.Join(tp.dir, "b")), ",")
		return got == "v1,v2", got
	})
	doc = reload(spec("v2", "m2"), "m2")
	if c := containerStatus(doc, "b"); c.Pid == nil || *c.Pid != bPid {
		t.Errorf("b was touched by an unchanged reload: %+v", c)
	}
	if c := containerStatus(doc, "a"); !stoppedByRequest(c) {
		t.Errorf("a after a second reload: %+v", c)
	}
	if n := len(lines(t, filepath.Join(tp.dir, "a"))); n != 1 {
		t.Errorf("a started %d times, want 1", n)
	}
}

// An explicit start or restart is a fresh start: the backoff of the crashes before it
// does not carry over, however the request and the stop interleave (a restart while
// running already resets it).
func TestStartResetsBackoff(t *testing.T) {
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

// A reload that fails while building its containers (here a log file that cannot be
// opened) changes nothing: a target_state change in the same reload is not applied.
func TestFailedReloadChangesNothing(t *testing.T) {
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
	writeSpec(t, tp, `
containers:
  - name: a
    command: [sleep, "600"]
    target_state: removed
  - name: b
    command: [sleep, "600"]
    log: {file: "{DIR}/blocker/b.log"}
`)
	tp.signal(syscall.SIGHUP)
	doc = tp.waitStatus(10*time.Second, "reload_error", func(d status.Document) bool { return d.ReloadError != "" })
	if a := containerStatus(doc, "a"); a.State != status.Running || a.TargetState != "active" || a.Pid == nil || *a.Pid != pidA {
		t.Errorf("the failed reload touched a: %+v (pid was %d)", a, pidA)
	}
}

// heldReloadSpec has one container x whose stop handler waits for {DIR}/release: a
// reload that changes x (its VERSION) is in progress until the test releases it.
const heldReloadSpec = `
containers:
  - name: x
    env: [{name: VERSION, value: "1"}]
    command: [sh, -c, "trap 'exit 0' TERM; echo $VERSION >> {DIR}/x-up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "touch {DIR}/x-handler; while [ ! -e {DIR}/release ]; do sleep 0.02; done"]}
      time_limit: {max_execution_time_ms: 60000}
`

// startHeldReload runs tend on heldReloadSpec and reloads it with x changed; it
// returns once the reload waits in the old x's stop handler, with the function that
// lets the handler end.
func startHeldReload(t *testing.T) (tp *tend, release func()) {
	t.Helper()
	tp = start(t, heldReloadSpec)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-up"))
	writeSpec(t, tp, strings.ReplaceAll(heldReloadSpec, `"1"`, `"2"`))
	tp.signal(syscall.SIGHUP)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "x-handler"))
	return tp, func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tp.dir, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// postAsync POSTs path in the background; the channel receives the status code, or
// -1 when the request failed.
func postAsync(tp *tend, path string) <-chan int {
	code := make(chan int, 1)
	go func() {
		resp, err := tp.client().Post("http://tend"+path, "", nil)
		if err != nil {
			code <- -1
			return
		}
		resp.Body.Close()
		code <- resp.StatusCode
	}()
	return code
}

// A reload queued behind a reload in progress, and one asked for while preparing, are
// answered when the instance shuts down instead, rather than left hanging.
func TestQueuedReloadAnsweredAtShutdown(t *testing.T) {
	expect := func(t *testing.T, got <-chan int) {
		t.Helper()
		select {
		case code := <-got:
			if code != http.StatusConflict {
				t.Errorf("queued reload answered %d, want %d (the instance is stopping)", code, http.StatusConflict)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("queued reload not answered")
		}
	}
	t.Run("behind a reload", func(t *testing.T) {
		tp, release := startHeldReload(t)
		got := postAsync(tp, "/v1/reload")
		waitFor(t, 5*time.Second, "the reload queued", func() (bool, string) {
			return strings.Contains(tp.stderr.String(), "reload queued"), ""
		})
		tp.signal(syscall.SIGTERM)
		release()
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

// Reloads queued behind a reload in progress are all answered, also when the first
// of them finds an invalid spec (it used to leave the others queued for good).
func TestInvalidQueuedReloadDoesNotStrandOthers(t *testing.T) {
	tp, release := startHeldReload(t)
	writeSpec(t, tp, "containers: [{name: bad, command: []}]\n")
	answers := []<-chan int{postAsync(tp, "/v1/reload"), postAsync(tp, "/v1/reload")}
	waitFor(t, 5*time.Second, "two reloads queued", func() (bool, string) {
		n := strings.Count(tp.stderr.String(), "reload queued")
		return n >= 2, fmt.Sprint(n)
	})
	release()
	for i, answer := range answers {
		select {
		case code := <-answer:
			if code != http.StatusUnprocessableEntity {
				t.Errorf("queued reload of an invalid spec answered %d, want %d", code, http.StatusUnprocessableEntity)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 2 queued reloads answered", i)
		}
	}
}

// A `stop NAME` that arrives while a reload is replacing NAME is queued until the
// reload is done (docs/reference.md "Reload": requests during a reload are queued) and then stops the new
// container; it used to go to the old container being stopped and be lost.
func TestStopDuringReloadOfSameContainer(t *testing.T) {
	tp, release := startHeldReload(t)
	answer := postAsync(tp, "/v1/containers/x/stop")
	waitFor(t, 5*time.Second, "the stop request handled or queued", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "queued") || len(answer) > 0, ""
	})
	release()
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
