package tests

// The stop sequence end to end (docs/reference.md "Stop sequence"): children record what happens to them
// as "NAME EVENT UNIX_NANOS" lines in {DIR}/events, and the tests check the order and
// the spacing of those events with generous bounds.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// eventSlack absorbs the lateness of an event line: a trap runs once the current `sleep
// 0.02` ends, and two processes are forked before `date` reads the clock (on a busy
// machine, with the suite's other tests, that takes over 100 ms at times).
const eventSlack = 150 * time.Millisecond

func init() {
	// The http_get stop handler test runs this test binary as its container.
	if os.Getenv("STOP_TEST_HELPER") == "http-server" {
		os.Exit(httpServerHelper(os.Args[1:]))
	}
}

// httpServerHelper is a container for TestStopHTTPGetHandler: args are NAME, the events
// file and the port. It records "up" once listening, "shutdown" on GET /shutdown
// (answering "bye", then exiting 0 by itself), "term" on SIGTERM (then exiting 143)
// and "exit" just before it exits.
func httpServerHelper(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: NAME EVENTS PORT")
		return 2
	}
	name, events, port := args[0], args[1], args[2]
	record := func(what string) {
		f, err := os.OpenFile(events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		fmt.Fprintf(f, "%s %s %d\n", name, what, time.Now().UnixNano())
		f.Close()
	}
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	quit := make(chan int, 2)
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		<-terms
		record("term")
		quit <- 143
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/shutdown", func(w http.ResponseWriter, _ *http.Request) {
		record("shutdown")
		io.WriteString(w, "bye")
		quit <- 0
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	record("up")
	code := <-quit
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx) // lets the answer to /shutdown go out
	record("exit")
	return code
}

// startStop is start with more placeholders: {EV} is a command that appends
// "NAME EVENT UNIX_NANOS" to {DIR}/events ({EV} NAME EVENT), {SELF} is this test
// binary, and {RECORDER NAME} and {RECORDER_IGNORING_TERM NAME} are the commands of
// recorder. expand applies the same replacements (and {DIR}) to a spec written later.
func startStop(t *testing.T, specText string) (tp *tend, expand func(string) string) {
	t.Helper()
	ev := filepath.Join(t.TempDir(), "ev")
	script := "#!/bin/sh\necho \"$2 $3 $(date +%s%N)\" >> \"$1\"\n"
	if err := os.WriteFile(ev, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	placeholders := strings.NewReplacer("{EV}", ev+" {DIR}/events", "{SELF}", self)
	replace := func(s string) string { return placeholders.Replace(expandRecorders(s)) }
	tp = start(t, replace(specText))
	expand = func(s string) string { return strings.ReplaceAll(replace(s), "{DIR}", tp.dir) }
	return tp, expand
}

var recorderPlaceholder = regexp.MustCompile(`\{(RECORDER|RECORDER_IGNORING_TERM) (\w+)\}`)

// expandRecorders replaces {RECORDER NAME} and {RECORDER_IGNORING_TERM NAME} by the
// commands of recorder.
func expandRecorders(specText string) string {
	return recorderPlaceholder.ReplaceAllStringFunc(specText, func(m string) string {
		sub := recorderPlaceholder.FindStringSubmatch(m)
		return recorder(sub[2], sub[1] == "RECORDER_IGNORING_TERM")
	})
}

// recorder is the command of the usual container of these tests: it records
// "NAME up" once it runs and "NAME term" on SIGTERM, and then exits 0, or keeps
// running when ignoreTerm.
func recorder(name string, ignoreTerm bool) string {
	onTerm := "{EV} " + name + " term; exit 0"
	if ignoreTerm {
		onTerm = "{EV} " + name + " term"
	}
	return fmt.Sprintf(`[sh, -c, "trap '%s' TERM; {EV} %s up; while true; do sleep 0.02; done"]`, onTerm, name)
}

// childEvent is one line of {DIR}/events.
type childEvent struct {
	name, what string
	at         time.Time
}

type timeline []childEvent

func readEvents(t *testing.T, dir string) timeline {
	t.Helper()
	var tl timeline
	for _, l := range lines(t, filepath.Join(dir, "events")) {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("bad event line %q", l)
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("bad event line %q: %v", l, err)
		}
		tl = append(tl, childEvent{f[0], f[1], time.Unix(0, ns)})
	}
	return tl
}

// all returns the times of every NAME EVENT, in the order they were written.
func (tl timeline) all(name, what string) []time.Time {
	var at []time.Time
	for _, e := range tl {
		if e.name == name && e.what == what {
			at = append(at, e.at)
		}
	}
	return at
}

