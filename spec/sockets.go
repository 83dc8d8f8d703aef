package spec

import (
	"net/netip"
	"strings"
)

// Socket is one listening socket of a container (docs/reference.md "Restarts without downtime"): tend binds Listen
// before the container's first start and passes it to every process of the container
// by systemd's socket activation protocol (sd_listen_fds(3)).
type Socket struct {
	// Listen is HOST:PORT for TCP (an IP address: 127.0.0.1:8080, [::1]:8080) or
	// unix:PATH (PATH relative to instance.dir).
	Listen string `yaml:"listen" json:"listen"`
	// Name is its LISTEN_FDNAMES entry; default: the container's name.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
}

// Values of Container.Update.
const (
	UpdateStopFirst  = "stop_first"
	UpdateStartFirst = "start_first"
)

// unixPrefix marks a unix socket's Listen.
const unixPrefix = "unix:"

// maxUnixPath is the longest path a sockaddr_un holds (108 bytes with its NUL).
const maxUnixPath = 107

// maxFDName is the longest LISTEN_FDNAMES entry sd_listen_fds_with_names accepts.
const maxFDName = 255

// SocketAddr is where sock listens: network "tcp" and a canonical ADDR:PORT, or
// "unix" and an absolute path (relative ones are in instance.dir). Valid after Load.
func (s *Spec) SocketAddr(sock Socket) (network, addr string) {
	if path, ok := strings.CutPrefix(sock.Listen, unixPrefix); ok {
		return "unix", s.WorkDir(path)
	}
	ap, err := netip.ParseAddrPort(strings.TrimSpace(sock.Listen))
	if err != nil {
		return "tcp", sock.Listen
	}
	return "tcp", ap.String()
}

// defaultSockets names every unnamed socket of c after c, and sets c.update.
func defaultSockets(c *Container) {
	for i := range c.Sockets {
		setString(&c.Sockets[i].Name, c.Name)
	}
	setString(&c.Update, UpdateStopFirst)
}

// sockets checks a container's sockets (path: its field path); seen maps every
// address already taken to the field that took it, across containers.
func (k *checker) sockets(path string, c *Container, seen map[string]string) {
	for i := range c.Sockets {
		sock := &c.Sockets[i]
		p := index(join(path, "sockets"), i)
		if !k.subst(join(p, "listen"), &sock.Listen) {
			continue
		}
		if !k.listenAddr(join(p, "listen"), sock.Listen) {
			continue
		}
		network, addr := k.s.SocketAddr(*sock)
		key := network + " " + addr
		if first, dup := seen[key]; dup {
			k.c.addf(join(p, "listen"), "%s is also the address of %s", addr, first)
		} else {
			seen[key] = join(p, "listen")
		}
		if !validFDName(sock.Name) {
			k.c.addf(join(p, "name"), "must be 1-%d printable ASCII characters without ':' or spaces (a LISTEN_FDNAMES entry), got %q", maxFDName, sock.Name)
		}
	}
	for i, p := range c.fdProbes() {
		if fd := p.Notify.FD.Get(); fd >= minNotifyFD && fd < minNotifyFD+len(c.Sockets) {
			k.c.addf(join(join(path, i), "notify.fd"), "fd %d is one of the sockets' (fds 3-%d)", fd, minNotifyFD+len(c.Sockets)-1)
		}
	}
	k.oneOf(join(path, "update"), c.Update, UpdateStopFirst, UpdateStartFirst)
}

// listenAddr checks a socket's listen field.
func (k *checker) listenAddr(path, listen string) bool {
	if p, ok := strings.CutPrefix(listen, unixPrefix); ok {
		abs := k.s.WorkDir(p)
		switch {
		case strings.TrimSpace(p) == "":
			k.c.addf(path, "must name a path after unix:")
		case len(abs) > maxUnixPath:
			k.c.addf(path, "the path %s is %d bytes long; a unix socket's is at most %d", abs, len(abs), maxUnixPath)
		default:
			return true
		}
		return false
	}
	ap, err := netip.ParseAddrPort(strings.TrimSpace(listen))
	switch {
	case err != nil:
		k.c.addf(path, "must be HOST:PORT with an IP address (127.0.0.1:8080, [::1]:8080) or unix:PATH, got %q", listen)
	case ap.Port() == 0:
		k.c.addf(path, "must have a port 1-65535, got %q", listen)
	case ap.Addr().Zone() != "":
		k.c.addf(path, "must not have an IPv6 zone, got %q", listen)
	default:
		return true
	}
	return false
}

// validFDName reports whether name can be a LISTEN_FDNAMES entry: printable ASCII
// but ':' (the separator) and space, at most maxFDName bytes (systemd's
// fdname_is_valid, without spaces, which tools splitting the variable mishandle).
func validFDName(name string) bool {
	if name == "" || len(name) > maxFDName {
		return false
	}
	for _, r := range []byte(name) {
		if r <= ' ' || r > '~' || r == ':' {
			return false
		}
	}
	return true
}

// fdProbes are the probes of c that use s6's notification descriptor, by field.
func (c *Container) fdProbes() map[string]*Probe {
	out := map[string]*Probe{}
	for field, p := range map[string]*Probe{"readiness_probe": c.ReadinessProbe, "startup_probe": c.StartupProbe} {
		if p != nil && p.Notify != nil && p.Notify.FD.IsSet() {
			out[field] = p
		}
	}
	return out
}
