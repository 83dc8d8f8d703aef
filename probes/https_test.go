package probes

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

// tlsServer is a loopback HTTPS server (a self-signed certificate for example.com,
// which tend does not verify) answering handler. It counts accepted connections and
// records the server name (SNI) of every handshake.
type tlsServer struct {
	*httptest.Server
	conns atomic.Int32
	mu    sync.Mutex
	sni   []string
}

func newTLSServer(t *testing.T, handler http.HandlerFunc) *tlsServer {
	s := &tlsServer{Server: httptest.NewUnstartedServer(handler)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.TLS = &tls.Config{GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		s.mu.Lock()
		s.sni = append(s.sni, hello.ServerName)
		s.mu.Unlock()
		return nil, nil
	}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *tlsServer) serverNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sni...)
}

// https is an https http_get handler aimed at s.
func (s *tlsServer) https(t *testing.T, path string) *spec.HTTPGet {
	g := httpGet(t, s.Server, path)
	g.Scheme = spec.SchemeHTTPS
	return g
}

func TestHTTPSCheck(t *testing.T) {
	server := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			fmt.Fprint(w, "All ok")
		}
	})
	for _, tc := range []struct {
		name, path, expected string
		want                 string // "" passes
	}{
		{"status", "/", "", ""},
		{"expected answer", "/", "All ok", ""},
		{"wrong answer", "/", "ok", `HTTP 200, body "All ok" does not match expected answer`},
		{"5xx", "/fail", "", "HTTP 503"},
		{"redirect not followed", "/redirect", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := server.https(t, tc.path)
			g.ExpectedAnswer = tc.expected
			h := spec.Handler{HTTPGet: g}
			var kept session
			defer kept.close()
			for _, r := range []Result{check(context.Background(), h, Target{}, 2*time.Second, nil, probeCheck), check(context.Background(), h, Target{}, 2*time.Second, &kept, probeCheck)} {
				if r.Detail != tc.want || r.OK != (tc.want == "") {
					t.Errorf("check = %+v, want detail %q", r, tc.want)
				}
			}
		})
	}
}

// An https probe keeps its TLS connection between checks like a plain one: one
// handshake for many checks.
func TestHTTPSKeptConnectionIsReused(t *testing.T) {
	server := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	h := spec.Handler{HTTPGet: server.https(t, "/")}
	var kept session
	defer kept.close()
	for i := range 10 {
		if r := check(context.Background(), h, Target{}, 2*time.Second, &kept, probeCheck); !r.OK {
			t.Fatalf("check %d: %s", i, r.Detail)
		}
	}
	if n := server.conns.Load(); n != 1 {
		t.Errorf("10 https checks on a kept connection opened %d connections, want 1", n)
	}
	for i := range 3 {
		if r := Check(context.Background(), h, Target{}, 2*time.Second); !r.OK {
			t.Fatalf("Check %d: %s", i, r.Detail)
		}
	}
	if n := server.conns.Load(); n != 4 {
		t.Errorf("3 one-off https checks made %d new connections, want 3", n-1)
	}
}

// A kept TLS connection the server closed while idle (with a close_notify alert) is
// replaced before the request: it never fails a check.
func TestHTTPSConnectionClosedByServerIsReplaced(t *testing.T) {
	server := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	h := spec.Handler{HTTPGet: server.https(t, "/")}
	var kept session
	defer kept.close()
	for i := range 4 {
		if r := check(context.Background(), h, Target{}, 2*time.Second, &kept, probeCheck); !r.OK {
			t.Fatalf("check %d failed (%s): a kept TLS connection the server closed must be replaced", i, r.Detail)
		}
		server.CloseClientConnections() // idle: the next check finds it closed
		if i == 0 {
			time.Sleep(20 * time.Millisecond) // let the alert and FIN arrive, or not (later rounds)
		}
	}
	if n := server.conns.Load(); n != 4 {
		t.Errorf("%d connections for 4 checks against a server that closes each, want 4", n)
	}
}

