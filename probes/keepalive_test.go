package probes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tend-sh/tend/spec"
)

// countingServer is an HTTP server answering "ok" that counts the connections it
// accepted; header, when set, is added to every answer.
func countingServer(t *testing.T, header string) (*httptest.Server, *atomic.Int32) {
	server, conns, _ := hitServer(t, header)
	return server, conns
}

// hitServer is countingServer that also records its requests.
func hitServer(t *testing.T, header string) (*httptest.Server, *atomic.Int32, *hits) {
	var conns atomic.Int32
	requests := newHits()
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.add()
		if header != "" {
			k, v, _ := strings.Cut(header, ": ")
			w.Header().Set(k, v)
		}
		fmt.Fprint(w, "ok")
	}))
	server.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	server.Start()
	t.Cleanup(server.Close)
	return server, &conns, requests
}

func TestKeptConnectionIsReused(t *testing.T) {
	server, conns := countingServer(t, "")
	h := spec.Handler{HTTPGet: httpGet(t, server, "/")}
	var kept session
	defer kept.close()
	for i := range 10 {
		if r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			t.Fatalf("check %d: %s", i, r.Detail)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("10 checks on a kept connection opened %d connections, want 1", n)
	}
	// Without a session every check has a connection of its own (stop and destroy
	// handlers, resource verify).
	for i := range 5 {
		if r := Check(context.Background(), h, Target{}, time.Second); !r.OK {
			t.Fatalf("Check %d: %s", i, r.Detail)
		}
	}
	if n := conns.Load(); n != 6 {
		t.Errorf("5 one-off checks made %d new connections, want 5", n-1)
	}
}

func TestConnectionCloseHeaderIsHonoured(t *testing.T) {
	server, conns := countingServer(t, "Connection: close")
	h := spec.Handler{HTTPGet: httpGet(t, server, "/")}
	var kept session
	defer kept.close()
	for i := range 5 {
		if r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			t.Fatalf("check %d: %s", i, r.Detail)
		}
	}
	if n := conns.Load(); n != 5 {
		t.Errorf("a server answering Connection: close got %d connections for 5 checks, want 5", n)
	}
}

// rawServer accepts connections and hands each to serve in its own goroutine; it
// returns the port and a count of accepted connections. accepts bounds how many
// connections it accepts (0: no bound); after that its accept loop is stuck, while
// the kernel still completes handshakes into the backlog.
func rawServer(t *testing.T, accepts int, serve func(net.Conn)) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for accepts == 0 || int(n.Load()) < accepts {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			t.Cleanup(func() { conn.Close() })
			go serve(conn)
		}
	}()
	_, port := hostPort(t, l.Addr())
	return port, &n
}

// serveRaw reads requests from conn and answers each with 200 "ok" (keep-alive),
// until once is set: then it answers one request and closes the connection without
// a word, as a server whose idle timeout passed.
func serveRaw(conn net.Conn, once bool) {
	br := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			conn.Close()
			return
		}
		req.Body.Close()
		if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil || once {
			conn.Close()
			return
		}
	}
}

func TestConnectionClosedByServerIsReplaced(t *testing.T) {
	closed := make(chan struct{}, 10) // the server closed a connection
	port, conns := rawServer(t, 0, func(c net.Conn) { serveRaw(c, true); closed <- struct{}{} })
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
	var kept session
	defer kept.close()
	waited := 0
	for i := range 10 {
		r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck)
		if !r.OK {
			t.Fatalf("check %d failed (%s): a kept connection the server closed must be replaced, not fail the check", i, r.Detail)
		}
		if i%2 == 1 {
			// Half the checks find the FIN already there, the others may write first.
			for ; waited <= i; waited++ {
				<-closed
			}
		}
	}
	if n := conns.Load(); n != 10 {
		t.Errorf("%d connections for 10 checks against a server that closes each, want 10", n)
	}
}

