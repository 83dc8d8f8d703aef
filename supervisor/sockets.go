package supervisor

import (
	"github.com/tend-sh/tend/container"
	"github.com/tend-sh/tend/spec"
)

// socketsFor are the listening sockets of a container of cs in spec s (docs/reference.md "Restarts without downtime"):
// those of the running container of that name when a reload keeps them unchanged, so
// that the new process takes over the very sockets whose backlog holds the waiting
// connections; new (bound at its first start) otherwise.
func (sv *Supervisor) socketsFor(s *spec.Spec, cs *spec.Container) *container.Sockets {
	fresh := container.NewSockets(s, cs)
	for _, c := range sv.current() {
		if c.Name() == cs.Name && c.Sockets() != nil && c.Sockets().Same(fresh) {
			return c.Sockets()
		}
	}
	return fresh
}

// closeSockets closes the sockets of stopped containers that none of the running
// set took over: a reload removed their container or changed its sockets. It runs
// once they have stopped, and before the new containers start, so a new socket on
// the same address binds.
func closeSockets(stopped, running []*container.Container) {
	kept := map[*container.Sockets]bool{}
	for _, c := range running {
		kept[c.Sockets()] = true
	}
	for _, c := range stopped {
		if ss := c.Sockets(); ss != nil && !kept[ss] {
			ss.Close()
		}
	}
}
