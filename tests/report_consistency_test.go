package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// reportReceiver records every POSTed status document.
type reportReceiver struct {
	mu   sync.Mutex
	docs []status.Document
	url  string
}

// newReportReceiver answers each report after delay (a slow receiver), or at once.
func newReportReceiver(t *testing.T, delay time.Duration) *reportReceiver {
	t.Helper()
	rr := &reportReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d status.Document
		b, _ := io.ReadAll(r.Body)
		time.Sleep(delay)
		if err := json.Unmarshal(b, &d); err != nil {
			w.WriteHeader(400)
			return
		}
		rr.mu.Lock()
		rr.docs = append(rr.docs, d)
		rr.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	rr.url = "http://" + ln.Addr().String() + "/report"
	return rr
}

func (rr *reportReceiver) all() []status.Document {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return append([]status.Document(nil), rr.docs...)
}

// comparable drops what differs between two documents of the same state: the
// heartbeat's time, tend's own process (only GET /v1/status has it) and what the
// containers use, a reading that moves each second and sends no report (a container
// that had just started showed its exec's CPU in the report and 0 % a second later).
func comparable(d status.Document) string {
	d.LastHeartbeatTime = nil
	d.Tend = nil
	d.Containers = slices.Clone(d.Containers)
	for i := range d.Containers {
		d.Containers[i].Usage = status.Usage{}
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// Every report is one consistent snapshot: the instance's ready agrees with the
// containers it shows, the last report of a quiet instance equals /v1/status, and the
// final report shows the final states.
func TestReportsAreConsistentSnapshots(t *testing.T) {
	rr := newReportReceiver(t, 0)
	tp := start(t, `
containers:
  - name: flaky
    command: ["sh", "-c", "if [ ! -f {DIR}/once ]; then touch {DIR}/once; exit 1; fi; exec sleep 600"]
    restart_policy: {min_period_ms: 1000, max_jitter_ms: 0}
  - name: steady
    command: ["sleep", "600"]
`, runOpts{args: []string{"--report-url", rr.url}})
	tp.waitStatus(10*time.Second, "flaky running after one crash", func(d status.Document) bool {
		c := containerStatus(d, "flaky")
		return c.State == status.Running && c.Restarts == 1 && d.Ready.True()
	})
	waitFor(t, 5*time.Second, "the last report to equal /v1/status", func() (bool, string) {
		docs := rr.all()
		doc, ok := tp.status()
		if !ok || len(docs) == 0 {
			return false, "no report yet"
		}
		last, now := comparable(docs[len(docs)-1]), comparable(doc)
		return last == now, firstDifference(last, now)
	})
	termAndWait(t, tp, 10*time.Second)
	docs := rr.all()
	for i, d := range docs {
		for _, c := range d.Containers {
			if d.Ready.True() && (c.State != status.Running || !c.Ready.True()) {
				t.Errorf("report %d: instance ready with container %s %s (ready %s)", i, c.Name, c.State, c.Ready.Status)
			}
		}
	}
	final := docs[len(docs)-1]
	if final.State != status.InstanceStopped || final.Ready.True() {
		t.Errorf("final report: state %s ready %s, want stopped and not ready", final.State, final.Ready.Status)
	}
	for _, c := range final.Containers {
		if c.State != status.Stopped {
			t.Errorf("final report: %s is %s, want stopped", c.Name, c.State)
		}
	}
	var sawBackoff bool
	for _, d := range docs {
		if containerStatus(d, "flaky").State == status.Backoff {
			sawBackoff = true
		}
	}
	if !sawBackoff {
		t.Errorf("no report showed flaky in backoff (every state change is reported): %d reports", len(docs))
	}
}

// firstDifference shows where two documents first differ.
func firstDifference(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-400)
	return fmt.Sprintf("last report ...%s\nstatus      ...%s", a[from:min(len(a), i+200)], b[from:min(len(b), i+200)])
}