func TestStuckAcceptLoopFailsWithinMaxConnAge(t *testing.T) {
	saved := maxConnAge
	t.Cleanup(func() { maxConnAge = saved })
	maxConnAge = 150 * time.Millisecond
	// The server serves its first connection for ever and never accepts another.
	port, _ := rawServer(t, 1, func(c net.Conn) { serveRaw(c, false) })
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
	var kept session
	defer kept.close()
	start := time.Now()
	if r := check(context.Background(), h, Target{}, 100*time.Millisecond, &kept, probeCheck); !r.OK {
		t.Fatalf("first check: %s", r.Detail)
	}
	for {
		r := check(context.Background(), h, Target{}, 100*time.Millisecond, &kept, probeCheck)
		if !r.OK {
			if !strings.HasPrefix(r.Detail, "timed out after") {
				t.Errorf("Detail = %q, want a timeout", r.Detail)
			}
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("a server that stopped accepting connections still passes after 5 s: the kept connection outlived maxConnAge")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if took := time.Since(start); took < maxConnAge {
		t.Errorf("failed after %v, before maxConnAge (%v): the kept connection was not used", took, maxConnAge)
	}
}

func TestLongPeriodDoesNotKeepConnection(t *testing.T) {
	saved := keepIdle
	t.Cleanup(func() { keepIdle = saved }) // after the probes' own cleanups
	// Each keepIdle is far from its period either way: a loaded machine makes a gap
	// between checks tens of milliseconds longer, or a check that much slower.
	for _, tc := range []struct {
		period   int64
		keepIdle time.Duration
		want     int32
		why      string
	}{
		{period: 5, keepIdle: 500 * time.Millisecond, want: 1, why: "period under keepIdle"},
		{period: 150, keepIdle: 20 * time.Millisecond, want: 5, why: "period over keepIdle"},
	} {
		keepIdle = tc.keepIdle
		server, conns, requests := hitServer(t, "")
		events, cancel, done := started(t, Liveness, probeSpec(spec.Handler{HTTPGet: httpGet(t, server, "/")}, fixed(tc.period), 1, 1), Target{Container: unique("keep")}, 1)
		go func() {
			for {
				select {
				case <-events:
				case <-done:
					return
				}
			}
		}()
		requests.wait(t, 5, 5*time.Second)
		cancel()
		<-done
		if n := conns.Load(); n != tc.want {
			t.Errorf("period %d ms: %d connections for 5 checks, want %d (%s)", tc.period, n, tc.want, tc.why)
		}
	}
}

// Some servers and proxies answer an idle connection's timeout with an unasked 408
// before closing it: that is not the next check's answer.
func TestUnaskedAnswerOnIdleConnectionIsNotTheCheck(t *testing.T) {
	spoil := make(chan struct{})   // the test to the server: the check is over, send the 408
	spoiled := make(chan struct{}) // the server to the test: the 408 is in the client's socket
	ended := make(chan struct{})
	port, conns := rawServer(t, 0, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		req.Body.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		select {
		case <-spoil:
		case <-ended:
			return
		}
		io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		waitAcked(t, c)
		spoiled <- struct{}{}
		// The connection stays open until the client closes it: the 408 waits in its
		// socket, and a request sent anyway gets no answer.
		_, _ = io.Copy(io.Discard, br)
	})
	t.Cleanup(func() { close(ended) }) // runs before rawServer's cleanups
	h := spec.Handler{HTTPGet: &spec.HTTPGet{Host: "127.0.0.1", Port: port, Path: "/"}}
	var kept session
	defer kept.close()
	for i := range 3 {
		if r := check(context.Background(), h, Target{}, time.Second, &kept, probeCheck); !r.OK {
			t.Fatalf("check %d failed (%s): an unasked answer on a kept connection was taken for the check's", i, r.Detail)
		}
		if i < 2 {
			spoil <- struct{}{}
			<-spoiled
		}
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections for 3 checks, want 3 (each kept one was spoiled by its 408)", n)
	}
}

// waitAcked waits until the other end of c has acknowledged everything written to it,
// so that it waits in the peer's socket: until c's send queue (SIOCOUTQ) is empty.
func waitAcked(t *testing.T, c net.Conn) {
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Error(err)
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var queued int32 // the kernel writes a C int
		var ioctlErr syscall.Errno
		if err := raw.Control(func(fd uintptr) {
			_, _, ioctlErr = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&queued)))
		}); err != nil || ioctlErr != 0 {
			t.Errorf("SIOCOUTQ: %v %v", err, ioctlErr)
			return
		}
		if queued == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d bytes still unacknowledged after 5s", queued)
			return
		}
		<-time.After(time.Millisecond) // polling with a deadline: the kernel announces no ACK
	}
}
