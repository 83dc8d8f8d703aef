package supervisor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/tend-sh/tend/resources"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// ErrInvalidRevision is a revision id that cannot name one.
var ErrInvalidRevision = errors.New("invalid revision id")

// Apply is PUT /v1/revisions/ID: body is a spec in any format run reads (name tells
// the format when the content does not). It is loaded here, off the main loop; an
// invalid spec is *spec.Errors (every error with its line) and changes nothing. A
// dry run answers what activating it would do and changes nothing either.
func (sv *Supervisor) Apply(ctx context.Context, id, name string, body []byte, dryRun bool) (status.ApplyPlan, error) {
	if !spec.ValidRevision(id) {
		return status.ApplyPlan{}, fmt.Errorf("%w %q: want 1-%d characters of A-Z a-z 0-9 . _ -", ErrInvalidRevision, id, spec.MaxRevisionLen)
	}
	if sv.opts.LoadBytes == nil {
		return status.ApplyPlan{}, errors.New("this tend cannot load a pushed spec")
	}
	if name == "" || strings.ContainsAny(name, "/\x00") {
		name = "spec.yaml"
	}
	sv.mu.Lock()
	dir := sv.spec.Instance.Dir
	sv.mu.Unlock()
	// Its directory is the running instance's: a spec without instance.dir takes it.
	next, err := sv.opts.LoadBytes(filepath.Join(dir, name), body)
	if err != nil {
		return status.ApplyPlan{}, err
	}
	switch next.Instance.Revision {
	case "":
		next.Instance.Revision = id
	case id:
	default:
		return status.ApplyPlan{}, fmt.Errorf("%w: instance.revision is %q, the route names %q", ErrConflict, next.Instance.Revision, id)
	}
	if dryRun {
		return sv.plan(next), nil
	}
	errc := make(chan error, 1)
	req := request{kind: reqApply, name: id, spec: next, data: body, dataName: name, reply: func(err error) { errc <- err }}
	select {
	case sv.requests <- req:
	case <-ctx.Done():
		return status.ApplyPlan{}, ctx.Err()
	}
	select {
	case err := <-errc:
		return status.ApplyPlan{Revision: id}, err
	case <-ctx.Done():
		return status.ApplyPlan{}, ctx.Err()
	}
}

// plan says what activating next would do to the running instance, as a reload
// does it (reload.go, reprepare.go).
func (sv *Supervisor) plan(next *spec.Spec) status.ApplyPlan {
	sv.mu.Lock()
	prev := sv.spec
	running := map[string]*spec.Container{}
	for _, c := range sv.containers {
		running[c.Name()] = c.Spec()
	}
	sv.mu.Unlock()
	p := status.ApplyPlan{Revision: next.Revision(), Start: []string{}, Restart: []status.RestartReason{}, Stop: []string{}, Keep: []string{}}
	p.Reprepare = needsPrepare(prev, next)
	for i := range next.Containers {
		cs := &next.Containers[i]
		old := running[cs.Name]
		delete(running, cs.Name)
		switch {
		case old == nil:
			p.Start = append(p.Start, cs.Name)
		case p.Reprepare != "":
			p.Restart = append(p.Restart, status.RestartReason{Name: cs.Name, Field: "the instance is re-prepared (" + p.Reprepare + ")"})
		case sameContainer(prev, old, next, cs):
			p.Keep = append(p.Keep, cs.Name)
		default:
			p.Restart = append(p.Restart, status.RestartReason{Name: cs.Name, Field: changedField(prev, old, next, cs)})
		}
	}
	for name := range running {
		p.Stop = append(p.Stop, name)
	}
	slices.Sort(p.Stop)
	p.Fetch = sv.toFetch(prev, next)
	return p
}

// toFetch names the resources of next that activating it downloads: new or changed
// since prev, and not held by a kept revision.
func (sv *Supervisor) toFetch(prev, next *spec.Spec) []string {
	fetch := []string{}
	have := map[string]spec.Resource{}
	for _, r := range prev.Resources {
		have[r.Name] = r
	}
	for _, r := range next.Resources {
		o, ok := have[r.Name]
		if !ok || o.Checksum != r.Checksum || !slices.Equal(o.URLs, r.URLs) || o.Extract != r.Extract {
			if !sv.storedResource(r) {
				fetch = append(fetch, r.Name)
			}
		}
	}
	return fetch
}

// storedResource reports whether a kept revision holds a file for r (by checksum;
// an archive for an extracted one): installing it links that file instead of
// fetching.
func (sv *Supervisor) storedResource(r spec.Resource) bool {
	if sv.rev.store == nil {
		return false
	}
	sum, err := resources.ParseChecksum(r.Checksum)
	return err == nil && !sum.Empty() && len(sv.rev.store.Stored(sum.String())) > 0
}

// changedField names the first field of a container's spec (by its YAML name) that
// differs between prev and next, or what it inherits that changed.
func changedField(prevSpec *spec.Spec, prev *spec.Container, nextSpec *spec.Spec, next *spec.Container) string {
	a, b := reflect.ValueOf(*prev), reflect.ValueOf(*next)
	t := a.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "target_state" || tag == "depends_on" {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			return tag
		}
	}
	if !slices.Equal(prevSpec.ContainerEnv(prev), nextSpec.ContainerEnv(next)) {
		return "env (the instance's environment)"
	}
	if prevSpec.WorkDir(prev.WorkingDir) != nextSpec.WorkDir(next.WorkingDir) {
		return "working_dir (instance.dir)"
	}
	return "spec"
}
