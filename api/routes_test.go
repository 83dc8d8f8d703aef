package api

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/status"
	"github.com/tend-sh/tend/supervisor"
)

// fakeSupervisor is a ready instance with no containers that counts the calls it
// is handed.
type fakeSupervisor struct {
	mu    sync.Mutex
	calls int
}

func (f *fakeSupervisor) Status() status.Document {
	return status.Document{Instance: "test", Ready: status.NewCondition(true, "ContainersReady", "", time.Now())}
}

func (f *fakeSupervisor) Ready() status.Condition { return f.Status().Ready }

func (f *fakeSupervisor) Do(context.Context, supervisor.Action, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return nil
}

func (f *fakeSupervisor) Describe(name string) (status.ContainerDetail, error) {
	return status.ContainerDetail{Container: status.Container{Name: name}}, nil
}

func (f *fakeSupervisor) LogRings([]string) ([]*output.Ring, error) { return nil, nil }

func (f *fakeSupervisor) WatchLogs(chan<- struct{}) func() { return func() {} }

func (f *fakeSupervisor) WriteMetrics(io.Writer) {}

func (f *fakeSupervisor) Revisions() []status.Revision { return nil }

func (f *fakeSupervisor) Apply(context.Context, string, string, []byte, bool) (status.ApplyPlan, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return status.ApplyPlan{}, nil
}

func (f *fakeSupervisor) called() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// openRoutes are the routes anyone may call (docs/reference.md "Status API"): a route added
// to the table is an owner one unless it is added here too.
var openRoutes = map[string]bool{"GET /v1/status": true, "GET /v1/ready": true, "GET /v1/live": true, "GET /metrics": true,
	"GET /v1/containers/{name}": true, "GET /v1/revisions": true}

// Every route of the table, walked over real listeners: an owner route answers a
// TCP client 403 without a token (none configured, or no header) and 401 with a
// wrong one, without reaching the supervisor, and 200 with the token; over the unix
// socket it needs none. An open route answers everyone. A route that changes
// something (any method but GET) must be an owner route.
func TestRouteAccess(t *testing.T) {
	withToken := serveForTest(t, "s3cret")
	noToken := serveForTest(t, "")
	for _, rt := range route.All {
		method, path := rt.Method, rt.URL("web")
		if method != http.MethodGet && rt.Access != route.Owner {
			t.Errorf("%s changes something but is not an owner route", rt.Pattern())
		}
		if open := rt.Access == route.Open; open != openRoutes[rt.Pattern()] {
			t.Errorf("%s: open access %v, want %v (openRoutes)", rt.Pattern(), open, openRoutes[rt.Pattern()])
		}
		if handlers[rt] == nil {
			t.Errorf("%s has no handler", rt.Pattern())
		}
		type call struct {
			srv        *testServer
			unix       bool
			token      string
			want       int
			reachesSup bool
		}
		calls := []call{
			{withToken, false, "s3cret", 200, true},
			{withToken, true, "", 200, true},
			{noToken, true, "", 200, true},
		}
		if rt.Access == route.Owner {
			calls = append(calls, call{withToken, false, "", 403, false}, call{withToken, false, "wrong", 401, false},
				call{noToken, false, "", 403, false}, call{noToken, false, "s3cret", 403, false})
		} else {
			calls = append(calls, call{withToken, false, "", 200, true}, call{noToken, false, "", 200, true})
		}
		for _, c := range calls {
			before := c.srv.sv.called()
			if got := c.srv.call(t, c.unix, method, path, c.token); got != c.want {
				t.Errorf("%s over %s with token %q: %d, want %d", rt.Pattern(), c.srv.via(c.unix), c.token, got, c.want)
			}
			if reached := c.srv.sv.called() > before; strings.HasPrefix(method, "POST") && reached != c.reachesSup {
				t.Errorf("%s over %s with token %q: reached the supervisor %v, want %v", rt.Pattern(), c.srv.via(c.unix), c.token, reached, c.reachesSup)
			}
		}
	}
	if len(handlers) != len(route.All) {
		t.Errorf("%d handlers for the %d routes of route.All", len(handlers), len(route.All))
	}
}

// testServer is an API served by Serve on a TCP port and a unix socket.
type testServer struct {
	sv         *fakeSupervisor
	tcp, sock  string
	unixClient *http.Client
}

func serveForTest(t *testing.T, token string) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcp := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	ts := &testServer{sv: &fakeSupervisor{}, tcp: tcp, sock: filepath.Join(t.TempDir(), "tend.sock")}
	a, err := Serve(ts.sv, Config{Listen: []string{tcp, "unix:" + ts.sock}, Token: token, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ts.unixClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", ts.sock)
		}}}
	t.Cleanup(ts.unixClient.CloseIdleConnections)
	return ts
}

func (ts *testServer) via(unix bool) string {
	if unix {
		return "the unix socket"
	}
	return "TCP"
}

// call answers the status code of method path, with "Authorization: Bearer token"
// unless token is "".
func (ts *testServer) call(t *testing.T, unix bool, method, path, token string) int {
	t.Helper()
	client, host := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}, ts.tcp
	if unix {
		client, host = ts.unixClient, "tend"
	}
	req, err := http.NewRequest(method, "http://"+host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", method, path, ts.via(unix), err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
