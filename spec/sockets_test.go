package spec

import (
	"strings"
	"testing"
)

// Sockets load with their defaults (name: the container's, update: stop_first),
// render, and the rendered spec loads to the same addresses.
func TestSocketsDefaultsAndRender(t *testing.T) {
	s := mustLoad(t, `
instance: {name: i, dir: /srv}
containers:
  - name: web
    command: "true"
    update: start_first
    sockets:
      - {listen: "127.0.0.1:8080"}
      - {listen: "[::1]:8081", name: admin}
      - {listen: "unix:run/web.sock"}
`, nil)
	c := s.Containers[0]
	if c.Update != UpdateStartFirst || c.Sockets[0].Name != "web" || c.Sockets[1].Name != "admin" {
		t.Fatalf("defaults: update %q, sockets %+v", c.Update, c.Sockets)
	}
	if n, a := s.SocketAddr(c.Sockets[2]); n != "unix" || a != "/srv/run/web.sock" {
		t.Errorf("unix socket address = %s %s, want unix /srv/run/web.sock", n, a)
	}
	if n, a := s.SocketAddr(c.Sockets[1]); n != "tcp" || a != "[::1]:8081" {
		t.Errorf("tcp socket address = %s %s", n, a)
	}
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"listen: 127.0.0.1:8080", "name: admin", "update: start_first"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("render lacks %q:\n%s", w, out)
		}
	}
	if d := mustLoad(t, "instance: {name: i}\ncontainers: [{name: a, command: \"true\"}]\n", nil); d.Containers[0].Update != UpdateStopFirst {
		t.Errorf("update default = %q, want stop_first", d.Containers[0].Update)
	}
}

// Bad addresses, an address taken twice (by two containers or two entries, the
// error naming both), bad names and a notify fd among the sockets' are errors.
func TestSocketsValidation(t *testing.T) {
	errs := loadErrors(t, `
instance: {name: i}
containers:
  - name: a
    command: "true"
    update: rolling
    sockets:
      - {listen: "localhost:80"}
      - {listen: "127.0.0.1:0"}
      - {listen: "127.0.0.1:8080", name: "a:b"}
      - {listen: "unix:"}
    readiness_probe: {notify: {fd: 4}}
  - name: b
    command: "true"
    sockets:
      - {listen: "127.0.0.1:8080"}
      - {listen: "[::1]:9"}
      - {listen: "[::1]:9"}
`, nil)
	all := strings.Join(errs, "\n")
	for _, w := range []string{
		`containers[0].sockets[0].listen: must be HOST:PORT with an IP address`,
		`containers[0].sockets[1].listen: must have a port 1-65535`,
		`containers[0].sockets[2].name: must be 1-255 printable ASCII characters`,
		`containers[0].sockets[3].listen: must name a path after unix:`,
		`containers[0].readiness_probe.notify.fd: fd 4 is one of the sockets' (fds 3-6)`,
		`containers[0].update: must be stop_first or start_first, got "rolling"`,
		`containers[1].sockets[0].listen: 127.0.0.1:8080 is also the address of containers[0].sockets[2].listen`,
		`containers[1].sockets[2].listen: [::1]:9 is also the address of containers[1].sockets[1].listen`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no error %q in:\n%s", w, all)
		}
	}
}
