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

// update: start_first on a reload (docs/reference.md "Restarts without downtime"): the changed spec's process starts
// beside the running one, with the same sockets, and the old one stops only once the
// new one is ready; a new version that fails leaves the old process and spec.

// reloadSpec writes text as tend's spec ({DIR}, {SELF} and {ADDR} replaced) and
// reloads it.
func reloadSpec(t *testing.T, tp *tend, addr, text string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text = strings.NewReplacer("{DIR}", tp.dir, "{SELF}", self, "{ADDR}", addr).Replace(text)
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: %d", code)
	}
}

// serverLine is the line the socket server started with file wrote there (it may
// exist before its line is written): LISTEN_PID LISTEN_FDS LISTEN_FDNAMES pid.
func serverLine(t *testing.T, tp *tend, file string) []string {
	t.Helper()
	var fields []string
	waitFor(t, 10*time.Second, "the server's line in "+file, func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(tp.dir, file))
		fields = strings.Fields(string(b))
		return len(fields) > 3, string(b)
	})
	return fields
}

// serverPid is the pid in serverLine.
func serverPid(t *testing.T, tp *tend, file string) int {
	t.Helper()
	pid, err := strconv.Atoi(serverLine(t, tp, file)[3])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// load connects to addr without pause until the returned function is called, which
// reports how many connections were answered and the failures.
func load(addr string) func() (int, []error) {
	stop := make(chan struct{})
	done := make(chan struct{})
	var served int
	var failures []error
	go func() {
		served, failures = hammer(addr, stop)
		close(done)
	}()
	return func() (int, []error) {
		close(stop)
		<-done
		return served, failures
	}
}

// startFirstWeb is a start_first socket server that answers with its pid and writes
// it to {DIR}/%s, beside a stop_first container (its command says %s).
const startFirstWeb = `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/%s", "notify", "delay:300"]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
  - name: other
    command: [sleep, "%s"]
`

// A reload that changes the command of a start_first container under steady load
// fails no connection: status shows the old process as old_pid while the new one
// starts, and the new version answers afterwards. The stop_first container changed
// by the same reloads is replaced as before: a new container (no restarts, never an
// old_pid), not an update of the running one.
func TestStartFirstReloadUnderLoad(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp, addr := startSockets(t, fmt.Sprintf(startFirstWeb, "v0", "600"))
	before := serverPid(t, tp, "v0")
	tp.waitStatus(10*time.Second, "web ready", func(d status.Document) bool { return containerStatus(d, "web").Ready.True() })
	finish := load(addr)
	for v := 1; v <= 3; v++ {
		time.Sleep(800 * time.Millisecond) // load between reloads
		other := *containerStatus(mustStatus(t, tp), "other").Pid
		reloadSpec(t, tp, addr, fmt.Sprintf(startFirstWeb, fmt.Sprintf("v%d", v), strconv.Itoa(600+v)))
		tp.waitStatus(10*time.Second, "both processes of web in status", func(d status.Document) bool {
			c := containerStatus(d, "web")
			return c.OldPid != nil && *c.OldPid == before && c.Pid != nil && *c.Pid != before
		})
		next := serverPid(t, tp, fmt.Sprintf("v%d", v))
		tp.waitStatus(10*time.Second, "the new version of web alone, other replaced", func(d status.Document) bool {
			c, o := containerStatus(d, "web"), containerStatus(d, "other")
			return c.Pid != nil && *c.Pid == next && c.OldPid == nil && c.Ready.True() &&
				o.Pid != nil && *o.Pid != other && o.OldPid == nil && o.Restarts == 0
		})
		if got, err := ask(addr); err != nil || got != next {
			t.Fatalf("after reload %d answered by %d (%v), want the new version %d", v, got, err, next)
		}
		before = next
	}
	time.Sleep(500 * time.Millisecond)
	served, failures := finish()
	if len(failures) > 0 {
		t.Fatalf("%d connections answered, %d failed; first: %v", served, len(failures), failures[0])
	}
	// Thousands on a quiet machine; the floor only says the load ran throughout (737
	// were seen with two busy loops beside the suite).
	if served < 200 {
		t.Fatalf("%d connections answered; want hundreds at least", served)
	}
	t.Logf("%d connections answered through 3 reloads", served)
	termAndWait(t, tp, 10*time.Second)
}

// A reload to a broken version of a start_first container (one that exits at once,
// one that never passes its short startup probe) keeps the old process serving with
// the old spec, fails no connection, and last_exit and the log say why. The reload
// still counts as applied: a reload back to the old spec changes nothing.
func TestStartFirstReloadBrokenVersionKeepsTheOld(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	for _, tc := range []struct{ name, lines, want string }{
		{"exits at once", `    command: [sh, -c, "echo broken >&2; exit 3"]`,
			"the new process failed (exit code 3); the old one keeps running with the old spec"},
		{"never ready", `    command: [sleep, "600"]
    startup_probe: {exec: {command: ["false"]}, failure_threshold: 3, time_limit: {initial_delay_ms: 0, min_restart_period_ms: 100, max_restart_period_ms: 100}}`,
			"the new process failed (startup probe failed"},
	} {
		t.Run(tc.name, func(t *testing.T) { reloadBroken(t, tc.lines, tc.want) })
	}
}

// oldVersion is the working version of TestStartFirstReloadBrokenVersionKeepsTheOld.
const oldVersion = `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env", "notify"]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
`

// reloadBroken reloads the old version with its command replaced by lines, under
// load, and checks that the old process and spec stay; last_exit says want.
func reloadBroken(t *testing.T, lines, want string) {
	tp, addr := startSockets(t, oldVersion)
	pid := serverPid(t, tp, "env")
	tp.waitStatus(10*time.Second, "web ready", func(d status.Document) bool { return containerStatus(d, "web").Ready.True() })
	revision := mustStatus(t, tp).Revision
	finish := load(addr)
	time.Sleep(300 * time.Millisecond)
	broken := strings.Replace(oldVersion, `    command: ["{SELF}", "{DIR}/env", "notify"]`, lines, 1)
	reloadSpec(t, tp, addr, broken)
	doc := tp.waitStatus(10*time.Second, "the failed new version in last_exit", func(d status.Document) bool {
		return containerStatus(d, "web").LastExit != nil
	})
	c := containerStatus(doc, "web")
	if !strings.Contains(string(c.LastExit.Reason), want) {
		t.Fatalf("last_exit %+v, want %q", c.LastExit, want)
	}
	time.Sleep(500 * time.Millisecond) // a restart loop would show by now
	served, failures := finish()
	if len(failures) > 0 || served == 0 {
		t.Fatalf("%d connections answered, %d failed; first: %v", served, len(failures), failures)
	}
	doc = mustStatus(t, tp)
	c = containerStatus(doc, "web")
	if c.State != status.Running || c.Pid == nil || *c.Pid != pid || c.OldPid != nil || c.Restarts != 1 {
		t.Fatalf("state %s, pid %v, old_pid %v, restarts %d; want running, the old pid %d, 1 start of the new", c.State, c.Pid, c.OldPid, c.Restarts, pid)
	}
	if doc.Revision == revision || doc.ReloadError != "" {
		t.Errorf("revision %s (before %s), reload_error %q; want the reload applied", doc.Revision, revision, doc.ReloadError)
	}
	if got, err := ask(addr); err != nil || got != pid {
		t.Fatalf("answered by %d (%v), want the old process %d", got, err, pid)
	}
	// tend's log reaches stderr through a queue of its own: wait for the line.
	waitFor(t, 5*time.Second, "the log saying the old process was kept", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "keeping the old process"), tail(tp.stderr.String(), 2000)
	})
	// The container runs the old spec: reloading it is no change.
	reloadSpec(t, tp, addr, oldVersion)
	tp.waitStatus(10*time.Second, "the reload back applied", func(d status.Document) bool { return d.Revision != doc.Revision })
	time.Sleep(300 * time.Millisecond) // a rollout would have started by now
	if c := containerStatus(mustStatus(t, tp), "web"); c.Pid == nil || *c.Pid != pid || c.Restarts != 1 {
		t.Fatalf("restarts %d after reloading the old spec (pid changed: %v); want the old process %d untouched", c.Restarts, c.Pid == nil || *c.Pid != pid, pid)
	}
	if err := syscall.Kill(tp.hostPid(pid), 0); err != nil {
		t.Fatalf("the old process is gone: %v", err)
	}
	termAndWait(t, tp, 10*time.Second)
}