func TestHTTPHeadersAreSent(t *testing.T) {
	type seen struct{ host, agent, accept, token string }
	got := make(chan seen, 10)
	record := func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Host, r.UserAgent(), r.Header.Get("Accept"), strings.Join(r.Header.Values("X-Token"), ",")}
		fmt.Fprint(w, "ok")
	}
	tlsSrv := newTLSServer(t, record)
	plain := httptest.NewServer(http.HandlerFunc(record))
	t.Cleanup(plain.Close)

	headers := []spec.HTTPHeader{{Name: "X-Token", Value: "a"}, {Name: "x-token", Value: "b"}, {Name: "host", Value: "api.example:8443"}, {Name: "User-Agent", Value: "kube-probe/1.31"}}
	want := seen{host: "api.example:8443", agent: "kube-probe/1.31", accept: "*/*", token: "a,b"}
	for _, tc := range []struct {
		name string
		g    *spec.HTTPGet
	}{{"https", tlsSrv.https(t, "/")}, {"http", httpGet(t, plain, "/")}} {
		tc.g.Headers = headers
		h := spec.Handler{HTTPGet: tc.g}
		var kept session
		for i, r := range []Result{
			check(context.Background(), h, Target{}, 2*time.Second, &kept, probeCheck),
			check(context.Background(), h, Target{}, 2*time.Second, &kept, probeCheck), // the request built once, sent again
			Check(context.Background(), h, Target{}, 2*time.Second),                    // a handler's one-off request
		} {
			if !r.OK {
				t.Fatalf("%s check %d: %s", tc.name, i, r.Detail)
			}
			if s := <-got; s != want {
				t.Errorf("%s check %d: server saw %+v, want %+v", tc.name, i, s, want)
			}
		}
		kept.close()
	}
	// SNI is the Host header's name when there is one, else http_get.host; none for an IP.
	if names := tlsSrv.serverNames(); len(names) == 0 || names[0] != "api.example" {
		t.Errorf("SNI = %q, want api.example", names)
	}
	g := tlsSrv.https(t, "/")
	g.Host = "localhost"
	if r := Check(context.Background(), spec.Handler{HTTPGet: g}, Target{}, 2*time.Second); !r.OK {
		t.Skipf("localhost does not reach 127.0.0.1 here: %s", r.Detail)
	}
	names := tlsSrv.serverNames()
	if last := names[len(names)-1]; last != "localhost" {
		t.Errorf("SNI with host localhost = %q, want localhost", last)
	}
}

func TestHTTPSHandshakeFailure(t *testing.T) {
	// A plain HTTP server answers the ClientHello with an HTTP error, not TLS.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	t.Cleanup(plain.Close)
	g := httpGet(t, plain, "/")
	g.Scheme = spec.SchemeHTTPS
	r := Check(context.Background(), spec.Handler{HTTPGet: g}, Target{}, 2*time.Second)
	want := "TLS handshake with " + plain.Listener.Addr().String() + " failed: first record does not look like a TLS handshake"
	if r.OK || r.Detail != want {
		t.Errorf("https to a plain server = %+v, want detail %q", r, want)
	}

	// A server that accepts and never answers the handshake: the check's timeout.
	port, _ := rawServer(t, 0, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
	g = &spec.HTTPGet{Scheme: spec.SchemeHTTPS, Host: "127.0.0.1", Port: port, Path: "/"}
	var kept session
	defer kept.close()
	start := time.Now()
	r = check(context.Background(), spec.Handler{HTTPGet: g}, Target{}, 200*time.Millisecond, &kept, probeCheck)
	if r.OK || r.Detail != "timed out after 200ms" || time.Since(start) > 5*time.Second {
		t.Errorf("https to a silent server = %+v after %v, want a timeout after 200ms", r, time.Since(start))
	}

	// Cancelled while in the handshake.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if r := Check(ctx, spec.Handler{HTTPGet: g}, Target{}, 0); r.OK || r.Detail != "cancelled" {
		t.Errorf("cancelled https check = %+v, want cancelled", r)
	}
}

// A new TLS connection resumes the session of the last one to the same address,
// also when servers on other ports share its server name (every container's
// "localhost"): probes reconnect every maxConnAge, handlers for every try.
func TestHTTPSSessionsResumePerAddress(t *testing.T) {
	var resumed, full atomic.Int32
	record := func(w http.ResponseWriter, r *http.Request) {
		if r.TLS.DidResume {
			resumed.Add(1)
		} else {
			full.Add(1)
		}
		fmt.Fprint(w, "ok")
	}
	a, b := newTLSServer(t, record), newTLSServer(t, record)
	var handlers []spec.Handler
	for _, s := range []*tlsServer{a, b} {
		g := s.https(t, "/")
		g.Headers = []spec.HTTPHeader{{Name: "Host", Value: "app.test"}} // one server name for both
		handlers = append(handlers, spec.Handler{HTTPGet: g})
	}
	for i := range 6 {
		if r := Check(context.Background(), handlers[i%2], Target{}, 2*time.Second); !r.OK {
			t.Fatalf("check %d: %s", i, r.Detail)
		}
	}
	if full.Load() != 2 || resumed.Load() != 4 {
		t.Errorf("%d full handshakes and %d resumed for 6 alternating checks of two servers, want 2 and 4", full.Load(), resumed.Load())
	}
}