// one returns the time of NAME EVENT, which must have happened exactly once.
func (tl timeline) one(t *testing.T, name, what string) time.Time {
	t.Helper()
	at := tl.all(name, what)
	if len(at) != 1 {
		t.Fatalf("%q %q happened %d times, want once; events:\n%s", name, what, len(at), tl)
	}
	return at[0]
}

func (tl timeline) String() string {
	if len(tl) == 0 {
		return "(none)"
	}
	var b strings.Builder
	t0 := tl[0].at
	for _, e := range tl {
		fmt.Fprintf(&b, "  +%6dms %s %s\n", e.at.Sub(t0).Milliseconds(), e.name, e.what)
	}
	return b.String()
}

// waitEvent waits until NAME EVENT has happened at least n times.
func waitEvent(t *testing.T, tp *tend, name, what string, n int) {
	t.Helper()
	waitFor(t, 10*time.Second, fmt.Sprintf("%d× %s %s", n, name, what), func() (bool, string) {
		tl := readEvents(t, tp.dir)
		return len(tl.all(name, what)) >= n, tl.String()
	})
}

// loggedStep is a step of a stop sequence as tend logged it.
type loggedStep struct {
	step string
	at   time.Time // milliseconds
}

type loggedSteps []loggedStep

// stepsOf returns the stop steps tend logged for container name, in order.
func stepsOf(t *testing.T, tp *tend, name string) loggedSteps {
	t.Helper()
	var steps loggedSteps
	sc := bufio.NewScanner(strings.NewReader(tp.stderr.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct {
			Container string `json:"container"`
			Message   string `json:"message"`
			Step      string `json:"step"`
			Time      string `json:"time"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Container != name || rec.Message != "stopping" {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", rec.Time)
		if err != nil {
			t.Fatalf("log time %q: %v", rec.Time, err)
		}
		steps = append(steps, loggedStep{rec.Step, at})
	}
	return steps
}

func (s loggedSteps) has(step string) bool {
	for _, x := range s {
		if x.step == step {
			return true
		}
	}
	return false
}

// first returns when step was first logged.
func (s loggedSteps) first(t *testing.T, step string) time.Time {
	t.Helper()
	for _, x := range s {
		if x.step == step {
			return x.at
		}
	}
	t.Fatalf("no %q step in the logged stop steps %v", step, s.names())
	return time.Time{}
}

func (s loggedSteps) names() []string {
	var names []string
	for _, x := range s {
		names = append(names, x.step)
	}
	return names
}

// checkSpan checks that d lies in [lo, hi].
func checkSpan(t *testing.T, what string, d, lo, hi time.Duration, tl timeline) {
	t.Helper()
	if d < lo || d > hi {
		t.Errorf("%s = %v, want between %v and %v; events:\n%s", what, d, lo, hi, tl)
	}
}

// A failing exec stop handler is retried up to max_tries, a time_limit period apart;
// wait_after_ms applies after the failure too (docs/reference.md "Stop sequence"): the process, which stays,
// gets SIGTERM only once it is over, and SIGKILL after term_timeout_ms as it ignores
// SIGTERM; tend still exits 0. term_timeout_ms is long enough for the recorder's trap
// to write its event on a loaded machine (at 500 ms a CI run at load 10 killed it first).
func TestStopExecHandlerRetriesThenTermThenKill(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp, _ := startStop(t, `
containers:
  - name: app
    command: {RECORDER_IGNORING_TERM app}
    stop_policy:
      exec: {command: [sh, -c, "{EV} app handler; exit 1"]}
      max_tries: 3
      time_limit: {min_restart_period_ms: 300, max_restart_period_ms: 300}
      wait_after_ms: 700
      term_timeout_ms: 1500
`)
	waitEvent(t, tp, "app", "up", 1)
	_, exited := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)

	tries := tl.all("app", "handler")
	if len(tries) != 3 {
		t.Fatalf("the handler ran %d times, want max_tries 3; events:\n%s", len(tries), tl)
	}
	// Tries start a period apart (start to start), and each event is late by its try's
	// own start-up: on a loaded machine a try took 280 ms to record and to fail, and
	// the next, started on time, recorded 21 ms after it. So one gap may look short;
	// two periods from the first try to the last may not, beyond two events' lateness.
	for i := 1; i < len(tries); i++ {
		checkSpan(t, fmt.Sprintf("time between tries %d and %d", i, i+1), tries[i].Sub(tries[i-1]), 0, 1500*time.Millisecond, tl)
	}
	checkSpan(t, "time from the first try to the last", tries[2].Sub(tries[0]), 600*time.Millisecond-2*eventSlack, 3*time.Second, tl)
	term := tl.one(t, "app", "term")
	// wait_after_ms (700 ms) follows the last try before SIGTERM.
	checkSpan(t, "last try to SIGTERM (wait_after_ms after a failed handler)", term.Sub(tries[2]), 700*time.Millisecond, 3*time.Second, tl)
	steps := stepsOf(t, tp, "app")
	checkSpan(t, "logged SIGTERM to SIGKILL (term_timeout_ms 1500ms)", steps.first(t, "kill").Sub(steps.first(t, "term")), 1500*time.Millisecond-2*time.Millisecond, 4*time.Second, tl)
	checkSpan(t, "SIGTERM to the end of tend", exited.Sub(term), 0, 5*time.Second, tl)
}

// A stop handler that fails (it asks the process to quit, then exits 1) is still
// followed by wait_after_ms (docs/reference.md "Stop sequence"): the process exits by itself within it and
// never gets SIGTERM.
func TestStopFailedHandlerThenExitWithinWaitAfter(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: quits
    command: [sh, -c, "trap '{EV} quits term' TERM; {EV} quits up; while [ ! -e {DIR}/quit ]; do sleep 0.02; done; sleep 0.3; {EV} quits exit"]
    stop_policy:
      exec: {command: [sh, -c, "{EV} quits handler; touch {DIR}/quit; exit 1"]}
      max_tries: 1
      wait_after_ms: 5000
      term_timeout_ms: 10000
`)
	waitEvent(t, tp, "quits", "up", 1)
	sent, exited := termAndWait(t, tp, 15*time.Second)
	tl := readEvents(t, tp.dir)

	tl.one(t, "quits", "handler")
	quit := tl.one(t, "quits", "exit")
	if n := len(tl.all("quits", "term")); n != 0 {
		t.Errorf("quits got SIGTERM although it exited within wait_after_ms after its failed handler; events:\n%s", tl)
	}
	checkSpan(t, "quits: exit to the end of tend (wait_after_ms ends at the exit)", exited.Sub(quit), 0, 2*time.Second, tl)
	if took := exited.Sub(sent); took > 4*time.Second {
		t.Errorf("shutdown took %v; wait_after_ms (5s) should have ended at the exit", took)
	}
}

// A successful exec handler runs once (max_tries is only for failures); then
// wait_after_ms waits for the process to exit by itself: one that exits gets no
// SIGTERM and ends the wait early, one that does not gets SIGTERM after wait_after_ms.
func TestStopExecHandlerSuccessWaitAfter(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: quits
    command: [sh, -c, "trap '{EV} quits term' TERM; {EV} quits up; while [ ! -e {DIR}/quit ]; do sleep 0.02; done; {EV} quits exit"]
    stop_policy:
      exec: {command: [sh, -c, "{EV} quits handler; touch {DIR}/quit"]}
      max_tries: 3
      time_limit: {min_restart_period_ms: 100, max_restart_period_ms: 100}
      wait_after_ms: 4000
      term_timeout_ms: 10000
  - name: stays
    command: {RECORDER stays}
    stop_policy:
      exec: {command: [sh, -c, "{EV} stays handler"]}
      max_tries: 3
      time_limit: {min_restart_period_ms: 100, max_restart_period_ms: 100}
      wait_after_ms: 400
      term_timeout_ms: 10000
`)
	waitEvent(t, tp, "quits", "up", 1)
	waitEvent(t, tp, "stays", "up", 1)
	sent, exited := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)

	tl.one(t, "quits", "handler")
	quit := tl.one(t, "quits", "exit")
	if n := len(tl.all("quits", "term")); n != 0 {
		t.Errorf("quits got SIGTERM although it exited within wait_after_ms; events:\n%s", tl)
	}
	checkSpan(t, "quits: exit to the end of tend (wait_after_ms ends at the exit)", exited.Sub(quit), 0, 2*time.Second, tl)

	handler := tl.one(t, "stays", "handler")
	term := tl.one(t, "stays", "term")
	checkSpan(t, "stays: handler to SIGTERM (wait_after_ms 400ms)", term.Sub(handler), 400*time.Millisecond, 2*time.Second, tl)
	if took := exited.Sub(sent); took > 3*time.Second {
		t.Errorf("shutdown took %v; quits' wait_after_ms (4s) should have ended at its exit", took)
	}
}

// An http_get handler GETs /shutdown on instance.port; the server answers and exits
// by itself within wait_after_ms, so it never gets SIGTERM.
func TestStopHTTPGetHandler(t *testing.T) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	tp, _ := startStop(t, fmt.Sprintf(`
instance: {port: %d}
containers:
  - name: web
    command: ["{SELF}", web, "{DIR}/events", "{BSCONFIG_IPORT}"]
    env: [{name: STOP_TEST_HELPER, value: http-server}]
    stop_policy:
      http_get: {path: /shutdown, expected_answer: bye}
      max_tries: 3
      time_limit: {min_restart_period_ms: 100, max_restart_period_ms: 100}
      wait_after_ms: 5000
      term_timeout_ms: 5000
`, port))
	waitEvent(t, tp, "web", "up", 1)
	sent, exited := termAndWait(t, tp, 15*time.Second)
	tl := readEvents(t, tp.dir)

	tl.one(t, "web", "shutdown")
	tl.one(t, "web", "exit")
	if n := len(tl.all("web", "term")); n != 0 {
		t.Errorf("web got SIGTERM; it should have exited on GET /shutdown; events:\n%s", tl)
	}
	if took := exited.Sub(sent); took > 4*time.Second {
		t.Errorf("shutdown took %v, want well under wait_after_ms (5s)", took)
	}
	if steps := stepsOf(t, tp, "web"); steps.has("term") || steps.has("kill") {
		t.Errorf("logged stop steps %v, want neither term nor kill", steps.names())
	}
}

// A unix_signal handler sends its signal max_tries times a period apart, waits one
// more period and SIGKILLs the group; the process never gets SIGTERM.
func TestStopUnixSignalHandler(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: sig
    command: [sh, -c, "trap '{EV} sig int' INT; trap '{EV} sig term' TERM; {EV} sig up; while true; do sleep 0.02; done"]
    stop_policy:
      unix_signal: {signal: SIGINT}
      max_tries: 3
      time_limit: {min_restart_period_ms: 200, max_restart_period_ms: 200}
      term_timeout_ms: 60000
`)
	waitEvent(t, tp, "sig", "up", 1)
	_, exited := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)

	ints := tl.all("sig", "int")
	if len(ints) != 3 {
		t.Fatalf("sig got SIGINT %d times, want max_tries 3; events:\n%s", len(ints), tl)
	}
	for i := 1; i < len(ints); i++ {
		checkSpan(t, fmt.Sprintf("time between SIGINTs %d and %d", i, i+1), ints[i].Sub(ints[i-1]), 200*time.Millisecond-eventSlack, 1500*time.Millisecond, tl)
	}
	checkSpan(t, "last SIGINT to the end of tend", exited.Sub(ints[2]), 0, 3*time.Second, tl)
	if n := len(tl.all("sig", "term")); n != 0 {
		t.Errorf("sig got SIGTERM; a unix_signal handler replaces it; events:\n%s", tl)
	}
	// tend logs each signal just before it sends it: the spacing is exact there.
	steps := stepsOf(t, tp, "sig")
	var sent []time.Time
	for _, s := range steps {
		if s.step == "handler" {
			sent = append(sent, s.at)
		}
	}
	if len(sent) != 3 || !steps.has("kill") || steps.has("term") {
		t.Fatalf("logged stop steps %v, want 3 handler tries, a kill and no term", steps.names())
	}
	for i := 1; i < len(sent); i++ {
		checkSpan(t, fmt.Sprintf("logged time between SIGINTs %d and %d", i, i+1), sent[i].Sub(sent[i-1]), 200*time.Millisecond-2*time.Millisecond, 1500*time.Millisecond, tl)
	}
	checkSpan(t, "logged last SIGINT to SIGKILL (one more period)", steps.first(t, "kill").Sub(sent[2]), 200*time.Millisecond-2*time.Millisecond, 1500*time.Millisecond, tl)
}

