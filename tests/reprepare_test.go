package tests

// Re-preparing on reload (docs/reference.md "Reload", docs/reference.md "Resources on reload"): a reload that
// changes a static resource, files or init containers stops every container, puts
// the new files in place, runs the init containers again and starts the containers
// again. The processes record "WHAT CONTENT UNIX_NANOS" lines in {DIR}/events.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// reprepSpec has a static resource conf.txt at url, an init container that records
// what it sees (after sleeping initSleep), app, which records what it sees at start
// and at SIGTERM, and other, whose command is otherCmd.
func reprepSpec(srv *fileServer, url, initSleep, otherCmd string) string {
	record := func(what string) string {
		return `echo "` + what + ` $(cat {DIR}/conf.txt) $(date +%s%N)" >> {DIR}/events`
	}
	return fmt.Sprintf(`
resources:
  - {name: conf.txt, urls: ["%s%s"]}
init_containers:
  - name: setup
    command:
      - sh
      - -c
      - |
        %s
        sleep %s
containers:
  - name: app
    command:
      - sh
      - -c
      - |
        trap '%s; exit 0' TERM
        %s
        while true; do sleep 0.02; done
  - name: other
    command: %s
`, srv.URL, url, record("init"), initSleep, record("term"), record("start"), otherCmd)
}

// event is one line of {DIR}/events.
type event struct {
	what, content string
	at            time.Time
}

func readReprepEvents(t *testing.T, dir string) []event {
	t.Helper()
	var out []event
	for _, l := range lines(t, filepath.Join(dir, "events")) {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("bad event line %q", l)
		}
		ns, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatalf("bad event line %q", l)
		}
		out = append(out, event{what: f[0], content: f[1] + " " + f[2], at: time.Unix(0, ns)})
	}
	return out
}

// waitEvents waits until dir/events has n lines.
func waitEvents(t *testing.T, dir string, n int) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("%d events", n), func() (bool, string) {
		evs := readReprepEvents(t, dir)
		return len(evs) == n, eventsString(evs)
	})
}

func eventsString(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %q %s\n", e.what, e.content, e.at.Format("15:04:05.000"))
	}
	return b.String()
}

func runningPid(t *testing.T, doc status.Document, name string) int {
	t.Helper()
	c := containerStatus(doc, name)
	if c.State != status.Running || c.Pid == nil {
		t.Fatalf("%s is not running: %+v", name, c)
	}
	return *c.Pid
}

// A changed static resource re-prepares: the old process still sees the old file
// when it gets SIGTERM; then the init container and the new process see the new one,
// in that order. Meanwhile the instance is preparing, installed False with reason
// Preparing, and a container request is answered 409.
func TestReloadChangedResourceReprepares(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "version 1", "/v2": "version 2"})
	tp := start(t, reprepSpec(srv, "/v1", "0", "[sleep, '60']"))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && containerStatus(d, "other").State == status.Running
	})
	oldOther := runningPid(t, doc, "other")
	waitEvents(t, tp.dir, 2)

	writeSpec(t, tp, reprepSpec(srv, "/v2", "1", "[sleep, '60']"))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: HTTP %d", code)
	}
	tp.waitStatus(15*time.Second, "re-preparing", func(d status.Document) bool {
		return d.State == status.InstancePreparing && d.Installed.Status == "False" && d.Installed.Reason == status.ReasonPreparing
	})
	if code := post(t, tp, "/v1/containers/app/restart"); code != 409 {
		t.Errorf("restart while re-preparing: HTTP %d, want 409", code)
	}
	doc = tp.waitStatus(20*time.Second, "running again", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return d.State == status.InstanceRunning && d.Installed.True() && c.State == status.Running &&
			containerStatus(d, "other").State == status.Running
	})
	if pid := runningPid(t, doc, "other"); pid == oldOther {
		t.Errorf("other kept pid %d; a re-prepare restarts every container", pid)
	}
	waitEvents(t, tp.dir, 5)
	evs := readReprepEvents(t, tp.dir)
	want := []string{"init version 1", "start version 1", "term version 1", "init version 2", "start version 2"}
	for i, e := range evs {
		if got := e.what + " " + e.content; got != want[i] {
			t.Fatalf("event %d = %q, want %q; events:\n%s", i, got, want[i], eventsString(evs))
		}
		if i > 0 && e.at.Before(evs[i-1].at) {
			t.Errorf("event %d is earlier than event %d; events:\n%s", i, i-1, eventsString(evs))
		}
	}
	if doc.ReloadError != "" {
		t.Errorf("reload_error = %q", doc.ReloadError)
	}
	termAndWait(t, tp, 10*time.Second)
}

