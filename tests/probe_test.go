package tests

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// pod_agent's exec liveness example: the file the probe reads disappears, liveness
// fails, the process group is killed and restarted with the reason in last_exit.
func TestExecLivenessKillsAndRestarts(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "echo start >> {DIR}/starts; touch {DIR}/healthy; sleep 0.3; rm -f {DIR}/healthy; exec sleep 600"]
    restart_policy: {min_period_ms: 10, max_jitter_ms: 0}
    liveness_probe:
      exec: {command: "cat {DIR}/healthy"}
      time_limit: {initial_delay_ms: 50, min_restart_period_ms: 50, max_restart_period_ms: 50, max_execution_time_ms: 1000}
      failure_threshold: 2
`)
	doc := tp.waitStatus(15*time.Second, "a liveness restart", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.Restarts >= 1 && c.LastExit != nil
	})
	c := containerStatus(doc, "app")
	if !strings.HasPrefix(string(c.LastExit.Reason), "liveness probe failed: ") || c.LastExit.Signal != "SIGKILL" {
		t.Errorf("last_exit = %+v, want SIGKILL with reason 'liveness probe failed: ...'", c.LastExit)
	}
}

// A never-ready application is still killed by liveness (as in pod_agent: the probes are
// independent), and readiness drives the instance ready condition and /v1/ready.
func TestReadinessAndLivenessAreIndependent(t *testing.T) {
	tp := start(t, `
containers:
  - name: never-ready
    command: ["sh", "-c", "echo start >> {DIR}/starts; exec sleep 600"]
    restart_policy: {min_period_ms: 10, max_jitter_ms: 0}
    readiness_probe:
      exec: {command: ["false"]}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 30, max_restart_period_ms: 30}
    liveness_probe:
      exec: {command: "test -e {DIR}/alive"}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 30, max_restart_period_ms: 30}
      failure_threshold: 3
  - name: ready-later
    command: ["sleep", "600"]
    readiness_probe:
      exec: {command: "test -e {DIR}/ready"}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 30, max_restart_period_ms: 30}
`)
	tp.waitStatus(10*time.Second, "never-ready killed by liveness", func(d status.Document) bool {
		return containerStatus(d, "never-ready").Restarts >= 1
	})
	if err := os.WriteFile(filepath.Join(tp.dir, "alive"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	doc := tp.waitStatus(5*time.Second, "instance not ready, naming never-ready", func(d status.Document) bool {
		return d.Ready.Status == "False" && strings.Contains(d.Ready.Message, "never-ready") && strings.Contains(d.Ready.Message, "ready-later")
	})
	if doc.Ready.Reason != "ContainersNotReady" {
		t.Errorf("ready = %+v", doc.Ready)
	}
	resp, err := tp.client().Get("http://tend/v1/ready")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/v1/ready = %v %v, want 503", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "never-ready") {
		t.Errorf("/v1/ready body %q does not say why", body)
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(5*time.Second, "ready-later ready", func(d status.Document) bool {
		return containerStatus(d, "ready-later").Ready.Status == "True" && !strings.Contains(d.Ready.Message, "ready-later")
	})
}

// HTTP liveness against a server that answers "All ok" and later 500 (pod_agent's example), TCP
// readiness on ::1, and /metrics showing probe results.
func TestHTTPLivenessTCPReadinessAndMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	healthy := make(chan bool, 1)
	healthy <- true
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := <-healthy
		healthy <- ok
		if ok {
			io.WriteString(w, "All ok")
			return
		}
		w.WriteHeader(500)
		io.WriteString(w, "error")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tp := start(t, strings.ReplaceAll(`
instance: {port: PORT}
containers:
  - name: web
    command: ["sleep", "600"]
    restart_policy: {min_period_ms: 10, max_jitter_ms: 0}
    liveness_probe:
      http_get: {host: "::1", path: /healthz, expected_answer: "All ok"}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 30, max_restart_period_ms: 30}
    readiness_probe:
      tcp_socket: {}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 30, max_restart_period_ms: 30}
`, "PORT", itoa(port)))
	tp.waitStatus(10*time.Second, "web ready", func(d status.Document) bool {
		c := containerStatus(d, "web")
		return c.Ready.Status == "True" && c.Alive.Status == "True" && d.Ready.Status == "True"
	})
	<-healthy
	healthy <- false
	doc := tp.waitStatus(10*time.Second, "web killed by HTTP liveness", func(d status.Document) bool {
		return containerStatus(d, "web").Restarts >= 1
	})
	if c := containerStatus(doc, "web"); c.LastExit == nil || !strings.Contains(string(c.LastExit.Reason), "liveness probe failed: HTTP 500") {
		t.Errorf("last_exit = %+v, want 'liveness probe failed: HTTP 500...'", c.LastExit)
	}
	resp, err := tp.client().Get("http://tend/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tend_probe_checks_total{container="web",probe="liveness",result="failure"}`,
		`tend_probe_checks_total{container="web",probe="readiness",result="success"}`,
		`tend_container_restarts_total{container="web"}`,
		`tend_container_state{container="web",state="running"}`,
		`tend_probe_duration_seconds_bucket{container="web",probe="liveness"`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
