package supervisor

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

type requestKind int

const (
	reqShutdown requestKind = iota
	reqReload
	reqRestart
	reqStop
	reqStart
)

// request is a mutating API call handed to the main loop.
type request struct {
	kind  requestKind
	name  string // container, for restart/stop/start
	reply func(error)
}

var (
	errPreparing   = errors.New("the instance is still preparing")
	errStopping    = errors.New("the instance is stopping")
	errNoContainer = errors.New("no such container")
)

// handle runs a container request or a reload in the main loop.
func (sv *Supervisor) handle(req request) {
	if req.kind == reqReload {
		sv.reload(req)
		return
	}
	if sv.reloading {
		// The containers are being swapped: a request for one that the reload is
		// replacing would reach the old container, which is finishing, and be lost.
		// It is handled once the reload is done (finishReload), on the new set.
		sv.log.Info().Str("container", req.name).Msg("request queued behind the reload in progress")
		sv.pending = append(sv.pending, req)
		return
	}
	for _, c := range sv.current() {
		if c.Name() != req.name {
			continue
		}
		switch req.kind {
		case reqRestart:
			c.Restart()
		case reqStop:
			c.Stop()
		case reqStart:
			sv.start(c, true)
		}
		req.reply(nil)
		return
	}
	req.reply(fmt.Errorf("%w %q", errNoContainer, req.name))
}

// apiServer is the API: its listeners are opened before anything runs, then served
// in the background.
type apiServer struct {
	failed  chan error // a listener that stopped accepting for good
	sockets []string   // unix socket paths, removed on close
	ready   chan struct{}
	servers []*http.Server // set before ready is closed
}

// startAPI opens every --listen address and serves them in the background. It runs
// before preparing, so a second tend for the same sockets fails before anything runs.
func (sv *Supervisor) startAPI() (*apiServer, error) {
	addrs := sv.opts.Listen
	if len(addrs) == 0 {
		addrs = []string{"unix:" + filepath.Join(sv.spec.Instance.Dir, "tend.sock")}
	}
	fds := fdLimit()
	budget := newConnBudget(fds)
	a := &apiServer{failed: make(chan error, len(addrs))}
	var listeners []*limitListener
	for _, addr := range addrs {
		ln, socket, err := listen(addr)
		if err != nil {
			for _, ln := range listeners {
				ln.Close()
			}
			a.removeSockets()
			return nil, err
		}
		listeners = append(listeners, budget.limit(ln, addr, socket != "", sv.log))
		if socket != "" {
			a.sockets = append(a.sockets, socket)
		}
	}
	// The servers (their routes) are built beside preparing: the first container's
	// exec does not wait for them; connections wait in the listen backlog meanwhile.
	a.ready = make(chan struct{})
	go func() {
		defer close(a.ready)
		for i, ln := range listeners {
			srv := sv.newServer(addrs[i], isUnix(addrs[i]))
			a.servers = append(a.servers, srv)
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					a.failed <- fmt.Errorf("serve the API on %s: %w", addrs[i], err)
				}
			}()
			sv.log.Info().Str("listen", addrs[i]).Int("max_connections", cap(ln.pools[0].tokens)).
				Uint64("fd_limit", fds).Msg("serving the API")
		}
	}()
	return a, nil
}

// close stops the servers and removes the unix sockets.
func (a *apiServer) close() {
	<-a.ready
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, s := range a.servers {
		_ = s.Shutdown(ctx)
	}
	a.removeSockets()
}

func (a *apiServer) removeSockets() {
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
func (sv *Supervisor) newServer(addr string, trusted bool) *http.Server {
	headerTimeout, readTimeout := tcpHeaderTimeout, tcpReadTimeout
	if trusted {
		headerTimeout, readTimeout = unixHeaderTimeout, unixReadTimeout
	}
	// Idle keep-alive connections of long-lived clients are closed after a while,
	// so polling orchestrators cannot pile up sockets in tend.
	srv := &http.Server{
		Handler:           serving(sv.handler(trusted), readTimeout),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		ConnContext:       connContext,
		ConnState:         trackIdle,
		ErrorLog:          stdlog.New(serverLog{sv.log.With().Str("listen", addr).Logger()}, "", 0),
	}
	srv.RegisterOnShutdown(sv.logs.close) // followers end, so Shutdown need not wait for them
	return srv
}

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

// handler serves the API on one listener; trusted listeners (the unix socket) may
// call mutating endpoints without a token.
func (sv *Supervisor) handler(trusted bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, sv.Status())
	})
	mux.HandleFunc("GET /v1/ready", sv.serveReady)
	mux.HandleFunc("GET /v1/live", func(w http.ResponseWriter, _ *http.Request) {
		setWriteDeadline(w)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "live")
	})
	mux.HandleFunc("GET /metrics", sv.serveMetrics)
	mutate := func(kind requestKind) http.HandlerFunc { return sv.serveRequest(kind, trusted) }
	mux.HandleFunc("POST /v1/containers/{name}/restart", mutate(reqRestart))
	mux.HandleFunc("POST /v1/containers/{name}/stop", mutate(reqStop))
	mux.HandleFunc("POST /v1/containers/{name}/start", mutate(reqStart))
	mux.HandleFunc("POST /v1/reload", mutate(reqReload))
	mux.HandleFunc("POST /v1/shutdown", mutate(reqShutdown))
	mux.HandleFunc("GET /v1/logs", sv.serveLogs(trusted))
	return mux
}

// serveReady is GET /v1/ready: 200 "ready", or 503 with the reason it is not.
func (sv *Supervisor) serveReady(w http.ResponseWriter, _ *http.Request) {
	doc := sv.Status()
	setWriteDeadline(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if doc.Ready.True() {
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "ready")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	msg := string(doc.Ready.Reason)
	if doc.Ready.Message != "" {
		msg += ": " + doc.Ready.Message
	}
	fmt.Fprint(w, msg)
}

// serveRequest hands a mutating call of kind to the supervisor's loop and answers
// with its outcome; a client that goes away stops waiting, not the request.
func (sv *Supervisor) serveRequest(kind requestKind, trusted bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !trusted {
			if code, msg := sv.authorize(r); code != 0 {
				writeJSON(w, code, map[string]string{"error": msg})
				return
			}
		}
		errc := make(chan error, 1)
		req := request{kind: kind, name: r.PathValue("name"), reply: func(err error) { errc <- err }}
		select {
		case sv.requests <- req:
		case <-r.Context().Done():
			return
		}
		var err error
		select {
		case err = <-errc:
		case <-r.Context().Done():
			return
		}
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
		case errors.Is(err, errNoContainer):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, errPreparing), errors.Is(err, errStopping):
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		default:
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
		}
	}
}

// authorize checks the bearer token of a mutating call over TCP: no token configured
// or no header is 403, a wrong token 401.
func (sv *Supervisor) authorize(r *http.Request) (int, string) {
	if sv.token == "" {
		return http.StatusForbidden, "mutating calls over TCP need --api-token-file"
	}
	// The scheme is case-insensitive (RFC 9110 §11.1): "bearer" is "Bearer".
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	got = strings.TrimSpace(got)
	if !strings.EqualFold(scheme, "Bearer") || got == "" {
		return http.StatusForbidden, "missing Authorization: Bearer token"
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(sv.token)) != 1 {
		return http.StatusUnauthorized, "wrong token"
	}
	return 0, ""
}

// setWriteDeadline gives the answer being written writeTimeout. It is set when the
// answer is ready, not when the request came: a reload may take longer than that.
func setWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTimeout))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	setWriteDeadline(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