// startReprep runs reprepSpec with conf.txt at version 1 until app and other run and
// the init container and app's start are recorded; it returns their pids.
func startReprep(t *testing.T) (srv *fileServer, tp *tend, app, other int) {
	t.Helper()
	srv = newFileServer(t, map[string]string{"/v1": "version 1"})
	tp = start(t, reprepSpec(srv, "/v1", "0", "[sleep, '60']"))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && containerStatus(d, "other").State == status.Running
	})
	app, other = runningPid(t, doc, "app"), runningPid(t, doc, "other")
	waitEvents(t, tp.dir, 2)
	return srv, tp, app, other
}

// A reload that changes only a container that depends on nothing prepared does not
// re-prepare: the init container does not run again, the other containers keep
// their processes.
func TestReloadUnrelatedContainerNoReprepare(t *testing.T) {
	srv, tp, app, other := startReprep(t)

	writeSpec(t, tp, reprepSpec(srv, "/v1", "0", "[sleep, '61']"))
	post(t, tp, "/v1/reload")
	doc := tp.waitStatus(15*time.Second, "other restarted", func(d status.Document) bool {
		c := containerStatus(d, "other")
		return c.State == status.Running && c.Pid != nil && *c.Pid != other
	})
	if pid := runningPid(t, doc, "app"); pid != app {
		t.Errorf("app's pid changed from %d to %d", app, pid)
	}
	if doc.State != status.InstanceRunning || !doc.Installed.True() || doc.Installed.Reason != status.ReasonPrepared {
		t.Errorf("instance state %s, installed %+v; want running and Prepared", doc.State, doc.Installed)
	}
	evs := readReprepEvents(t, tp.dir)
	if len(evs) != 2 || evs[0].what != "init" || evs[1].what != "start" {
		t.Errorf("events:\n%s\nwant one init and one start", eventsString(evs))
	}
	if n := srv.count("/v1"); n != 1 {
		t.Errorf("conf.txt fetched %d times, want 1", n)
	}
	termAndWait(t, tp, 10*time.Second)
}

// A new resource whose fetch fails changes nothing: the processes keep running
// untouched, the old file stays, the init container does not run again, and
// reload_error says why.
func TestReloadReprepareFetchFailureChangesNothing(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	srv, tp, app, other := startReprep(t)

	writeSpec(t, tp, reprepSpec(srv, "/missing", "0", "[sleep, '60']"))
	post(t, tp, "/v1/reload")
	doc := tp.waitStatus(30*time.Second, "reload_error", func(d status.Document) bool {
		return strings.Contains(d.ReloadError, `resource "conf.txt"`)
	})
	if pid := runningPid(t, doc, "app"); pid != app {
		t.Errorf("app's pid changed from %d to %d", app, pid)
	}
	if pid := runningPid(t, doc, "other"); pid != other {
		t.Errorf("other's pid changed from %d to %d", other, pid)
	}
	if doc.State != status.InstanceRunning || !doc.Installed.True() {
		t.Errorf("instance state %s, installed %+v; want running and installed", doc.State, doc.Installed)
	}
	if b, _ := os.ReadFile(filepath.Join(tp.dir, "conf.txt")); string(b) != "version 1" {
		t.Errorf("conf.txt = %q, want version 1", b)
	}
	if evs := readReprepEvents(t, tp.dir); len(evs) != 2 {
		t.Errorf("events:\n%s\nwant one init and one start", eventsString(evs))
	}
	termAndWait(t, tp, 10*time.Second)
}

// A SIGTERM while a reload re-prepares cancels the init container and shuts down at
// once with exit 0: nothing waits for the init container's sleep.
func TestReprepareShutdownCancelsInit(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "version 1", "/v2": "version 2"})
	tp := start(t, reprepSpec(srv, "/v1", "0", "[sleep, '60']"))
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	waitEvents(t, tp.dir, 2)
	writeSpec(t, tp, reprepSpec(srv, "/v2", "30", "[sleep, '60']"))
	post(t, tp, "/v1/reload")
	waitEvents(t, tp.dir, 4) // term of the old app, then the new init run began
	sent, exited := termAndWait(t, tp, 15*time.Second)
	if took := exited.Sub(sent); took > 5*time.Second {
		t.Errorf("shutdown took %v; the init container's sleep 30 should have been cancelled", took)
	}
	if evs := readReprepEvents(t, tp.dir); len(evs) != 4 {
		t.Errorf("events:\n%s\nwant no new start after the shutdown", eventsString(evs))
	}
}
