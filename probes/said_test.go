package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// A failing HTTP check says what the server said: the start of the body, MaxSaid
// bytes at most, however long the body (a 10 MB one is not read), on a new and on a
// kept connection, whatever the framing. A passing check says nothing.
func TestHTTPFailureSaysTheBody(t *testing.T) {
	big := strings.Repeat("x", 10<<20)
	var bigWritten atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "db down", http.StatusInternalServerError) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(big)))
		w.WriteHeader(http.StatusServiceUnavailable)
		n, _ := w.Write([]byte(big))
		bigWritten.Add(int64(n))
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.(http.Flusher).Flush() // no Content-Length: chunked
		fmt.Fprint(w, "upstream\nfailed")
	})
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "fine") })
	server := httptest.NewServer(mux)
	defer server.Close()
	var kept session
	defer kept.close()
	for _, keep := range []*session{nil, &kept} {
		for _, tt := range []struct{ path, detail, said string }{
			{"/down", "HTTP 500", "db down"},
			{"/big", "HTTP 503", strings.Repeat("x", MaxSaid)},
			{"/chunked", "HTTP 502", "upstream failed"},
			{"/ok", "", ""},
		} {
			start := time.Now()
			got := check(context.Background(), spec.Handler{HTTPGet: httpGet(t, server, tt.path)}, Target{}, 5*time.Second, keep, probeCheck)
			if got.Detail != tt.detail || got.Said != tt.said {
				t.Errorf("%s (kept %v): detail %q, said %q; want %q, %q", tt.path, keep != nil, got.Detail, trim(got.Said), tt.detail, trim(tt.said))
			}
			if want := strings.TrimSuffix(tt.detail+": "+tt.said, ": "); got.Message() != want {
				t.Errorf("%s: message %q, want %q", tt.path, trim(got.Message()), trim(want))
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("%s took %v: the body must not be read through", tt.path, d)
			}
		}
	}
	// The server could not write 10 MB into a connection nobody reads: socket
	// buffers hold a few MB at most.
	if n := bigWritten.Load(); n >= int64(len(big)) {
		t.Errorf("the server wrote the whole 10 MB body (%d bytes) twice: the check read it", n)
	}
}

// A body that ends with the connection and comes in a write after the headers (an
// HTTP/1.0 server: Python's http.server) is said too; one that never comes on a
// connection the server keeps open costs the check saidGrace, not its timeout.
func TestHTTPFailureSaysTheBodyThatComesLate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				n, _ := c.Read(buf)
				fmt.Fprint(c, "HTTP/1.0 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n")
				if strings.Contains(string(buf[:n]), "/silent") {
					time.Sleep(3 * time.Second) // keeps the connection open, says nothing
					return
				}
				time.Sleep(20 * time.Millisecond)
				fmt.Fprint(c, "db down")
			}()
		}
	}()
	host, port := hostPort(t, ln.Addr())
	for _, tt := range []struct{ path, said string }{{"/late", "db down"}, {"/silent", ""}} {
		start := time.Now()
		got := check(context.Background(), spec.Handler{HTTPGet: &spec.HTTPGet{Host: host, Port: port, Path: tt.path}}, Target{}, 2*time.Second, nil, probeCheck)
		if got.OK || got.Detail != "HTTP 500" || got.Said != tt.said {
			t.Errorf("%s: ok %v, detail %q, said %q; want a failure, HTTP 500, %q", tt.path, got.OK, got.Detail, got.Said, tt.said)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %v: what the server said is waited for %v at most", tt.path, d, saidGrace)
		}
	}
}

// A probe's message never holds the value of a request header: a token in headers
// stays out, even when the check fails.
func TestHTTPMessageHoldsNoHeaderValue(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer server.Close()
	h := httpGet(t, server, "/")
	h.Headers = []spec.HTTPHeader{{Name: "Authorization", Value: "Bearer s3cr3t-token"}}
	got := check(context.Background(), spec.Handler{HTTPGet: h}, Target{}, time.Second, nil, probeCheck)
	if got.OK || strings.Contains(got.Message(), "s3cr3t") {
		t.Errorf("message %q: want a failure without the header's value", got.Message())
	}
}

// A History keeps the last HistoryLen checks, oldest first.
func TestHistoryKeepsTheLastChecks(t *testing.T) {
	var h History
	if got := h.Last(); len(got) != 0 {
		t.Fatalf("empty history: %v", got)
	}
	at := time.Unix(1000, 0)
	for i := range HistoryLen + 3 {
		h.add(at.Add(time.Duration(i)*time.Second), Result{OK: i%2 == 0, Detail: fmt.Sprint(i)})
	}
	got := h.Last()
	if len(got) != HistoryLen {
		t.Fatalf("%d records, want %d", len(got), HistoryLen)
	}
	for i, r := range got {
		if want := fmt.Sprint(i + 3); r.Result.Detail != want || !r.At.Equal(at.Add(time.Duration(i+3)*time.Second)) {
			t.Errorf("record %d: %q at %v, want %q", i, r.Result.Detail, r.At, want)
		}
	}
}

func trim(s string) string {
	if len(s) > 40 {
		return s[:40] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}
