package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// The cost of one check against a loopback server (the server's share included).
func BenchmarkHTTPCheck(b *testing.B) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "All ok") }))
	defer server.Close()
	_, port, _ := net.SplitHostPort(server.Listener.Addr().String())
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/healthz", ExpectedAnswer: "All ok"}}
	b.ReportAllocs()
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
	for b.Loop() {
		if r := check(context.Background(), h, Target{}, time.Second, &kept); !r.OK {
			b.Fatal(r.Detail)
		}
	}
}
