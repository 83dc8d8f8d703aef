// Package route is the table of the API's routes: the method and path of each and
// who may call it (docs/reference.md "Status API"). The server (api) serves exactly
// these and the client (cli) calls them from here, so neither types a path of its
// own. It imports nothing of tend's: every room may read it.
package route

import (
	"net/http"
	"net/url"
	"strings"
)

// Access is who may call a route: the access column of the table. The zero value
// is the guarded one, so a route written without it is not open by mistake.
type Access int

const (
	// Owner: a client of a unix socket (mode 0600: tend's own user), or a TCP client
	// with the bearer token. Every call that changes something, and the logs, which
	// may hold secrets.
	Owner Access = iota
	// Open: any client of any listener.
	Open
)

// Route is one endpoint of the API.
type Route struct {
	Method string
	Path   string // http.ServeMux's: {name} stands for a container's name
	Access Access
}

// The routes of the API.
var (
	Status  = Route{http.MethodGet, "/v1/status", Open}
	Ready   = Route{http.MethodGet, "/v1/ready", Open}
	Live    = Route{http.MethodGet, "/v1/live", Open}
	Metrics = Route{http.MethodGet, "/metrics", Open}
	Logs    = Route{http.MethodGet, "/v1/logs", Owner}
	// A read like Status, open like it (docs/reference.md "Status API"): its events
	// quote no more of what the container said (the start of an HTTP body, an exec's
	// last output line) than the status document's reasons do.
	Container = Route{http.MethodGet, "/v1/containers/{name}", Open}
	Restart   = Route{http.MethodPost, "/v1/containers/{name}/restart", Owner}
	Stop      = Route{http.MethodPost, "/v1/containers/{name}/stop", Owner}
	Start     = Route{http.MethodPost, "/v1/containers/{name}/start", Owner}
	Reload    = Route{http.MethodPost, "/v1/reload", Owner}
	Shutdown  = Route{http.MethodPost, "/v1/shutdown", Owner}
	// The revisions (docs/reference.md "Updates and rollback"); {id} is a revision's id.
	Revisions        = Route{http.MethodGet, "/v1/revisions", Open}
	ApplyRevision    = Route{http.MethodPut, "/v1/revisions/{id}", Owner}
	ActivateRevision = Route{http.MethodPost, "/v1/revisions/{id}/activate", Owner}
	DeleteRevision   = Route{http.MethodDelete, "/v1/revisions/{id}", Owner}
	Rollback         = Route{http.MethodPost, "/v1/rollback", Owner}
)

// All is every route of the API, the table the server serves.
var All = []Route{Status, Ready, Live, Metrics, Logs, Container, Restart, Stop, Start, Reload, Shutdown,
	Revisions, ApplyRevision, ActivateRevision, DeleteRevision, Rollback}

// Socket is the unix socket of the API when no --listen is given: tend run serves
// it in instance.dir, and the commands that talk to tend look for it in the
// current directory.
const Socket = "tend.sock"

// Pattern is the route as http.ServeMux takes it: "GET /v1/status".
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// PerContainer tells whether the route names a container ({name} in its path).
func (r Route) PerContainer() bool { return strings.Contains(r.Path, "{name}") }

// URL is the route's path for the container name (escaped); name is not used by a
// route that names no container.
func (r Route) URL(name string) string {
	p := strings.Replace(r.Path, "{name}", url.PathEscape(name), 1)
	return strings.Replace(p, "{id}", url.PathEscape(name), 1)
}
