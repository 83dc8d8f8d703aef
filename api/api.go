// Package api serves a supervisor over HTTP: the routes of the table in package
// route, each with its handler (routes.go), the status document, health, logs,
// metrics and the status reports POSTed to --report-url. It knows the supervisor only through Supervisor.
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	mathrand "math/rand"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/status"
	"github.com/tend-sh/tend/supervisor"
)

// Supervisor is what the API serves (*supervisor.Supervisor implements it).
type Supervisor interface {
	// Status is the status document now.
	Status() status.Document
	// Ready is the instance's ready condition now: Status's Ready, without the
	// containers' usage (which Status has sampled while it is asked for).
	Ready() status.Condition
	// Do hands a mutating call to the supervisor's loop and waits for its outcome
	// (supervisor.ErrNoContainer, ErrPreparing, ErrStopping or another error); ctx
	// ends the wait, not the call.
	Do(ctx context.Context, a supervisor.Action, name string) error
	// Describe is one container with its events and probe results; ErrNoContainer
	// for an unknown name.
	Describe(name string) (status.ContainerDetail, error)
	// LogRings is the rings of the containers and init containers names (all when
	// empty); an unknown name is an error.
	LogRings(names []string) ([]*output.Ring, error)
	// WatchLogs wakes wake (without blocking) whenever a ring is added, until stop.
	WatchLogs(wake chan<- struct{}) (stop func())
	// WriteMetrics writes the metric families of the rooms below the supervisor
	// (probes, proc) that /metrics serves after the containers'.
	WriteMetrics(w io.Writer)
	// Revisions is the instance's revisions, newest first.
	Revisions() []status.Revision
	// Apply installs (and with activate: auto activates) the spec body as revision
	// id, or with dryRun says what activating it would do; an invalid spec is
	// *spec.Errors.
	Apply(ctx context.Context, id, name string, body []byte, dryRun bool) (status.ApplyPlan, error)
}

// Config is how the API is served.
type Config struct {
	// Listen holds the addresses: "unix:PATH" or "HOST:PORT".
	Listen []string
	// Token is the bearer token of owner calls over TCP ("": none over TCP).
	Token string
	Log   zerolog.Logger
}

// Server is the API: its listeners are opened before anything runs, then served
// in the background.
type Server struct {
	sv      Supervisor
	token   string
	log     zerolog.Logger
	failed  chan error // a listener that stopped accepting for good
	sockets []string   // unix socket paths, removed on close
	ready   chan struct{}
	servers []*http.Server // set before ready is closed
	// closed is closed before the servers shut down: followers of the logs end, so
	// Shutdown need not wait for them.
	closed    chan struct{}
	closeOnce sync.Once
	status    statusCache // the last status document served, encoded
}

// Serve opens every address of cfg.Listen and serves sv on them in the background.
// It runs before preparing, so a second tend for the same sockets fails before
// anything runs.
func Serve(sv Supervisor, cfg Config) (*Server, error) {
	fds := fdLimit()
	budget := newConnBudget(fds)
	a := &Server{sv: sv, token: cfg.Token, log: cfg.Log, failed: make(chan error, len(cfg.Listen)),
		closed: make(chan struct{})}
	var listeners []*limitListener
	for _, addr := range cfg.Listen {
		ln, socket, err := listen(addr)
		if err != nil {
			for _, ln := range listeners {
				ln.Close()
			}
			a.removeSockets()
			return nil, err
		}
		listeners = append(listeners, budget.limit(ln, addr, socket != "", a.log))
		if socket != "" {
			a.sockets = append(a.sockets, socket)
		}
	}
	// The servers (their routes) are built beside preparing: the first container's
	// exec does not wait for them; connections wait in the listen backlog meanwhile.
	a.ready = make(chan struct{})
	go func() {
		defer close(a.ready)
		// net/http's Shutdown draws a jittered poll interval from math/rand, whose
		// global source is set up at its first use (a GODEBUG lookup, 40 µs of a stop
		// of one container on a 2-CPU VM): set up here, beside preparing.
		_ = mathrand.Int()
		for i, ln := range listeners {
			addr := cfg.Listen[i]
			srv := a.newServer(addr, isUnix(addr))
			a.servers = append(a.servers, srv)
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					a.failed <- fmt.Errorf("serve the API on %s: %w", addr, err)
				}
			}()
			a.log.Info().Str("listen", addr).Int("max_connections", cap(ln.pools[0].tokens)).
				Uint64("fd_limit", fds).Msg("serving the API")
		}
	}()
	return a, nil
}

