package api

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tend-sh/tend/route"
	"github.com/tend-sh/tend/supervisor"
)

// handlers serves each route of the table (route.All, docs/reference.md "Status
// API"); who may call a route is the table's access column, checked in one place,
// handler: no route checks it itself.
var handlers = map[route.Route]func(a *Server, w http.ResponseWriter, r *http.Request){
	route.Status:    (*Server).serveStatus,
	route.Ready:     (*Server).serveReady,
	route.Live:      (*Server).serveLive,
	route.Metrics:   (*Server).serveMetrics,
	route.Logs:      (*Server).serveLogs,
	route.Container: (*Server).serveContainer,
	route.Restart:   do(supervisor.Restart),
	route.Stop:      do(supervisor.Stop),
	route.Start:     do(supervisor.Start),
	route.Reload:    do(supervisor.Reload),
	route.Shutdown:  do(supervisor.Shutdown),

	route.Revisions:        (*Server).serveRevisions,
	route.ApplyRevision:    (*Server).serveApply,
	route.ActivateRevision: doRevision(supervisor.Activate),
	route.DeleteRevision:   doRevision(supervisor.DeleteRevision),
	route.Rollback:         doRevision(supervisor.Rollback),
}

// handler serves the routes on one listener; on a trusted one (a unix socket) the
// owner routes need no token.
func (a *Server) handler(trusted bool) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range route.All {
		serve := handlers[rt]
		mux.HandleFunc(rt.Pattern(), func(w http.ResponseWriter, r *http.Request) {
			if rt.Access != route.Open && !trusted {
				if code, msg := a.authorize(r); code != 0 {
					writeJSON(w, code, map[string]string{"error": msg})
					return
				}
			}
			serve(a, w, r)
		})
	}
	return mux
}

// serveStatus is GET /v1/status: the status document, encoded only when it differs
// from the last one served (statusCache).
func (a *Server) serveStatus(w http.ResponseWriter, _ *http.Request) {
	body, err := a.status.encode(a.sv.Status())
	var head, tail []byte
	if err == nil {
		head, tail, err = withTend(body, selfProcess())
	}
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	setWriteDeadline(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(tail)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err == nil {
		_, _ = w.Write(tail)
	}
}

// serveContainer is GET /v1/containers/NAME: the container's status entry with its
// events and probe results; 404 for an unknown name.
func (a *Server) serveContainer(w http.ResponseWriter, r *http.Request) {
	d, err := a.sv.Describe(r.PathValue("name"))
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// serveLive is GET /v1/live: tend answers.
func (a *Server) serveLive(w http.ResponseWriter, _ *http.Request) {
	setWriteDeadline(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "live")
}

// serveReady is GET /v1/ready: 200 "ready", or 503 with the reason it is not.
func (a *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	ready := a.sv.Ready()
	setWriteDeadline(w)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ready.True() {
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "ready")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	msg := string(ready.Reason)
	if ready.Message != "" {
		msg += ": " + ready.Message
	}
	fmt.Fprint(w, msg)
}

// do is the route of a mutating call: it hands the call to the supervisor's loop and
// answers with its outcome; a client that goes away stops waiting, not the call.
func do(action supervisor.Action) func(*Server, http.ResponseWriter, *http.Request) {
	return func(a *Server, w http.ResponseWriter, r *http.Request) {
		err := a.sv.Do(r.Context(), action, r.PathValue("name"))
		switch {
		case r.Context().Err() != nil:
			// The client is gone: there is no one to answer.
		case err == nil:
			writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
		case errors.Is(err, supervisor.ErrNoContainer):
			writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		case errors.Is(err, supervisor.ErrPreparing), errors.Is(err, supervisor.ErrStopping):
			writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		default:
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
		}
	}
}

// authorize checks the bearer token of an owner call over TCP: no token configured
// or no header is 403, a wrong token 401.
func (a *Server) authorize(r *http.Request) (int, string) {
	if a.token == "" {
		return http.StatusForbidden, "mutating calls over TCP need --api-token-file"
	}
	// The scheme is case-insensitive (RFC 9110 §11.1): "bearer" is "Bearer".
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	got = strings.TrimSpace(got)
	if !strings.EqualFold(scheme, "Bearer") || got == "" {
		return http.StatusForbidden, "missing Authorization: Bearer token"
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
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
	// Compact: indenting was half of the CPU of a status read (100 containers: 5 ms
	// and 103 KB indented, 2.4 ms and 67 KB not), which every tend top pays each
	// second; the CLI indents what it prints for people (cli.writeBody).
	_ = json.NewEncoder(w).Encode(v)
}
