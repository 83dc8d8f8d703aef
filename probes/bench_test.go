package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// cpuPerOp reports the process's CPU time (user + system, the server's share
// included) per iteration as cpu-ns/op, on top of the wall time of ns/op: on a
// loaded machine the wall time is mostly waiting.
func cpuPerOp(b *testing.B) func() {
	before := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-before)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The cost of one check against a loopback server (the server's share included).
func BenchmarkHTTPCheck(b *testing.B) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "All ok") }))
	defer server.Close()
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/healthz", ExpectedAnswer: "All ok"}}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if r := Check(context.Background(), h, Target{}, time.Second); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}

// A probe without expected_answer: only the status line is read.
func BenchmarkHTTPStatusCheck(b *testing.B) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer server.Close()
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if r := Check(context.Background(), h, Target{}, time.Second); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}

func BenchmarkTCPCheck(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	h := spec.Handler{TCPSocket: &spec.TCPSocket{Host: "127.0.0.1", Port: port}}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if r := Check(context.Background(), h, Target{}, time.Second); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}

// A probe's check on the connection it keeps (the common case at a 1 s period).
func BenchmarkHTTPKeptCheck(b *testing.B) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer server.Close()
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
	var kept session
	defer kept.close()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}

// An https probe's check on the TLS connection it keeps: compare with
// BenchmarkHTTPKeptCheck for the cost of TLS once the handshake is done.
func BenchmarkHTTPSKeptCheck(b *testing.B) {
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer server.Close()
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Scheme: spec.SchemeHTTPS, Host: "127.0.0.1", Port: port, Path: "/"}}
	var kept session
	defer kept.close()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}

// An https check on a connection of its own (stop and destroy handlers, and a
// probe's reconnection every maxConnAge): a handshake per check, resumed from the
// session cache.
func BenchmarkHTTPSCheck(b *testing.B) {
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer server.Close()
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Scheme: spec.SchemeHTTPS, Host: "127.0.0.1", Port: port, Path: "/"}}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if r := Check(context.Background(), h, Target{}, time.Second); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}