// Failed receives the error of a listener that stopped accepting for good.
func (a *Server) Failed() <-chan error { return a.failed }

// Close stops the servers and removes the unix sockets. Calls in progress finish
// (for at most a second); followers of the logs end first. The sockets' files go
// while the servers shut down: an unlink is 0.1 ms of a journaled file system's time,
// on the way out of every stop, and a client that comes meanwhile is refused either
// way.
func (a *Server) Close() {
	<-a.ready
	a.closeOnce.Do(func() { close(a.closed) })
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		a.removeSockets()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, s := range a.servers {
		_ = s.Shutdown(ctx)
	}
	<-removed
}

func (a *Server) removeSockets() {
	for _, path := range a.sockets {
		_ = os.Remove(path)
	}
}

func isUnix(addr string) bool { return strings.HasPrefix(addr, "unix:") }

// Read timeouts: a TCP client (unauthenticated until its headers arrive) holds one of
// the few API connections while it sends them, so it gets less time than a client of
// the unix socket (mode 0600: only tend's own user). The read timeout bounds headers
// and body together (no call of tend's takes a body; an announced one that never
// comes would otherwise hold the connection for good). A connection that waits for
// its client may also be closed sooner, to make room (connlimit.go).
const (
	tcpHeaderTimeout  = 5 * time.Second
	unixHeaderTimeout = 10 * time.Second
	tcpReadTimeout    = 10 * time.Second
	unixReadTimeout   = 20 * time.Second
	idleTimeout       = time.Minute
	// writeTimeout bounds the writing of every answer: a client that does not read
	// it is dropped rather than holding a handler (and what it holds) for good.
	writeTimeout = 10 * time.Second
)

// newServer is the HTTP server of one listener. Its own errors (accept failures, a
// panicking handler) go to tend's log: the standard logger is silenced (quietlog).
func (a *Server) newServer(addr string, trusted bool) *http.Server {
	headerTimeout, readTimeout := tcpHeaderTimeout, tcpReadTimeout
	if trusted {
		headerTimeout, readTimeout = unixHeaderTimeout, unixReadTimeout
	}
	// Idle keep-alive connections of long-lived clients are closed after a while,
	// so polling orchestrators cannot pile up sockets in tend.
	srv := &http.Server{
		Handler:           serving(a.handler(trusted), readTimeout),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ConnContext:       connContext,
		ConnState:         trackIdle,
		ErrorLog:          stdlog.New(serverLog{a.log.With().Str("listen", addr).Logger()}, "", 0),
		// HTTP/1.1 only: the API has no TLS listener, so HTTP/2 never serves it, and
		// net/http would set it up anyway (for a TLS listener passed to Serve) and
		// start a goroutine for it in Shutdown, in every stop.
		Protocols: http1Only,
	}
	return srv
}

var http1Only = func() *http.Protocols {
	var p http.Protocols
	p.SetHTTP1(true)
	return &p
}()

// serverLog writes net/http's error log lines as warnings of tend's log.
type serverLog struct{ log zerolog.Logger }

func (s serverLog) Write(p []byte) (int, error) {
	s.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// listen opens "unix:PATH" (mode 0600; a stale socket is replaced, a live one is an
// error) or "HOST:PORT".
func listen(addr string) (net.Listener, string, error) {
	path, isUnix := strings.CutPrefix(addr, "unix:")
	if !isUnix {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
		}
		return ln, "", nil
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return nil, "", fmt.Errorf("listen on %s: another process is serving this socket", addr)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	// The socket is made 0600 before bind (Linux gives the socket file the mode of
	// the socket), not by changing the umask: that is the whole process's, and the
	// API comes up while containers start.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.Fchmod(int(fd), 0o600) }); cerr != nil {
			return cerr
		}
		return err
	}}
	ln, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	// Checked, never changed, by name: a chmod by name would follow a symlink that a
	// user who can write the directory swapped in, and set a root file's mode.
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		ln.Close()
		return nil, "", fmt.Errorf("listen on %s: the socket file was replaced or has the wrong mode", addr)
	}
	return ln, path, nil
}