// The TERM barrier: a WAIT container gets SIGTERM only once every IGNORE container has
// finished its handler and wait_after_ms; an IGNORE container without a handler gets
// SIGTERM at once; WAIT containers do not wait for each other.
func TestBarrierWaitsForIgnoreContainers(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: a
    command: {RECORDER a}
    stop_policy:
      exec: {command: [sh, -c, "{EV} a handler-start; sleep 0.5; {EV} a handler-end"]}
      wait_after_ms: 200
  - name: b
    term_barrier: WAIT
    command: {RECORDER b}
  - name: c
    command: {RECORDER c}
  - name: d
    term_barrier: WAIT
    command: {RECORDER d}
    stop_policy:
      exec: {command: [sh, -c, "{EV} d handler-start; sleep 1.5; {EV} d handler-end"]}
`)
	for _, name := range []string{"a", "b", "c", "d"} {
		waitEvent(t, tp, name, "up", 1)
	}
	termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)

	aEnd := tl.one(t, "a", "handler-end")
	aTerm := tl.one(t, "a", "term")
	checkSpan(t, "a: handler end to SIGTERM (wait_after_ms 200ms)", aTerm.Sub(aEnd), 200*time.Millisecond, 2*time.Second, tl)
	if cTerm := tl.one(t, "c", "term"); !cTerm.Before(aEnd) {
		t.Errorf("c (IGNORE, no handler) got SIGTERM after a's handler ended; want at once; events:\n%s", tl)
	}
	bTerm := tl.one(t, "b", "term")
	if bTerm.Before(aEnd.Add(200 * time.Millisecond)) {
		t.Errorf("b (WAIT) got SIGTERM before a's handler and wait_after_ms were over; events:\n%s", tl)
	}
	dEnd := tl.one(t, "d", "handler-end")
	if !bTerm.Before(dEnd) {
		t.Errorf("b (WAIT) waited for d's handler; WAIT containers must not wait for each other; events:\n%s", tl)
	}
	if dTerm := tl.one(t, "d", "term"); dTerm.Before(dEnd) {
		t.Errorf("d got SIGTERM before its own handler ended; events:\n%s", tl)
	}
	if steps := stepsOf(t, tp, "b"); !steps.has("barrier") {
		t.Errorf("b's logged stop steps %v, want a barrier step", steps.names())
	}
}

// A container that is not running and waits at the TERM barrier (WAIT) must not count
// as an IGNORE container arriving: here the crash-looping WAIT container would open
// the barrier for w before a's stop handler has ended.
func TestBarrierIdleWaitContainerDoesNotOpen(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: a
    command: {RECORDER a}
    stop_policy:
      exec: {command: [sh, -c, "{EV} a handler-start; sleep 0.5; {EV} a handler-end"]}
  - name: w
    term_barrier: WAIT
    command: {RECORDER w}
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

// A WAIT container alone, or with only other WAIT containers, proceeds at once.
func TestBarrierWaitAloneProceedsAtOnce(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: w1
    term_barrier: WAIT
    command: {RECORDER w1}
  - name: w2
    term_barrier: WAIT
    command: {RECORDER w2}
`)
	waitEvent(t, tp, "w1", "up", 1)
	waitEvent(t, tp, "w2", "up", 1)
	sent, _ := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)
	checkSpan(t, "w1: SIGTERM to tend until its SIGTERM", tl.one(t, "w1", "term").Sub(sent), 0, time.Second, tl)
	checkSpan(t, "w2: SIGTERM to tend until its SIGTERM", tl.one(t, "w2", "term").Sub(sent), 0, time.Second, tl)
}

