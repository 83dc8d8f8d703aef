package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/supervisor"
)

// serveRevisions is GET /v1/revisions: the revisions, newest first.
func (a *Server) serveRevisions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"revisions": a.sv.Revisions()})
}

// serveApply is PUT /v1/revisions/ID (?dry_run=1, ?name=FILE for the format): 200
// once the revision is installed (and, with activate: auto, its activation has
// begun), or with the plan of a dry run; 422 with every error of an invalid spec
// and its line; 409 for a known id with other content.
func (a *Server) serveApply(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, spec.MaxFileSize))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": err.Error()})
		return
	}
	dry := r.URL.Query().Get("dry_run")
	plan, err := a.sv.Apply(r.Context(), r.PathValue("id"), r.URL.Query().Get("name"), body, dry == "1" || dry == "true")
	var errs *spec.Errors
	switch {
	case r.Context().Err() != nil:
	case err == nil:
		writeJSON(w, http.StatusOK, plan)
	case errors.As(err, &errs):
		type fieldError struct {
			Line  int    `json:"line"`
			Path  string `json:"path"`
			Error string `json:"error"`
		}
		list := []fieldError{}
		for _, f := range errs.Fields {
			list = append(list, fieldError{Line: f.Line, Path: f.Path, Error: f.Error()})
		}
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": err.Error(), "errors": list})
	default:
		writeJSON(w, revisionCode(err), map[string]string{"error": err.Error()})
	}
}

// doRevision is a revision call (activate, delete, rollback) handed to the loop.
func doRevision(action supervisor.Action) func(*Server, http.ResponseWriter, *http.Request) {
	return func(a *Server, w http.ResponseWriter, r *http.Request) {
		err := a.sv.Do(r.Context(), action, r.PathValue("id"))
		switch {
		case r.Context().Err() != nil:
		case err == nil:
			writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
		default:
			writeJSON(w, revisionCode(err), map[string]string{"error": err.Error()})
		}
	}
}

// revisionCode is the status code of a revision call's error.
func revisionCode(err error) int {
	switch {
	case errors.Is(err, supervisor.ErrNoRevision):
		return http.StatusNotFound
	case errors.Is(err, supervisor.ErrNotInstalled), errors.Is(err, supervisor.ErrNoStable), errors.Is(err, supervisor.ErrActive),
		errors.Is(err, supervisor.ErrConflict), errors.Is(err, supervisor.ErrPreparing), errors.Is(err, supervisor.ErrStopping),
		errors.Is(err, supervisor.ErrSuperseded):
		return http.StatusConflict
	case errors.Is(err, supervisor.ErrInstallFailed):
		return http.StatusBadGateway
	}
	return http.StatusUnprocessableEntity
}
