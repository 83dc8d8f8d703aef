package supervisor

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
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
			c.Start()
		}
		req.reply(nil)
		return
	}
	req.reply(fmt.Errorf("%w %q", errNoContainer, req.name))
}

// apiServer is the API being brought up in the background.
type apiServer struct {
	failed chan error    // the listen error, if the listeners could not be opened
	ready  chan struct{} // closed once listening succeeded or failed
	stop   func()        // set before ready is closed, on success
}

// startAPI opens the listeners and serves them in the background.
func (sv *Supervisor) startAPI() *apiServer {
	a := &apiServer{failed: make(chan error, 1), ready: make(chan struct{})}
	addrs := sv.opts.Listen
	if len(addrs) == 0 {
		addrs = []string{"unix:" + filepath.Join(sv.spec.Instance.Dir, "tend.sock")}
	}
	go func() {
		defer close(a.ready)
		stop, err := sv.serveAPI(addrs)
		if err != nil {
			a.failed <- err
			return
		}
		a.stop = stop
	}()
	return a
}

// close stops the servers and removes the sockets, once they are up.
func (a *apiServer) close() {
	<-a.ready
	if a.stop != nil {
		a.stop()
	}
}

// serveAPI starts an HTTP server on every --listen address. The returned function
// stops them and removes the unix sockets.
func (sv *Supervisor) serveAPI(addrs []string) (func(), error) {
	var servers []*http.Server
	var sockets []string
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(ctx)
		}
		for _, path := range sockets {
			_ = os.Remove(path)
		}
	}
	for _, addr := range addrs {
		ln, socket, err := listen(addr)
		if err != nil {
			stop()
			return nil, err
		}
		if socket != "" {
			sockets = append(sockets, socket)
		}
		// Idle keep-alive connections of long-lived clients are closed after a while,
		// so polling orchestrators cannot pile up sockets in tend.
		srv := &http.Server{Handler: sv.handler(socket != ""), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
		sv.log.Info().Str("listen", addr).Msg("serving the API")
	}
	return stop, nil
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
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
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
	mux.HandleFunc("GET /v1/ready", func(w http.ResponseWriter, _ *http.Request) {
		doc := sv.Status()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if doc.Ready.True() {
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "ready")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		msg := doc.Ready.Reason
		if doc.Ready.Message != "" {
			msg += ": " + doc.Ready.Message
		}
		fmt.Fprint(w, msg)
	})
	mux.HandleFunc("GET /v1/live", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "live")
	})
	mux.HandleFunc("GET /metrics", sv.serveMetrics)
	mutate := func(kind requestKind) http.HandlerFunc {
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
	mux.HandleFunc("POST /v1/containers/{name}/restart", mutate(reqRestart))
	mux.HandleFunc("POST /v1/containers/{name}/stop", mutate(reqStop))
	mux.HandleFunc("POST /v1/containers/{name}/start", mutate(reqStart))
	mux.HandleFunc("POST /v1/reload", mutate(reqReload))
	mux.HandleFunc("POST /v1/shutdown", mutate(reqShutdown))
	return mux
}

// authorize checks the bearer token of a mutating call over TCP: no token configured
// or no header is 403, a wrong token 401.
func (sv *Supervisor) authorize(r *http.Request) (int, string) {
	if sv.token == "" {
		return http.StatusForbidden, "mutating calls over TCP need --api-token-file"
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return http.StatusForbidden, "missing Authorization: Bearer token"
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(sv.token)) != 1 {
		return http.StatusUnauthorized, "wrong token"
	}
	return 0, ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
