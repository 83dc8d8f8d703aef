package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

func TestHTTPCheck(t *testing.T) {
	var redirectTargetHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/redirect-target", http.StatusFound)
	})
	mux.HandleFunc("/redirect-target", func(w http.ResponseWriter, r *http.Request) {
		redirectTargetHits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	})
	mux.HandleFunc("/informational", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusMultipleChoices) // 300, the bottom of 3xx
	})
	mux.HandleFunc("/client-error", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest) // 400, just above the range
	})
	mux.HandleFunc("/exact", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("a", MaxBody))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("a", MaxBody+1))
	})
	mux.HandleFunc("/query", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.RawQuery) })
	server := httptest.NewServer(mux)
	defer server.Close()

	tests := []struct {
		name     string
		path     string
		expected string
		any      bool
		ok       bool
		detail   string // the whole Detail, or a prefix when it ends with "..."
	}{
		{name: "200 matching answer", path: "/ok", expected: "ok", ok: true},
		{name: "200 mismatching answer", path: "/ok", expected: "All ok", detail: `HTTP 200, body "ok" does not match expected answer`},
		{name: "200 no expected answer", path: "/ok", ok: true},
		{name: "any accepts any body", path: "/ok", expected: "All ok", any: true, ok: true},
		{name: "500 with the expected body", path: "/fail", expected: "ok", detail: "HTTP 500"},
		{name: "500 with any", path: "/fail", any: true, detail: "HTTP 500"},
		{name: "503", path: "/unavailable", detail: "HTTP 503"},
		{name: "302 not followed", path: "/redirect", ok: true},
		{name: "300 is success", path: "/informational", ok: true},
		{name: "400 is failure", path: "/client-error", detail: "HTTP 400"},
		{name: "body of exactly the bound", path: "/exact", expected: strings.Repeat("a", MaxBody), ok: true},
		{name: "body over the bound", path: "/big", expected: strings.Repeat("a", MaxBody+1), detail: "HTTP 200, body longer than 65536 bytes does not match expected answer"},
		{name: "body over the bound, short answer", path: "/big", expected: "a", detail: "HTTP 200, body longer than 65536 bytes does not match expected answer"},
		{name: "path with query", path: "/query?x=1", expected: "x=1", ok: true},
		{name: "unknown path", path: "/nope", detail: "HTTP 404"},
	}
	// Each case runs on a connection of its own (Check), and on the connection a
	// probe keeps, carried from case to case: answers of every kind must leave it
	// either reusable or closed, never misread by the next check.
	var kept session
	defer kept.close()
	for _, mode := range []struct {
		name string
		keep *session
	}{{"new connection", nil}, {"kept connection", &kept}} {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				h := httpGet(t, server, tt.path)
				h.ExpectedAnswer, h.Any = tt.expected, tt.any
				got := check(context.Background(), spec.Handler{HTTPGet: h}, Target{}, time.Second, mode.keep, probeCheck)
				if got.OK != tt.ok || got.Detail != tt.detail {
					t.Errorf("check = {OK: %v, Detail: %q}, want {OK: %v, Detail: %q}", got.OK, got.Detail, tt.ok, tt.detail)
				}
				if got.Duration <= 0 {
					t.Errorf("Duration = %v, want > 0", got.Duration)
				}
			})
		}
	}
	if n := redirectTargetHits.Load(); n != 0 {
		t.Errorf("the redirect target was requested %d times: redirects must not be followed", n)
	}
}

// An action's HTTP check (Check: stop, destroy and notify handlers, verify) passes on
// 2xx only: a redirect, never followed, did not do what was asked. A probe's passes
// on 200–399.
func TestHTTPActionPassesOn2xxOnly(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/created", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/created", http.StatusFound) })
	mux.HandleFunc("/multiple", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMultipleChoices) })
	server := httptest.NewServer(mux)
	defer server.Close()
	for _, tt := range []struct {
		path          string
		action, probe string // the Detail of each: "" passes
	}{
		{"/created", "", ""},
		{"/empty", "", ""},
		{"/redirect", "HTTP 302", ""},
		{"/multiple", "HTTP 300", ""},
	} {
		h := spec.Handler{HTTPGet: httpGet(t, server, tt.path)}
		if got := Check(context.Background(), h, Target{}, time.Second); got.Detail != tt.action || got.OK != (tt.action == "") {
			t.Errorf("action %s: %+v, want detail %q", tt.path, got, tt.action)
		}
		if got := check(context.Background(), h, Target{}, time.Second, nil, probeCheck); got.Detail != tt.probe || got.OK != (tt.probe == "") {
			t.Errorf("probe %s: %+v, want detail %q", tt.path, got, tt.probe)
		}
	}
}

