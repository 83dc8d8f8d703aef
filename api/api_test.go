package api

import (
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

// A listener at its cap whose connections are all being served accepts again once a
// connection closes, and only then; the cap is logged once; Close releases an Accept
// that waits.
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
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first := <-accepted
	<-accepted
	select {
	case <-accepted:
		t.Fatal("accepted a third connection over the cap of 2")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	first.Close() // a second Close returns no second token
	third := <-accepted
	select {
	case <-accepted:
		t.Fatal("accepted a fourth connection over the cap")
	case <-time.After(200 * time.Millisecond):
	}
	if n := strings.Count(logged.String(), "API connection cap reached"); n != 1 {
		t.Errorf("cap logged %d times, want once: %s", n, logged.String())
	}
	third.Close()
	<-accepted
	ln.Close()
	select {
	case <-acceptDone:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Accept")
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

// At the cap, connections whose clients send nothing useful are closed to make room,
// the one that waited longest first: here clients that announced a body and never
// sent it (their handler ran; the server waits for the body) and one that sent
// nothing at all. A fresh client is answered at once, and the cap is logged.
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
	for i := range 3 {
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("request %d with the cap held by quiet clients: %v", i, err)
		}
		resp.Body.Close()
	}
	// The oldest quiet client went first.
	quiet[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := quiet[0].Read(make([]byte, 1)); err == nil {
		t.Error("the quiet client that waited longest is still connected")
	}
	if !strings.Contains(logged.String(), "closed the connection that waited longest") {
		t.Errorf("closing quiet clients was not logged: %s", logged.String())
	}
}