// drainingWeb is a start_first socket server that writes its pid to {DIR}/%s and
// takes 3 s to exit after SIGTERM.
const drainingWeb = `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/%s", "notify", "drain:3000"]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
`

// A reload that comes while the old process of the last update still drains waits
// for it, then rolls out start first too: the running version keeps serving. Here
// A → B, then C (never ready) while A drains: B serves throughout, C runs beside it,
// A's drain ended. It used to replace the container stop-first: B stopped, C never
// ready, no connection answered.
func TestStartFirstReloadWhileTheOldDrains(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp, addr := startSockets(t, fmt.Sprintf(drainingWeb, "a"))
	a := serverPid(t, tp, "a")
	tp.waitStatus(10*time.Second, "web ready", func(d status.Document) bool { return containerStatus(d, "web").Ready.True() })
	finish := load(addr)
	reloadSpec(t, tp, addr, fmt.Sprintf(drainingWeb, "b"))
	b := serverPid(t, tp, "b")
	tp.waitStatus(10*time.Second, "b ready while a drains", func(d status.Document) bool {
		c := containerStatus(d, "web")
		return c.Pid != nil && *c.Pid == b && c.Ready.True() && c.OldPid != nil && *c.OldPid == a
	})
	reloadSpec(t, tp, addr, `
containers:
  - name: web
    command: [sleep, "600"]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
`)
	doc := tp.waitStatus(15*time.Second, "c starting beside b, a gone", func(d status.Document) bool {
		c := containerStatus(d, "web")
		return c.OldPid != nil && *c.OldPid == b && c.Pid != nil && *c.Pid != b
	})
	if c := containerStatus(doc, "web"); !c.Ready.True() || c.State != status.Running {
		t.Errorf("web while c starts: state %s, ready %+v; want running and ready (b serves)", c.State, c.Ready)
	}
	for i := 0; i < 20; i++ {
		if got, err := ask(addr); err != nil || got != b {
			t.Fatalf("while c starts, answered by %d (%v), want b (%d)", got, err, b)
		}
	}
	served, failures := finish()
	if len(failures) > 0 || served == 0 {
		t.Fatalf("%d connections answered, %d failed; first: %v", served, len(failures), failures)
	}
	t.Logf("%d connections answered through A → B → C", served)
	termAndWait(t, tp, 15*time.Second)
}
