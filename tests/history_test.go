package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// detail fetches GET /v1/containers/NAME: the HTTP status (0: tend does not answer)
// and the document.
func (tp *tend) detail(name string) (int, status.ContainerDetail, string) {
	tp.t.Helper()
	var d status.ContainerDetail
	resp, err := tp.client().Get("http://tend/v1/containers/" + name)
	if err != nil {
		return 0, d, err.Error() // not answering yet
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &d); err != nil {
			tp.t.Fatalf("GET /v1/containers/%s: %v: %s", name, err, body)
		}
	}
	return resp.StatusCode, d, string(body)
}

func findEvent(d status.ContainerDetail, typ status.EventType, reason status.Reason, contains ...string) bool {
	for _, e := range d.Events {
		ok := e.Type == typ && e.Reason == reason
		for _, c := range contains {
			ok = ok && strings.Contains(e.Message, c)
		}
		if ok {
			return true
		}
	}
	return false
}

// An HTTP liveness probe that fails with 500 "db down": the Warning event and the
// probe's results say both, `tend describe` shows them, a 10 MB body is cut to
// 256 bytes, and the token of the probe's headers appears nowhere.
func TestEventsSayWhyAProbeFailed(t *testing.T) {
	big := strings.Repeat("b", 10<<20)
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "db down", http.StatusInternalServerError) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, big)
	})
	server := httptest.NewServer(mux)
	defer server.Close()
	port := server.URL[strings.LastIndexByte(server.URL, ':')+1:]
	tp := start(t, fmt.Sprintf(`
containers:
  - name: app
    command: ["sleep", "600"]
    restart_policy: {min_period_ms: 10, max_period_ms: 10, max_jitter_ms: 0}
    liveness_probe:
      http_get: {host: 127.0.0.1, port: "%s", path: /health, headers: [{name: Authorization, value: "Bearer tok-S3CRET"}]}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 50, max_restart_period_ms: 50, max_execution_time_ms: 2000}
      failure_threshold: 2
    readiness_probe:
      http_get: {host: 127.0.0.1, port: "%s", path: /big}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 50, max_restart_period_ms: 50, max_execution_time_ms: 2000}
`, port, port))
	var d status.ContainerDetail
	waitFor(t, 20*time.Second, "a liveness kill and its exit in the events", func() (bool, string) {
		_, d, _ = tp.detail("app")
		// Restarted too: the exit is recorded before the restart starts the next run.
		return findEvent(d, status.Warning, status.ReasonKilled, "db down") && findEvent(d, status.Warning, status.ReasonExited) && d.Restarts >= 1,
			fmt.Sprintf("%+v", d.Events)
	})
	code, d, body := tp.detail("app")
	if code != http.StatusOK {
		t.Fatalf("GET /v1/containers/app: %d %s", code, body)
	}
	if !findEvent(d, status.Warning, status.ReasonProbeFailed, "liveness", "HTTP 500", "db down") {
		t.Errorf("no Warning ProbeFailed event saying HTTP 500 and db down: %+v", d.Events)
	}
	if !findEvent(d, status.Normal, status.ReasonStarted, "pid ") || !findEvent(d, status.Warning, status.ReasonExited, "SIGKILL", "db down") {
		t.Errorf("no Started or Exited event: %+v", d.Events)
	}
	live := d.Probes["liveness"].Last
	if len(live) == 0 || live[len(live)-1].Result != "failure" || live[len(live)-1].Message != "HTTP 500: db down" {
		t.Errorf("liveness results %+v, want the last a failure saying \"HTTP 500: db down\"", live)
	}
	ready := d.Probes["readiness"].Last
	if len(ready) == 0 {
		t.Fatalf("no readiness results: %s", body)
	}
	if m := ready[len(ready)-1].Message; m != "HTTP 503: "+big[:256] {
		t.Errorf("readiness message %d bytes (%.40q...), want HTTP 503 and the first 256 bytes of the body", len(m), m)
	}
	if _, ok := d.Probes["startup"]; ok || d.Name != "app" || d.Restarts < 1 {
		t.Errorf("probes %v, name %q, restarts %d: want liveness and readiness only, the status entry", keys(d.Probes), d.Name, d.Restarts)
	}
	out, errOut, exit := runCLI(t, tp.dir, "describe", "--listen", "unix:"+tp.sock, "app")
	for _, want := range []string{"Name:", "app", "Probe liveness:", "HTTP 500: db down", "Events:", "ProbeFailed", "Killed", " ago"} {
		if !strings.Contains(out, want) {
			t.Errorf("tend describe lacks %q (exit %d, %s):\n%s", want, exit, errOut, out)
		}
	}
	jsonOut, _, _ := runCLI(t, tp.dir, "describe", "--json", "--listen", "unix:"+tp.sock, "app")
	if !json.Valid([]byte(jsonOut)) || !strings.Contains(jsonOut, `"events"`) {
		t.Errorf("tend describe --json: %.200s", jsonOut)
	}
	statusBody := tp.statusBody()
	for what, text := range map[string]string{"the API": body, "describe": out, "describe --json": jsonOut, "the status": statusBody} {
		if strings.Contains(text, "tok-S3CRET") {
			t.Errorf("%s shows the token of the probe's headers", what)
		}
	}
	code, _, body = tp.detail("nope")
	if code != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Errorf("GET /v1/containers/nope: %d %s, want 404 with an error", code, body)
	}
	if _, errOut, exit := runCLI(t, tp.dir, "describe", "--listen", "unix:"+tp.sock, "nope"); exit != 1 || !strings.Contains(errOut, "nope") {
		t.Errorf("tend describe nope: exit %d, %q; want 1 naming it", exit, errOut)
	}
}

