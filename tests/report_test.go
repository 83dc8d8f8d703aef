package tests

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// The report receiver gets the status document on changes and as heartbeats, with
// last_heartbeat_time set and Content-Type application/json.
func TestReportOnChangeAndHeartbeat(t *testing.T) {
	var mu sync.Mutex
	var docs []status.Document
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d status.Document
		b, _ := io.ReadAll(r.Body)
		if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &d) != nil {
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		docs = append(docs, d)
		mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tp := start(t, `
containers:
  - name: app
    command: ["sleep", "600"]
`, runOpts{args: []string{"--report-url", "http://" + ln.Addr().String() + "/report", "--report-interval", "300ms"}})
	waitFor(t, 10*time.Second, "a report of the running container and two heartbeats after it", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		running := 0
		for _, d := range docs {
			if d.LastHeartbeatTime == nil {
				return false, "a report without last_heartbeat_time"
			}
			if containerStatus(d, "app").State == status.Running {
				running++
			}
		}
		return running >= 3, strconv.Itoa(len(docs)) + " reports, " + strconv.Itoa(running) + " running"
	})
	_ = tp
}

// A receiver that never answers delays no restart.
func TestHangingReceiverDoesNotDelaySupervision(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang })}
	go srv.Serve(ln)
	t.Cleanup(func() { close(hang); srv.Close() })
	tp := start(t, `
containers:
  - name: crash
    command: ["sh", "-c", "echo x >> {DIR}/starts; exit 1"]
    restart_policy: {min_period_ms: 20, max_period_ms: 20, max_jitter_ms: 0}
`, runOpts{args: []string{"--report-url", "http://" + ln.Addr().String() + "/report", "--report-interval", "100ms"}})
	begin := time.Now()
	waitFor(t, 10*time.Second, "20 restarts", func() (bool, string) {
		n := len(lines(t, filepath.Join(tp.dir, "starts")))
		return n >= 20, strconv.Itoa(n)
	})
	if took := time.Since(begin); took > 5*time.Second {
		t.Errorf("20 restarts 20 ms apart took %v with a hanging report receiver", took)
	}
}

// A report in flight when tend stops is let finish, not cut off, and the last report
// says stopped: a receiver that answers slowly (or serves one connection at a time)
// still gets the final state.
func TestReportInFlightAtStopFinishes(t *testing.T) {
	rr := newReportReceiver(t, 400*time.Millisecond) // slow: a report is nearly always in flight
	tp := start(t, `
containers:
  - name: app
    command: ["sleep", "600"]
`, runOpts{args: []string{"--report-url", rr.url, "--report-interval", "100ms"}})
	waitFor(t, 10*time.Second, "a report of the running container", func() (bool, string) {
		docs := rr.all()
		return len(docs) > 0 && containerStatus(docs[len(docs)-1], "app").State == status.Running, strconv.Itoa(len(docs)) + " reports"
	})
	time.Sleep(150 * time.Millisecond) // into the next report's 400 ms
	termAndWait(t, tp, 10*time.Second)
	docs := rr.all()
	if last := docs[len(docs)-1]; last.State != status.InstanceStopped {
		t.Errorf("the last report says %s, want stopped", last.State)
	}
	if strings.Contains(tp.stderr.String(), "status report failed") {
		t.Errorf("a report was cut off at the stop:\n%s", tail(tp.stderr.String(), 2000))
	}
}