// A container that is not running counts as arrived at the barrier, and no stop
// handler runs for it: here it waits in backoff at shutdown.
func TestStopNoHandlerWhenNotRunning(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: crash
    command: [sh, -c, "{EV} crash start; exit 1"]
    restart_policy: {min_period_ms: 60000, max_period_ms: 60000, max_jitter_ms: 0}
    stop_policy:
      exec: {command: [sh, -c, "{EV} crash handler"]}
      term_timeout_ms: 60000
  - name: w
    term_barrier: WAIT
    command: {RECORDER w}
`)
	waitEvent(t, tp, "w", "up", 1)
	tp.waitStatus(10*time.Second, "crash in backoff", func(d status.Document) bool {
		return containerStatus(d, "crash").State == status.Backoff
	})
	sent, exited := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)
	if n := len(tl.all("crash", "handler")); n != 0 {
		t.Errorf("crash's stop handler ran %d times while it was not running, want never; events:\n%s", n, tl)
	}
	if n := len(tl.all("crash", "start")); n != 1 {
		t.Errorf("crash started %d times, want once (shutdown must not restart it)", n)
	}
	checkSpan(t, "w: SIGTERM to tend until its SIGTERM", tl.one(t, "w", "term").Sub(sent), 0, time.Second, tl)
	checkSpan(t, "shutdown", exited.Sub(sent), 0, 3*time.Second, tl)
}

// The destroy policy runs after the stop and its initial_delay_ms, also when the stop
// failed (handler failed, SIGKILL needed) and when the process was not running
// (a finished `never` container); it is retried up to max_tries until it succeeds.
func TestDestroyPolicyAfterStop(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: stubborn
    command: {RECORDER_IGNORING_TERM stubborn}
    stop_policy:
      exec: {command: [sh, -c, "{EV} stubborn handler; exit 1"]}
      term_timeout_ms: 200
    destroy_policy:
      exec: {command: [sh, -c, "{EV} stubborn destroy; exit 1"]}
      max_tries: 3
      time_limit: {initial_delay_ms: 300, min_restart_period_ms: 150, max_restart_period_ms: 150}
  - name: done
    command: [sh, -c, "{EV} done ran"]
    restart_policy: {mode: never}
    stop_policy:
      exec: {command: [sh, -c, "{EV} done handler"]}
    destroy_policy:
      exec: {command: [sh, -c, "{EV} done destroy"]}
      max_tries: 3
      time_limit: {initial_delay_ms: 100, min_restart_period_ms: 100, max_restart_period_ms: 100}
  - name: keeper
    command: {RECORDER keeper}
`)
	waitEvent(t, tp, "stubborn", "up", 1)
	waitEvent(t, tp, "keeper", "up", 1)
	tp.waitStatus(10*time.Second, "done completed", func(d status.Document) bool {
		return containerStatus(d, "done").State == status.Completed
	})
	if n := len(readEvents(t, tp.dir).all("done", "destroy")); n != 0 {
		t.Fatalf("done was destroyed when it completed; destroy is for shutdown and removal")
	}
	sent, _ := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)

	tl.one(t, "stubborn", "handler")
	term := tl.one(t, "stubborn", "term")
	destroys := tl.all("stubborn", "destroy")
	if len(destroys) != 3 {
		t.Fatalf("stubborn's destroy ran %d times, want max_tries 3; events:\n%s", len(destroys), tl)
	}
	checkSpan(t, "stubborn: SIGTERM to the first destroy (term_timeout_ms 200ms, SIGKILL, initial_delay_ms 300ms)",
		destroys[0].Sub(term), 500*time.Millisecond-eventSlack, 3*time.Second, tl)
	steps := stepsOf(t, tp, "stubborn")
	checkSpan(t, "stubborn: logged SIGKILL to the first destroy (initial_delay_ms 300ms)", destroys[0].Sub(steps.first(t, "kill")), 300*time.Millisecond-2*time.Millisecond, 3*time.Second, tl)
	for i := 1; i < len(destroys); i++ {
		checkSpan(t, fmt.Sprintf("time between destroy tries %d and %d", i, i+1), destroys[i].Sub(destroys[i-1]), 150*time.Millisecond-eventSlack, 1500*time.Millisecond, tl)
	}

	if n := len(tl.all("done", "handler")); n != 0 {
		t.Errorf("done's stop handler ran although it was not running; events:\n%s", tl)
	}
	checkSpan(t, "done: SIGTERM to tend until its destroy (initial_delay_ms 100ms)", tl.one(t, "done", "destroy").Sub(sent), 100*time.Millisecond, 3*time.Second, tl)
}

