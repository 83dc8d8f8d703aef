package api

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/internal/testutil"
)

// net/http's own errors (here a handler that panics) reach tend's log, not the
// silenced standard logger.
func TestAPIServerErrorsAreLogged(t *testing.T) {
	var logged testutil.SyncBuffer
	a := &Server{log: zerolog.New(&logged), closed: make(chan struct{})}
	srv := a.newServer("127.0.0.1:0", false)
	srv.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("broken handler") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logged.String(), "http: panic serving") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the server error; logged: %q", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logged.String(), `"level":"warn"`) || !strings.Contains(logged.String(), `"listen":"127.0.0.1:0"`) {
		t.Errorf("log line %q: want a warning naming the listener", logged.String())
	}
}

func TestConnBudget(t *testing.T) {
	for _, tt := range []struct {
		fdLimit            uint64
		total, perListener int
	}{
		{1 << 20, 512, 256},
		{20000, 512, 256},
		{1024, 256, 256},
		{400, 100, 100},
		{2, 1, 1},
	} {
		b := newConnBudget(tt.fdLimit)
		if cap(b.tcp.tokens) != tt.total || b.tcpPerListener != tt.perListener {
			t.Errorf("fd limit %d: total %d, per listener %d; want %d, %d", tt.fdLimit, cap(b.tcp.tokens), b.tcpPerListener, tt.total, tt.perListener)
		}
	}
}

// A listener at its cap whose connections are all being served answers a further
// client 503 at once and closes it (it never waits in the backlog), and accepts again
// once a connection closes; the cap is logged once; Close ends Accept.
func TestLimitListener(t *testing.T) {
	var logged testutil.SyncBuffer
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &connBudget{tcpPerListener: 2, tcp: newConnPool(3)}
	ln := b.limit(inner, "test", false, zerolog.New(&logged))
	accepted := make(chan net.Conn, 10)
	acceptDone := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptDone <- err
				return
			}
			c.(*limitConn).setWaiting(false) // as serving does while a handler runs
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// shed checks that c is answered 503 and closed, and never accepted.
	shed := func(c net.Conn) {
		t.Helper()
		c.Write([]byte("GET /v1/live HTTP/1.1\r\nHost: x\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a client over the cap: %v %v, want 503 at once", resp, err)
		}
		select {
		case <-accepted:
			t.Fatal("accepted a connection over the cap of 2")
		default:
		}
	}
	dial()
	dial()
	first := <-accepted
	<-accepted
	shed(dial())
	first.Close()
	first.Close() // a second Close returns no second token
	dial()
	third := <-accepted
	shed(dial())
	if n := strings.Count(logged.String(), "API connection cap reached"); n != 1 {
		t.Errorf("cap logged %d times, want once: %s", n, logged.String())
	}
	third.Close()
	dial()
	<-accepted
	ln.Close()
	select {
	case <-acceptDone:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Accept")
	}
}

// At the cap, an idle keep-alive connection is closed to make room: clients that
// leave their connections open (a fresh http.Client per call) do not lock others out.
func TestLimitListenerClosesIdleConnections(t *testing.T) {
	var logged testutil.SyncBuffer
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &connBudget{tcpPerListener: 2, tcp: newConnPool(2)}
	ln := b.limit(inner, "test", false, zerolog.New(&logged))
	srv := &http.Server{
		Handler:     serving(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }), time.Minute),
		ConnContext: connContext,
		ConnState:   trackIdle,
	}
	go srv.Serve(ln)
	defer srv.Close()
	for i := range 10 {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}} // keeps its connection
		resp, err := client.Get("http://" + inner.Addr().String() + "/")
		if err != nil {
			t.Fatalf("request %d with 2 idle connections held by earlier clients: %v", i, err)
		}
		resp.Body.Close()
	}
	if strings.Contains(logged.String(), "cap reached") {
		t.Errorf("closing idle connections logged the cap: %s", logged.String())
	}
}

// A pool found full whose holders close before a connection to close is looked for has
// room after all: the new client is admitted, not shed. (A 503 with the pool free made
// TestLimitListenerClosesIdleConnections fail now and then under load.)
func TestLimitListenerAdmitsWhenHoldersCloseMeanwhile(t *testing.T) {
	var logged testutil.SyncBuffer
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	b := &connBudget{tcpPerListener: 1, tcp: newConnPool(1)}
	l := b.limit(inner, "test", false, zerolog.New(&logged))
	c1, peer1 := net.Pipe()
	defer peer1.Close()
	held := l.admit(c1)
	if held == nil {
		t.Fatal("the first connection was shed")
	}
	held.setWaiting(false) // its request is being served
	defer func(f func()) { reclaiming = f }(reclaiming)
	reclaiming = func() { held.Close() } // it ends just after the pool was found full
	c2, peer2 := net.Pipe()
	defer peer2.Close()
	lc := l.admit(c2)
	if lc == nil {
		t.Fatalf("the second connection was shed with the pool free: %s", logged.String())
	}
	lc.Close()
	if strings.Contains(logged.String(), "cap reached") {
		t.Errorf("the cap was logged: %s", logged.String())
	}
}

// At the cap, connections whose clients send nothing useful are closed to make room,
// the one that waited longest first: here clients that announced a body and never
// sent it (their handler ran; the server waits for the body) and one that sent
// nothing at all. Until they have waited reclaimAfter a fresh client is told 503 at
// once; then it is answered, and the cap is logged.
func TestLimitListenerReclaimsQuietClients(t *testing.T) {
	var logged testutil.SyncBuffer
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &connBudget{tcpPerListener: 3, tcp: newConnPool(3)}
	ln := b.limit(inner, "test", false, zerolog.New(&logged))
	served := make(chan struct{}, 10)
	srv := &http.Server{
		Handler: serving(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("ok"))
			served <- struct{}{}
		}), time.Minute),
		ReadTimeout: time.Minute,
		ConnContext: connContext,
		ConnState:   trackIdle,
	}
	go srv.Serve(ln)
	defer srv.Close()
	addr := inner.Addr().String()
	var quiet []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"))
		select {
		case <-served: // the answer waits for the body (net/http reads it first)
		case <-time.After(5 * time.Second):
			t.Fatal("a request with a body to come was not served")
		}
		quiet = append(quiet, c)
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 3; {
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d with the cap held by quiet clients: %v", i, err)
		}
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			i++
		case resp.StatusCode != http.StatusServiceUnavailable:
			t.Fatalf("request %d: %d, want 200, or 503 while the quiet clients are young", i, resp.StatusCode)
		case time.Now().After(deadline):
			t.Fatalf("request %d still told 503 after 5 s: the quiet clients were not closed", i)
		default:
			time.Sleep(50 * time.Millisecond) // polling with a deadline: the quiet clients age
		}
	}
	// The oldest quiet client went first.
	quiet[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := quiet[0].Read(make([]byte, 1)); err == nil {
		t.Error("the quiet client that waited longest is still connected")
	}
	if !strings.Contains(logged.String(), "API connection cap reached") {
		t.Errorf("the cap was not logged: %s", logged.String())
	}
}