func (tp *tend) statusBody() string {
	resp, err := tp.client().Get("http://tend/v1/status")
	if err != nil {
		tp.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A container that restarts over and over keeps its last 100 events, oldest first,
// and a probe its last 10 checks.
func TestEventsAndResultsAreBounded(t *testing.T) {
	tp := start(t, `
containers:
  - name: crash
    command: ["sh", "-c", "exit 3"]
    restart_policy: {min_period_ms: 1, max_period_ms: 2, max_jitter_ms: 0}
  - name: probed
    command: ["sleep", "600"]
    readiness_probe:
      tcp_socket: {host: 127.0.0.1, port: "1"}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 20, max_restart_period_ms: 20}
`, runOpts{discard: true})
	var d status.ContainerDetail
	waitFor(t, 30*time.Second, "50 restarts", func() (bool, string) {
		_, d, _ = tp.detail("crash")
		return d.Restarts >= 50, strconv.Itoa(d.Restarts)
	})
	if len(d.Events) != 100 {
		t.Errorf("%d events, want 100", len(d.Events))
	}
	for i := 1; i < len(d.Events); i++ {
		if d.Events[i].Time.Before(d.Events[i-1].Time.Time) {
			t.Errorf("event %d (%v) is older than event %d (%v): want oldest first", i, d.Events[i].Time, i-1, d.Events[i-1].Time)
		}
	}
	if last := d.Events[len(d.Events)-1]; time.Since(last.Time.Time) > 5*time.Second {
		t.Errorf("the last event is from %v: the newest must be kept", last.Time)
	}
	if !findEvent(d, status.Warning, status.ReasonExited, "exit code 3") || !findEvent(d, status.Warning, status.ReasonBackOff, "next start in") {
		t.Errorf("no Exited or BackOff event: %+v", d.Events[len(d.Events)-5:])
	}
	var p status.ContainerDetail
	waitFor(t, 10*time.Second, "10 readiness results", func() (bool, string) {
		_, p, _ = tp.detail("probed")
		r := p.Probes["readiness"].Last
		return len(r) == 10 && time.Since(r[0].Time.Time) < 2*time.Second, fmt.Sprint(len(r))
	})
	// Another second of checks: still 10, the newest.
	time.Sleep(300 * time.Millisecond)
	_, p, _ = tp.detail("probed")
	r := p.Probes["readiness"].Last
	if len(r) != 10 || r[9].Result != "failure" || !strings.Contains(r[9].Message, "connection refused") {
		t.Errorf("readiness results %+v, want 10 failures saying connection refused", r)
	}
	// One failure streak is one event, not one per check.
	n := 0
	for _, e := range p.Events {
		if e.Reason == status.ReasonProbeFailed {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d ProbeFailed events for one streak of the same failure, want 1: %+v", n, p.Events)
	}
}

// `@every 2s` starts a job every 2 s; a run still going at the next time skips it
// (an event says so); next_start_at shows the next time; and tend, in job mode
// (every container never or on_failure), keeps running between runs.
func TestScheduleRunsAndSkips(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, `
containers:
  - name: tick
    command: ["sh", "-c", "date +%s.%N >> {DIR}/ticks"]
    restart_policy: {mode: never}
    schedule: "@every 2s"
  - name: slow
    command: ["sh", "-c", "echo run >> {DIR}/slow; sleep 3"]
    restart_policy: {mode: on_failure}
    schedule: "@every 2s"
`)
	doc := tp.waitStatus(5*time.Second, "next_start_at of tick", func(d status.Document) bool {
		return containerStatus(d, "tick").NextStartAt != nil
	})
	if c := containerStatus(doc, "tick"); c.State != status.Waiting || time.Until(c.NextStartAt.Time) > 2100*time.Millisecond {
		t.Errorf("before its first time: %s, next_start_at %v; want waiting, within 2 s", c.State, c.NextStartAt)
	}
	path := filepath.Join(tp.dir, "ticks")
	waitFor(t, 15*time.Second, "4 ticks", func() (bool, string) {
		b, _ := os.ReadFile(path)
		return strings.Count(string(b), "\n") >= 4, string(b)
	})
	// The times tend started tick (its log), not the times the runs wrote: on a
	// loaded machine a `sh -c date` once took 613 ms to get to its `date`. tend's log
	// reaches stderr through a queue of its own, so a start's line may come after the
	// run has written its tick: wait for the lines too.
	var ticks []time.Time
	waitFor(t, 5*time.Second, "4 starts of tick in the log", func() (bool, string) {
		ticks = ticks[:0]
		for _, l := range strings.Split(tp.stderr.String(), "\n") {
			var e struct {
				Container, Message string
				Time               time.Time
			}
			if json.Unmarshal([]byte(l), &e) == nil && e.Container == "tick" && e.Message == "started" {
				ticks = append(ticks, e.Time)
			}
		}
		return len(ticks) >= 4, fmt.Sprint(len(ticks), " starts")
	})
	for i := 1; i < len(ticks); i++ {
		if d := ticks[i].Sub(ticks[i-1]).Seconds(); d < 1.5 || d > 3.5 {
			t.Errorf("starts %d and %d of tick are %.2f s apart, want about 2 s", i-1, i, d)
		}
	}
	_, d, _ := tp.detail("slow")
	if !findEvent(d, status.Warning, status.ReasonScheduleSkipped, "still running") {
		t.Errorf("no ScheduleSkipped event for the slow job: %+v", d.Events)
	}
	// The event names the time that was skipped, one that has come (in local time,
	// to the second), not the next one.
	for _, e := range d.Events {
		var day, clock string
		if _, err := fmt.Sscanf(e.Message, "the run of %s %s was skipped", &day, &clock); e.Reason != status.ReasonScheduleSkipped || err != nil {
			continue
		}
		if at, err := time.ParseInLocation(time.DateTime, day+" "+clock, time.Local); err != nil || at.After(e.Time.Time) {
			t.Errorf("ScheduleSkipped at %v names the run of %s %s (%v), want a time that has come", e.Time, day, clock, err)
		}
	}
	select {
	case <-tp.done:
		t.Fatalf("tend exited in job mode between scheduled runs: %s", tail(tp.stderr.String(), 2000))
	default:
	}
	doc, _ = tp.status()
	if c := containerStatus(doc, "tick"); c.NextStartAt == nil || c.NextStartAt.Before(time.Now().Add(-time.Second)) {
		t.Errorf("tick next_start_at %v, want the next time", c.NextStartAt)
	}
}

// A schedule that does not parse, that never comes, that is not whole seconds, or on
// a container that restarts always, is a validation error with its line.
func TestScheduleValidation(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`containers:
  - name: a
    command: ./a
    schedule: "*/5 * * *"
    restart_policy: {mode: never}
  - name: b
    command: ./b
    schedule: "@hourly"
  - name: c
    command: ./c
    schedule: "CRON_TZ=Nowhere/Atlantis 0 3 * * *"
    restart_policy: {mode: on_failure}
  - name: d
    command: ./d
    schedule: "CRON_TZ=Europe/Berlin 0 3 * * *"
    restart_policy: {mode: on_failure}
  - name: e
    command: ./e
    schedule: "0 0 31 2 *"
    restart_policy: {mode: never}
  - name: f
    command: ./f
    schedule: "@every 500ms"
    restart_policy: {mode: never}
`), 0o644)
	_, errOut, code := runCLI(t, dir, "validate", bad)
	want := []string{
		bad + `:4: containers[0].schedule: invalid schedule "*/5 * * *"`,
		bad + `:8: containers[1].schedule: needs restart_policy.mode never or on_failure (a run that ends), got always`,
		bad + `:11: containers[2].schedule: invalid schedule "CRON_TZ=Nowhere/Atlantis 0 3 * * *"`,
		bad + `:19: containers[4].schedule: invalid schedule "0 0 31 2 *": no time in the next five years matches it`,
		bad + `:23: containers[5].schedule: invalid schedule "@every 500ms": @every needs a whole number of seconds, at least 1s, not 500ms`,
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("validate output lacks %q:\n%s", w, errOut)
		}
	}
	if code != 2 || strings.Contains(errOut, "containers[3]") {
		t.Errorf("exit %d, want 2 and no error for containers[3]:\n%s", code, errOut)
	}
}
