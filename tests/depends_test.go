package tests

// depends_on end to end (docs/reference.md "depends_on"): start gating, failed dependencies,
// reverse-order shutdown with the TERM barrier, reload and `tend start`.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// probeFast is a readiness probe time_limit that notices a file quickly.
const probeFast = `time_limit: {initial_delay_ms: 0, min_restart_period_ms: 30, max_restart_period_ms: 30}`

// A container waits, with waiting_for naming what is missing, until every condition
// holds: migrate until db is ready, api until migrate succeeded too.
func TestDependsOnGatesStart(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: api
    command: [sh, -c, "{EV} api up; exec sleep 600"]
    depends_on: {db: ready, migrate: succeeded}
  - name: migrate
    command: [sh, -c, "{EV} migrate up; {EV} migrate done"]
    restart_policy: {mode: never}
    depends_on: {db: ready}
  - name: db
    command: [sh, -c, "{EV} db up; exec sleep 600"]
    readiness_probe:
      exec: {command: "test -e {DIR}/db-ready"}
      `+probeFast+`
`)
	doc := tp.waitStatus(10*time.Second, "db running, the others waiting", func(d status.Document) bool {
		return containerStatus(d, "db").State == status.Running &&
			slices.Equal(containerStatus(d, "api").WaitingFor, []string{"db: ready", "migrate: succeeded"}) &&
			slices.Equal(containerStatus(d, "migrate").WaitingFor, []string{"db: ready"})
	})
	for _, n := range []string{"api", "migrate"} {
		if s := containerStatus(doc, n); s.State != status.Waiting || s.Pid != nil {
			t.Errorf("%s before db is ready: %+v", n, s)
		}
	}
	out, _, _ := runCLI(t, tp.dir, "status", "--listen", "unix:"+tp.sock)
	if !strings.Contains(out, "waiting for db: ready, migrate: succeeded") {
		t.Errorf("tend status does not say what api waits for:\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "db-ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, tp, "api", "up", 1)
	tl := readEvents(t, tp.dir)
	if !tl.one(t, "migrate", "up").After(tl.one(t, "db", "up")) || !tl.one(t, "api", "up").After(tl.one(t, "migrate", "done")) {
		t.Errorf("start order is not db, migrate, api:\n%s", tl)
	}
	doc = tp.waitStatus(5*time.Second, "api running", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Running
	})
	if w := containerStatus(doc, "api").WaitingFor; w == nil || len(w) != 0 {
		t.Errorf("api waiting_for once started = %#v, want []", w)
	}
	termAndWait(t, tp, 20*time.Second)
}

// A dependency that can no longer meet its condition fails the dependent with the
// reason, and ends the job: tend exits with the first non-zero exit in spec order, 1
// for a failed container that never ran.
func TestDependsOnFailedDependencyEndsJob(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		code       int
		reason     string
	}{
		{"migrate first", `
containers:
  - name: migrate
    command: [sh, -c, "exit 3"]
    restart_policy: {mode: never}
  - name: api
    command: [sh, -c, "touch {DIR}/api-ran"]
    restart_policy: {mode: never}
    depends_on: {migrate: succeeded}
`, 3, "dependency migrate completed with exit code 3"},
		{"api first", `
containers:
  - name: api
    command: [sh, -c, "touch {DIR}/api-ran"]
    restart_policy: {mode: on_failure}
    depends_on: {migrate: succeeded}
  - name: migrate
    command: [sh, -c, "exit 3"]
    restart_policy: {mode: never}
`, 1, "dependency migrate completed with exit code 3"},
		{"ready after completion", `
containers:
  - name: migrate
    command: [sh, -c, "sleep 0.2"]
    restart_policy: {mode: never}
    readiness_probe: {exec: {command: ["false"]}}
  - name: api
    command: [sh, -c, "touch {DIR}/api-ran"]
    restart_policy: {mode: never}
    depends_on: {migrate: ready}
`, 1, "dependency migrate completed with exit code 0 and will not become ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := start(t, tc.spec)
			if code := tp.wait(20 * time.Second); code != tc.code {
				t.Errorf("exit code = %d, want %d", code, tc.code)
			}
			if _, err := os.Stat(filepath.Join(tp.dir, "api-ran")); err == nil {
				t.Errorf("api ran although migrate failed")
			}
			if log := tp.stderr.String(); !strings.Contains(log, tc.reason) {
				t.Errorf("no failure reason logged:\n%s", tail(log, 3000))
			}
		})
	}
}

// Shutdown runs in reverse order of depends_on with the TERM barrier on top: api
// (WAIT) waits for the TERM of the unrelated worker but not for db, its dependency,
// whose stop sequence begins only once api has exited.
func TestDependsOnShutdownOrderWithBarrier(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: db
    command: [sh, -c, "trap '{EV} db term; exit 0' TERM; {EV} db up; while true; do sleep 0.02; done"]
  - name: api
    command: [sh, -c, "trap '{EV} api term; sleep 0.3; {EV} api exit; exit 0' TERM; {EV} api up; while true; do sleep 0.02; done"]
    depends_on: {db: started}
    term_barrier: WAIT
  - name: worker
    command: [sh, -c, "trap '{EV} worker term; exit 0' TERM; {EV} worker up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "{EV} worker handler; sleep 0.5"]}
`)
	waitEvent(t, tp, "api", "up", 1)
	waitEvent(t, tp, "worker", "up", 1)
	termAndWait(t, tp, 20*time.Second)
	tl := readEvents(t, tp.dir)
	handler, apiTerm, apiExit, dbTerm := tl.one(t, "worker", "handler"), tl.one(t, "api", "term"), tl.one(t, "api", "exit"), tl.one(t, "db", "term")
	// worker reaches its TERM once its 0.5 s stop handler has ended.
	checkSpan(t, "worker's handler to api's SIGTERM", apiTerm.Sub(handler), 500*time.Millisecond-eventSlack, 10*time.Second, tl)
	if dbTerm.Before(apiExit) {
		t.Errorf("db was stopped before api, which depends on it, exited:\n%s", tl)
	}
}

