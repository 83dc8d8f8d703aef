package tests

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// logRecord is one line of tend's JSON log.
type logRecord struct {
	Container string `json:"container"`
	Message   string `json:"message"`
	Step      string `json:"step"`
	Time      string `json:"time"`
	at        time.Time
}

// logRecords returns tend's JSON log lines about containers, in the order written.
func logRecords(t *testing.T, tp *tend) []logRecord {
	t.Helper()
	var out []logRecord
	sc := bufio.NewScanner(strings.NewReader(tp.stderr.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r logRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Container == "" {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z07:00", r.Time)
		if err != nil {
			t.Fatalf("log time %q: %v", r.Time, err)
		}
		r.at = at
		out = append(out, r)
	}
	return out
}

// find returns the index of the first record of container with message (and step,
// when given), or fails.
func find(t *testing.T, recs []logRecord, container, message, step string) int {
	t.Helper()
	for i, r := range recs {
		if r.Container == container && r.Message == message && (step == "" || r.Step == step) {
			return i
		}
	}
	t.Fatalf("no log %q %q %q in:\n%v", container, message, step, recs)
	return -1
}

// examples/stack.yaml runs end to end: db, migrate and api start in that order, and
// shutdown stops api before db.
func TestStackExample(t *testing.T) {
	b, err := os.ReadFile("../examples/stack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tp := start(t, string(b))
	tp.waitStatus(20*time.Second, "api running", func(d status.Document) bool {
		return containerStatus(d, "api").State == status.Running
	})
	// api's SIGTERM goes to its whole group: let its `cat` finish first.
	waitFor(t, 10*time.Second, "api serving", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "api | serving schema"), out
	})
	// migrate completed with 0: it is not ready itself but holds the instance back no more.
	doc := tp.waitStatus(10*time.Second, "the instance ready once migrate succeeded", func(d status.Document) bool {
		return d.Ready.True()
	})
	if m := containerStatus(doc, "migrate"); m.State != status.Completed || m.Ready.True() {
		t.Errorf("migrate: %s, ready %s; want completed and not ready itself", m.State, m.Ready.Status)
	}
	termAndWait(t, tp, 20*time.Second)
	recs := logRecords(t, tp)
	db, migrate, api := find(t, recs, "db", "started", ""), find(t, recs, "migrate", "started", ""), find(t, recs, "api", "started", "")
	if !(db < migrate && migrate < api) || recs[migrate].at.Before(recs[db].at) || recs[api].at.Before(recs[migrate].at) {
		t.Errorf("starts are not in the order db, migrate, api: %v %v %v", recs[db], recs[migrate], recs[api])
	}
	apiExit, dbTerm := find(t, recs, "api", "exited while stopping", ""), find(t, recs, "db", "stopping", "term")
	if apiExit > dbTerm || recs[dbTerm].at.Before(recs[apiExit].at) {
		t.Errorf("db got SIGTERM before api exited: %v %v", recs[apiExit], recs[dbTerm])
	}
	if out := unpadded(tp.stdout.String()); !strings.Contains(out, "api | serving schema 3") {
		t.Errorf("api did not see migrate's work:\n%s", out)
	}
}
