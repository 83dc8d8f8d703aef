package supervisor

import (
	"fmt"
	"slices"
	"sync"

	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/spec"
)

// logHub holds every container's and init container's LogRing by name (docs/reference.md "Logs"). A ring outlives
// the Container objects of its name (restarts, a reload that changes the
// container), so history and followers carry on; a reload that removes the name
// drops it. The API serves it (api/logs.go).
type logHub struct {
	mu     sync.Mutex
	rings  map[string]*output.Ring
	wakers output.Wakers // woken when a ring is added
}

func newLogHub() *logHub {
	return &logHub{rings: map[string]*output.Ring{}}
}

// ring is the ring of the container or init container name, created or resized to
// keep lines.
func (h *logHub) ring(name string, keep int) *output.Ring {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.rings[name]; ok {
		r.Resize(keep)
		return r
	}
	r := output.NewRing(name, keep)
	h.rings[name] = r
	h.wakers.Wake()
	return r
}

// retain drops the rings of names that are not in s (a reload removed them).
func (h *logHub) retain(s *spec.Spec) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range h.rings {
		if !slices.ContainsFunc(s.Containers, func(c spec.Container) bool { return c.Name == name }) &&
			!slices.ContainsFunc(s.InitContainers, func(c spec.InitContainer) bool { return c.Name == name }) {
			delete(h.rings, name)
		}
	}
}

// LogRings is the rings of names for GET /v1/logs (all when empty); an unknown name
// is an error.
func (sv *Supervisor) LogRings(names []string) ([]*output.Ring, error) {
	h := sv.logs
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*output.Ring
	for name, r := range h.rings {
		if len(names) == 0 || slices.Contains(names, name) {
			out = append(out, r)
		}
	}
	for _, n := range names {
		if h.rings[n] == nil {
			return nil, fmt.Errorf("no such container %q", n)
		}
	}
	return out, nil
}

// WatchLogs wakes wake whenever a ring is added, until stop.
func (sv *Supervisor) WatchLogs(wake chan<- struct{}) (stop func()) {
	return sv.logs.wakers.Watch(wake)
}