// A second SIGTERM kills everything at once, also a dependency whose dependent is
// still at its TERM barrier and a container whose stop handler hangs.
func TestDependsOnSecondSignalKillsAll(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: db
    command: [sh, -c, "trap '' TERM; {EV} db up; while true; do sleep 0.02; done"]
  - name: api
    command: [sh, -c, "trap '' TERM; {EV} api up; while true; do sleep 0.02; done"]
    depends_on: {db: started}
    term_barrier: WAIT
  - name: worker
    command: [sh, -c, "trap '' TERM; {EV} worker up; while true; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "{EV} worker handler; exec sleep 600"]}
`)
	waitEvent(t, tp, "api", "up", 1)
	waitEvent(t, tp, "worker", "up", 1)
	tp.signal(syscall.SIGTERM)
	waitEvent(t, tp, "worker", "handler", 1)
	tp.signal(syscall.SIGTERM)
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

// A reload that only adds depends_on to a running container leaves it running; a
// new container waits for its conditions.
func TestDependsOnReload(t *testing.T) {
	tp := start(t, `
containers:
  - name: db
    command: [sleep, "600"]
    readiness_probe:
      exec: {command: "test -e {DIR}/db-ready"}
      `+probeFast+`
  - name: api
    command: [sleep, "600"]
`)
	doc := tp.waitStatus(10*time.Second, "running", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Running && containerStatus(d, "db").State == status.Running
	})
	apiPid := *containerStatus(doc, "api").Pid
	writeSpec(t, tp, `
containers:
  - name: db
    command: [sleep, "600"]
    readiness_probe:
      exec: {command: "test -e {DIR}/db-ready"}
      `+probeFast+`
  - name: api
    command: [sleep, "600"]
    depends_on: {db: ready}
  - name: cache
    command: [sleep, "600"]
    depends_on: {db: ready}
`)
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload answered %d", code)
	}
	doc = tp.waitStatus(10*time.Second, "cache waiting for db", func(d status.Document) bool {
		return slices.Equal(containerStatus(d, "cache").WaitingFor, []string{"db: ready"})
	})
	if s := containerStatus(doc, "api"); s.State != status.Running || s.Pid == nil || *s.Pid != apiPid {
		t.Errorf("api was restarted by a change of depends_on only: %+v (pid was %d)", s, apiPid)
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "db-ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(10*time.Second, "cache running", func(d status.Document) bool {
		return containerStatus(d, "cache").State == status.Running
	})
	termAndWait(t, tp, 20*time.Second)
}

// `tend start` of a container whose conditions do not hold makes it wait for them;
// `tend restart` is not gated.
func TestDependsOnStartWaits(t *testing.T) {
	tp := start(t, `
containers:
  - name: db
    command: [sleep, "600"]
  - name: api
    command: [sleep, "600"]
    depends_on: {db: ready}
`)
	tp.waitStatus(10*time.Second, "api running", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Running
	})
	for _, p := range []string{"/v1/containers/api/stop", "/v1/containers/db/stop"} {
		if code := post(t, tp, p); code != 200 {
			t.Fatalf("POST %s answered %d", p, code)
		}
	}
	tp.waitStatus(10*time.Second, "both stopped", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Stopped && containerStatus(d, "db").State == status.Stopped
	})
	post(t, tp, "/v1/containers/api/start")
	doc := tp.waitStatus(10*time.Second, "api waiting for db", func(d status.Document) bool {
		return slices.Equal(containerStatus(d, "api").WaitingFor, []string{"db: ready"})
	})
	if s := containerStatus(doc, "api"); s.State != status.Waiting || s.TargetState != "active" {
		t.Errorf("api after tend start with db stopped: %+v", s)
	}
	post(t, tp, "/v1/containers/db/start")
	tp.waitStatus(10*time.Second, "api running", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Running
	})
	post(t, tp, "/v1/containers/db/stop")
	post(t, tp, "/v1/containers/api/restart")
	tp.waitStatus(10*time.Second, "api restarted although db is stopped", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Running && containerStatus(d, "api").Restarts >= 1
	})
	termAndWait(t, tp, 20*time.Second)
}

// on_give_up: shutdown stops the instance once the restart limit gave up, and tend
// exits with the container's last exit code.
func TestOnGiveUpShutdown(t *testing.T) {
	tp := start(t, `
containers:
  - name: crash
    command: [sh, -c, "exit 7"]
    restart_policy: {min_period_ms: 10, max_jitter_ms: 0, max_failures: 2, on_give_up: shutdown}
  - name: other
    command: [sleep, "600"]
`)
	if code := tp.wait(20 * time.Second); code != 7 {
		t.Errorf("exit code = %d, want 7 (crash's last exit)", code)
	}
}

// A reload that changes a container and its dependency stops them in reverse order
// too: db's stop begins once api has exited.
func TestDependsOnReloadStopsInOrder(t *testing.T) {
	const text = `
containers:
  - name: db
    command: [sh, -c, "trap '{EV} db term; exit 0' TERM; {EV} db up; while true; do sleep 0.02; done"]
    env: [{name: V, value: "VERSION"}]
  - name: api
    command: [sh, -c, "trap '{EV} api term; sleep 0.3; {EV} api exit; exit 0' TERM; {EV} api up; while true; do sleep 0.02; done"]
    env: [{name: V, value: "VERSION"}]
    depends_on: {db: started}
`
	tp, expand := startStop(t, strings.ReplaceAll(text, "VERSION", "1"))
	waitEvent(t, tp, "api", "up", 1)
	writeSpec(t, tp, expand(strings.ReplaceAll(text, "VERSION", "2")))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload answered %d", code)
	}
	waitEvent(t, tp, "api", "up", 2)
	tl := readEvents(t, tp.dir)
	if dbTerm, apiExit := tl.one(t, "db", "term"), tl.one(t, "api", "exit"); dbTerm.Before(apiExit) {
		t.Errorf("the reload stopped db before api, which depends on it, exited:\n%s", tl)
	}
	termAndWait(t, tp, 20*time.Second)
}