func TestHTTPDefaultPathAndHost(t *testing.T) {
	var gotPath atomic.Value
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath.Store(r.URL.Path)
	}))
	defer server.Close()
	_, port := hostPort(t, server.Listener.Addr())
	// Host empty: localhost, which resolves to 127.0.0.1 on every machine.
	got := Check(context.Background(), spec.Handler{HTTPGet: &spec.HTTPGet{Port: port}}, Target{}, time.Second)
	if !got.OK {
		t.Fatalf("GET localhost:%s = %q, want success", port, got.Detail)
	}
	if p, _ := gotPath.Load().(string); p != "/" {
		t.Errorf("path = %q, want /", p)
	}
}

func TestHTTPIPv6Host(t *testing.T) {
	l := listenIPv6(t)
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "v6")
	}))
	server.Listener.Close()
	server.Listener = l
	server.Start()
	defer server.Close()
	_, port := hostPort(t, l.Addr())
	for _, host := range []string{"::1", "[::1]"} {
		h := &spec.HTTPGet{Host: host, Port: port, ExpectedAnswer: "v6"}
		if got := Check(context.Background(), spec.Handler{HTTPGet: h}, Target{}, time.Second); !got.OK {
			t.Errorf("GET host %s = %q, want success", host, got.Detail)
		}
	}
}

func TestHTTPTimeout(t *testing.T) {
	server := hangingServer(t)

	got := Check(context.Background(), spec.Handler{HTTPGet: httpGet(t, server, "/")}, Target{}, 100*time.Millisecond)
	if got.OK || got.Detail != "timed out after 100ms" {
		t.Errorf("Check = {OK: %v, Detail: %q}, want a failure \"timed out after 100ms\"", got.OK, got.Detail)
	}
	if got.Duration < 100*time.Millisecond || got.Duration > 2*time.Second {
		t.Errorf("Duration = %v, want about 100ms", got.Duration)
	}
}

func TestHTTPSlowBodyTimesOut(t *testing.T) {
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "All")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer server.Close()
	defer close(release)
	h := httpGet(t, server, "/")
	h.ExpectedAnswer = "All ok"
	got := Check(context.Background(), spec.Handler{HTTPGet: h}, Target{}, 100*time.Millisecond)
	if got.OK || got.Detail != "timed out after 100ms" {
		t.Errorf("Check = {OK: %v, Detail: %q}, want a failure \"timed out after 100ms\"", got.OK, got.Detail)
	}
}

func TestHTTPRefused(t *testing.T) {
	port := freePort(t)
	h := &spec.HTTPGet{Host: "127.0.0.1", Port: port}
	got := Check(context.Background(), spec.Handler{HTTPGet: h}, Target{}, time.Second)
	want := "connection refused by 127.0.0.1:" + port
	if got.OK || got.Detail != want {
		t.Errorf("Check = {OK: %v, Detail: %q}, want a failure %q", got.OK, got.Detail, want)
	}
}

func TestCancelledCheck(t *testing.T) {
	server := hangingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	got := Check(ctx, spec.Handler{HTTPGet: httpGet(t, server, "/")}, Target{}, 0)
	if got.OK || got.Detail != "cancelled" {
		t.Errorf("Check = {OK: %v, Detail: %q}, want a failure \"cancelled\"", got.OK, got.Detail)
	}
}

func TestBadPort(t *testing.T) {
	for _, h := range []spec.Handler{
		{HTTPGet: &spec.HTTPGet{Port: "http"}},
		{TCPSocket: &spec.TCPSocket{Port: "70000"}},
		{TCPSocket: &spec.TCPSocket{}},
	} {
		got := Check(context.Background(), h, Target{}, time.Second)
		if got.OK || !strings.HasPrefix(got.Detail, "bad port ") {
			t.Errorf("Check = {OK: %v, Detail: %q}, want a failure \"bad port ...\"", got.OK, got.Detail)
		}
	}
	if got := Check(context.Background(), spec.Handler{}, Target{}, time.Second); got.OK {
		t.Errorf("Check of an empty handler succeeded")
	}
}