// A second SIGTERM during a long stop handler cancels every wait (the handler, the
// barrier, term_timeout_ms) and SIGKILLs at once; tend exits 0.
func TestStopSecondSignalDuringHandler(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: slow
    command: {RECORDER_IGNORING_TERM slow}
    stop_policy:
      exec: {command: [sh, -c, "{EV} slow handler; sleep 30"]}
      time_limit: {max_execution_time_ms: 60000}
      term_timeout_ms: 60000
    destroy_policy:
      exec: {command: [sh, -c, "{EV} slow destroy"]}
      time_limit: {initial_delay_ms: 30000}
  - name: waiter
    term_barrier: WAIT
    command: {RECORDER_IGNORING_TERM waiter}
    stop_policy: {term_timeout_ms: 60000}
`)
	waitEvent(t, tp, "slow", "up", 1)
	waitEvent(t, tp, "waiter", "up", 1)
	tp.signal(syscall.SIGTERM)
	waitEvent(t, tp, "slow", "handler", 1)
	tp.waitStatus(5*time.Second, "waiter at the barrier", func(d status.Document) bool {
		return containerStatus(d, "waiter").StopStep == "barrier"
	})
	begin := time.Now()
	termAndWait(t, tp, 10*time.Second)
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("tend took %v to exit after the second SIGTERM, want at once", took)
	}
	for _, name := range []string{"slow", "waiter"} {
		if steps := stepsOf(t, tp, name); !steps.has("kill") || steps.has("term") || steps.has("destroy") {
			t.Errorf("%s: logged stop steps %v, want a kill at once (no SIGTERM first, no destroy)", name, steps.names())
		}
	}
}

// While stopping, status shows the instance and the containers stopping and where
// each stop sequence is (stop_step).
func TestStopStatusShowsStopStep(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: a
    command: [sh, -c, "trap '{EV} a term' TERM; {EV} a up; while [ ! -e {DIR}/release-term ]; do sleep 0.02; done"]
    stop_policy:
      exec: {command: [sh, -c, "{EV} a handler; while [ ! -e {DIR}/release-handler ]; do sleep 0.02; done"]}
      term_timeout_ms: 60000
  - name: b
    term_barrier: WAIT
    command: {RECORDER b}
`)
	waitEvent(t, tp, "a", "up", 1)
	waitEvent(t, tp, "b", "up", 1)
	tp.signal(syscall.SIGTERM)
	doc := tp.waitStatus(5*time.Second, "a in its handler and b at the barrier", func(d status.Document) bool {
		a, b := containerStatus(d, "a"), containerStatus(d, "b")
		return a.StopStep == "handler" && b.StopStep == "barrier"
	})
	if doc.State != status.InstanceStopping {
		t.Errorf("instance state = %q, want %q", doc.State, status.InstanceStopping)
	}
	for _, c := range doc.Containers {
		if c.State != status.Stopping || c.Ready.Status != "False" {
			t.Errorf("%s: state %q ready %q, want stopping and not ready", c.Name, c.State, c.Ready.Status)
		}
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "release-handler"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(5*time.Second, "a waiting for its exit after SIGTERM", func(d status.Document) bool {
		return containerStatus(d, "a").StopStep == "term"
	})
	waitEvent(t, tp, "b", "term", 1)
	if err := os.WriteFile(filepath.Join(tp.dir, "release-term"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

// A container that exits with a non-zero code during its stop is not restarted, by
// `stop NAME` or by shutdown, and a requested shutdown still exits 0.
func TestStopNonZeroExitNotRestarted(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: app
    command: [sh, -c, "trap '{EV} app term; exit 3' TERM; {EV} app start; while true; do sleep 0.02; done"]
    restart_policy: {min_period_ms: 0, max_jitter_ms: 0}
  - name: quitter
    command: [sh, -c, "{EV} quitter start; while [ ! -e {DIR}/quit ]; do sleep 0.02; done; exit 7"]
    restart_policy: {mode: on_failure, min_period_ms: 0, max_jitter_ms: 0}
    stop_policy:
      exec: {command: [sh, -c, "touch {DIR}/quit"]}
      wait_after_ms: 5000
  - name: late
    command: [sh, -c, "trap '{EV} late term; exit 5' TERM; {EV} late start; while true; do sleep 0.02; done"]
    restart_policy: {mode: on_failure, min_period_ms: 0, max_jitter_ms: 0}
`)
	for _, name := range []string{"app", "quitter", "late"} {
		waitEvent(t, tp, name, "start", 1)
	}
	for _, name := range []string{"app", "quitter"} {
		resp, err := tp.client().Post("http://tend/v1/containers/"+name+"/stop", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("stop %s: HTTP %d", name, resp.StatusCode)
		}
	}
	stopped := func(d status.Document) (bool, string) {
		for name, code := range map[string]int{"app": 3, "quitter": 7} {
			c := containerStatus(d, name)
			if c.State != status.Stopped || c.LastExit == nil || c.LastExit.Code != code {
				return false, name
			}
		}
		return true, ""
	}
	tp.waitStatus(10*time.Second, "app and quitter stopped with their exit codes", func(d status.Document) bool {
		ok, _ := stopped(d)
		return ok
	})
	// A restart would be immediate (min_period_ms 0): watch for a while that none comes.
	for deadline := time.Now().Add(400 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, ok := tp.status(); ok {
			if still, name := stopped(d); !still {
				t.Fatalf("%s did not stay stopped: %+v", name, containerStatus(d, name))
			}
		}
	}
	termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)
	for _, name := range []string{"app", "quitter", "late"} {
		if n := len(tl.all(name, "start")); n != 1 {
			t.Errorf("%s started %d times, want once; events:\n%s", name, n, tl)
		}
	}
	tl.one(t, "late", "term")
}

// Containers stop concurrently: the shutdown takes as long as the longest stop, not
// the sum of them.
func TestStopContainersConcurrently(t *testing.T) {
	tp, _ := startStop(t, `
containers:
  - name: one
    command: {RECORDER one}
    stop_policy:
      exec: {command: [sh, -c, "{EV} one handler-start; sleep 0.8; {EV} one handler-end"]}
  - name: two
    command: {RECORDER two}
    stop_policy:
      exec: {command: [sh, -c, "{EV} two handler-start; sleep 0.8; {EV} two handler-end"]}
`)
	waitEvent(t, tp, "one", "up", 1)
	waitEvent(t, tp, "two", "up", 1)
	sent, exited := termAndWait(t, tp, 10*time.Second)
	tl := readEvents(t, tp.dir)
	firstEnd := tl.one(t, "one", "handler-end")
	if e := tl.one(t, "two", "handler-end"); e.Before(firstEnd) {
		firstEnd = e
	}
	for _, name := range []string{"one", "two"} {
		if !tl.one(t, name, "handler-start").Before(firstEnd) {
			t.Errorf("%s's handler started after the other one ended: stops ran one after another; events:\n%s", name, tl)
		}
	}
	// On a busy machine `sleep 0.8` takes longer: compare with what the handlers took.
	took := exited.Sub(sent)
	var sum time.Duration
	for _, name := range []string{"one", "two"} {
		sum += tl.one(t, name, "handler-end").Sub(tl.one(t, name, "handler-start"))
	}
	if took < 800*time.Millisecond || took >= sum {
		t.Errorf("shutdown took %v, want at least 800ms and less than the sum of the handlers (%v); events:\n%s", took, sum, tl)
	}
}

// A shutdown during a reload joins the containers the reload is still stopping: the
// WAIT containers of the shutdown wait until every one of them has reached its TERM,
// a container whose stop has already finished does not hold them, and a destroy run
// after a joined stop does not count twice.
func TestBarrierShutdownDuringReload(t *testing.T) {
	const specV1 = `
containers:
  - name: w
    term_barrier: WAIT
    command: {RECORDER w}
  - name: v
    command: {RECORDER v}
    stop_policy:
      exec: {command: [sh, -c, "{EV} v handler-start; while [ ! -e {DIR}/release-v ]; do sleep 0.02; done; {EV} v handler-end"]}
      time_limit: {max_execution_time_ms: 60000}
  - name: x
    env: [{name: VERSION, value: "1"}]
    command: {RECORDER x}
  - name: z1
    env: [{name: VERSION, value: "1"}]
    command: {RECORDER z1}
    stop_policy:
      exec: {command: [sh, -c, "{EV} z1 handler-start; while [ ! -e {DIR}/release-z1 ]; do sleep 0.02; done; {EV} z1 handler-end"]}
      time_limit: {max_execution_time_ms: 60000}
    destroy_policy:
      exec: {command: [sh, -c, "{EV} z1 destroy"]}
  - name: z2
    env: [{name: VERSION, value: "1"}]
    command: {RECORDER z2}
    stop_policy:
      exec: {command: [sh, -c, "{EV} z2 handler-start; while [ ! -e {DIR}/release-z2 ]; do sleep 0.02; done; {EV} z2 handler-end"]}
      time_limit: {max_execution_time_ms: 60000}
`
	tp, expand := startStop(t, specV1)
	for _, name := range []string{"w", "v", "x", "z1", "z2"} {
		waitEvent(t, tp, name, "up", 1)
	}
	release := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tp.dir, "release-"+name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The reload changes x, z1 and z2: the old x stops at once, z1 and z2 block in
	// their stop handlers.
	specV2 := strings.ReplaceAll(specV1, `value: "1"`, `value: "2"`)
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(expand(specV2)), 0o644); err != nil {
		t.Fatal(err)
	}
	tp.signal(syscall.SIGHUP)
	waitEvent(t, tp, "x", "term", 1)
	waitEvent(t, tp, "z1", "handler-start", 1)
	waitEvent(t, tp, "z2", "handler-start", 1)
	tp.waitStatus(5*time.Second, "the old x stopped", func(d status.Document) bool {
		return containerStatus(d, "x").State == status.Stopped
	})

	tp.signal(syscall.SIGTERM)
	waitEvent(t, tp, "v", "handler-start", 1)
	tp.waitStatus(5*time.Second, "w at the barrier", func(d status.Document) bool {
		return containerStatus(d, "w").StopStep == "barrier"
	})
	// z1 reaches its TERM, then is destroyed (the shutdown asked for it); then v
	// reaches its TERM. z2 is still in its handler: w must keep waiting.
	release("z1")
	waitEvent(t, tp, "z1", "destroy", 1)
	release("v")
	waitEvent(t, tp, "v", "handler-end", 1)
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n := len(readEvents(t, tp.dir).all("w", "term")); n != 0 {
			t.Fatalf("w got SIGTERM while z2 was still in its stop handler; events:\n%s", readEvents(t, tp.dir))
		}
	}
	release("z2")
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	tl := readEvents(t, tp.dir)
	if wTerm := tl.one(t, "w", "term"); wTerm.Before(tl.one(t, "z2", "handler-end")) {
		t.Errorf("w got SIGTERM before z2's stop handler ended; events:\n%s", tl)
	}
}

// A stop handler's http_get succeeds on 2xx only: a redirect (never followed) did not
// stop anything, so the next try comes, and then SIGTERM.
func TestStopHTTPGetRedirectIsAFailedTry(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	tp := start(t, fmt.Sprintf(`
containers:
  - name: web
    command: ["sleep", "600"]
    stop_policy:
      http_get: {host: 127.0.0.1, port: %d, path: /stop}
      max_tries: 2
      time_limit: {min_restart_period_ms: 100, max_restart_period_ms: 100}
      term_timeout_ms: 5000
`, port))
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	termAndWait(t, tp, 15*time.Second)
	if n := hits.Load(); n != 2 {
		t.Errorf("the stop handler was tried %d times, want 2 (a 302 is a failed try)", n)
	}
	if steps := stepsOf(t, tp, "web"); !steps.has("term") {
		t.Errorf("logged stop steps %v, want term after the failed tries", steps.names())
	}
}
