package container

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/tend-sh/tend/internal/beneath"
)

// A container's user who owns instance.dir replaces a socket's directory with a
// symlink to a directory holding a socket of root's: binding must neither remove
// that socket nor make one there.
func TestUnixSocketIsNotBoundThroughAPlantedLink(t *testing.T) {
	root := t.TempDir()
	victim := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(victim, "app.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink(victim, filepath.Join(root, "run")); err != nil {
		t.Fatal(err)
	}
	b := boundSocket{network: "unix", addr: filepath.Join(root, "run", "app.sock"), name: "app", root: root}
	f, err := b.bind()
	if err == nil {
		f.Close()
		t.Fatal("bound through the link")
	}
	if !errors.Is(err, beneath.ErrOutside) {
		t.Errorf("err = %v; want it to say the link leads out", err)
	}
	if fi, err := os.Lstat(filepath.Join(victim, "app.sock")); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Errorf("root's socket: %v %v", fi, err)
	}

	// Inside instance.dir it binds, with mode 0660, replacing a stale socket.
	if err := os.Mkdir(filepath.Join(root, "sock"), 0o755); err != nil {
		t.Fatal(err)
	}
	b.addr = filepath.Join(root, "sock", "app.sock")
	for range 2 {
		f, err := b.bind()
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if fi, err := os.Lstat(b.addr); err != nil || fi.Mode().Perm() != 0o660 {
			t.Errorf("socket: %v %v; want mode 0660", fi, err)
		}
	}
}