func TestTCPDefaultHostIsIPv6Loopback(t *testing.T) {
	l := listenIPv6(t)
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	_, port := hostPort(t, l.Addr())
	got := Check(context.Background(), spec.Handler{TCPSocket: &spec.TCPSocket{Host: spec.DefaultTCPHost, Port: port}}, Target{}, time.Second)
	if !got.OK {
		t.Fatalf("connect [::1]:%s = %q, want success", port, got.Detail)
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Error("the listener never accepted the probe's connection")
	}
}

func TestTCPIPv4OnlyListenerFailsDefaultHost(t *testing.T) {
	listenIPv6(t) // only to skip on machines without ::1: there the default cannot work at all
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port := hostPort(t, l.Addr())

	got := Check(context.Background(), spec.Handler{TCPSocket: &spec.TCPSocket{Host: spec.DefaultTCPHost, Port: port}}, Target{}, time.Second)
	if got.OK || got.Detail != "connection refused by [::1]:"+port {
		t.Errorf("default-host check of an IPv4-only listener = {OK: %v, Detail: %q}, want refused by [::1]", got.OK, got.Detail)
	}
	// The same listener passes when the probe names its host.
	got = Check(context.Background(), spec.Handler{TCPSocket: &spec.TCPSocket{Host: "127.0.0.1", Port: port}}, Target{}, time.Second)
	if !got.OK {
		t.Errorf("connect 127.0.0.1:%s = %q, want success", port, got.Detail)
	}
}

func TestTCPRefused(t *testing.T) {
	port := freePort(t)
	got := Check(context.Background(), spec.Handler{TCPSocket: &spec.TCPSocket{Host: "127.0.0.1", Port: port}}, Target{}, time.Second)
	if got.OK || got.Detail != "connection refused by 127.0.0.1:"+port {
		t.Errorf("Check = {OK: %v, Detail: %q}, want refused", got.OK, got.Detail)
	}
}

// Checks leave no goroutines or connections behind, whatever the answer was.
func TestChecksLeakNothing(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "All ok") })
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, strings.Repeat("x", 10000))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	server := httptest.NewServer(mux)
	defer server.Close()
	defer close(release)
	_, port := hostPort(t, server.Listener.Addr())
	before := runtime.NumGoroutine()

	for _, tc := range []struct {
		path, expected string
		any            bool
	}{
		{"/ok", "All ok", false}, {"/ok", "", false}, {"/ok", "x", true}, {"/ok", "nope", false},
		{"/fail", "", false}, {"/redirect", "", false}, {"/hang", "", false},
	} {
		h := &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: tc.path, ExpectedAnswer: tc.expected, Any: tc.any}
		for range 5 {
			Check(context.Background(), spec.Handler{HTTPGet: h}, Target{}, 50*time.Millisecond)
		}
	}
	for range 5 {
		Check(context.Background(), spec.Handler{TCPSocket: &spec.TCPSocket{Host: "127.0.0.1", Port: port}}, Target{}, time.Second)
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before the checks, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		<-time.After(10 * time.Millisecond) // polling with a deadline: goroutines announce no exit
	}
}

func TestStatusCode(t *testing.T) {
	for _, c := range []struct {
		line string
		code int
		ok   bool
	}{
		{"HTTP/1.1 200 OK\r\n", 200, true},
		{"HTTP/1.0 503 Service Unavailable\r\n", 503, true},
		{"HTTP/1.1 302\r\n", 302, true},
		{"HTTP/1.1 204\n", 204, true},
		{"HTTP/2 200 OK\r\n", 0, false},
		{"HTTP/1.1 20x OK\r\n", 0, false},
		{"HTTP/1.1 2000 OK\r\n", 0, false},
		{"SSH-2.0-OpenSSH\r\n", 0, false},
		{"", 0, false},
	} {
		code, ok := statusCode([]byte(c.line))
		if code != c.code || ok != c.ok {
			t.Errorf("statusCode(%q) = %d, %v; want %d, %v", c.line, code, ok, c.code, c.ok)
		}
	}
}
