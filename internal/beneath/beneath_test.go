package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// both runs f with openat2 and with the walk that replaces it where it is missing.
func both(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			old := noOpenat2.Load()
			noOpenat2.Store(walk)
			defer noOpenat2.Store(old)
			f(t)
		})
	}
}

// fixture is an instance directory and, beside it, a directory outside it holding a
// secret file.
type fixture struct{ root, out, secret string }

func newFixture(t *testing.T) fixture {
	base := t.TempDir()
	fx := fixture{root: filepath.Join(base, "inst"), out: filepath.Join(base, "out")}
	fx.secret = filepath.Join(fx.out, "secret")
	must(t, os.MkdirAll(filepath.Join(fx.root, "real", "sub"), 0o755))
	must(t, os.MkdirAll(fx.out, 0o755))
	must(t, os.WriteFile(fx.secret, []byte("top secret\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(fx.root, "real", "file"), []byte("inside\n"), 0o644))
	return fx
}

func (fx fixture) link(t *testing.T, target, name string) {
	t.Helper()
	p := filepath.Join(fx.root, name)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.Symlink(target, p))
}

// outEntries is what the outside directory holds: a test that was led out would
// have added to it.
func (fx fixture) outEntries(t *testing.T) []string {
	var names []string
	err := filepath.WalkDir(fx.out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != fx.out {
			names = append(names, p)
		}
		return err
	})
	must(t, err)
	return names
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSymlinksLeadingOutAreRefused(t *testing.T) {
	cases := []struct {
		name  string
		plant func(fx fixture, t *testing.T)
		path  string // relative to root
		flag  int
		want  error // ErrOutside or a system error
	}{
		{"first component", func(fx fixture, t *testing.T) { fx.link(t, fx.out, "conf") }, "conf/app.ini", os.O_WRONLY | os.O_CREATE, ErrOutside},
		{"middle component", func(fx fixture, t *testing.T) { fx.link(t, fx.out, "a/b") }, "a/b/c/app.ini", os.O_WRONLY | os.O_CREATE, ErrOutside},
		{"last component, read", func(fx fixture, t *testing.T) { fx.link(t, fx.secret, "a/secret") }, "a/secret", os.O_RDONLY, ErrOutside},
		{"last component, dangling, create", func(fx fixture, t *testing.T) { fx.link(t, filepath.Join(fx.out, "new"), "a/x") }, "a/x", os.O_WRONLY | os.O_CREATE, ErrOutside},
		{"relative dot-dot", func(fx fixture, t *testing.T) { fx.link(t, "../../out/secret", "a/s") }, "a/s", os.O_RDONLY, ErrOutside},
		{"dot-dot directory", func(fx fixture, t *testing.T) { fx.link(t, "../..", "a/up") }, "a/up/out/secret", os.O_RDONLY, ErrOutside},
		{"absolute target", func(fx fixture, t *testing.T) { fx.link(t, "/etc", "etc") }, "etc/passwd", os.O_RDONLY, ErrOutside},
		{"magic link", func(fx fixture, t *testing.T) { fx.link(t, "/proc/self/root/etc", "m") }, "m/passwd", os.O_RDONLY, ErrOutside},
		{"inside link to a link out", func(fx fixture, t *testing.T) {
			fx.link(t, fx.out, "real/sub/o")
			fx.link(t, "real/sub/o", "l")
		}, "l/secret", os.O_RDONLY, ErrOutside},
		{"loop", func(fx fixture, t *testing.T) { fx.link(t, "b", "a"); fx.link(t, "a", "b") }, "a/x", os.O_RDONLY, unix.ELOOP},
		{"nofollow last", func(fx fixture, t *testing.T) { fx.link(t, "real/file", "f") }, "f", os.O_RDONLY | unix.O_NOFOLLOW, unix.ELOOP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			both(t, func(t *testing.T) {
				fx := newFixture(t)
				tc.plant(fx, t)
				path := filepath.Join(fx.root, tc.path)
				f, err := OpenFile(fx.root, path, tc.flag, 0o644)
				if err == nil {
					f.Close()
					t.Fatalf("OpenFile(%s) worked; want %v", tc.path, tc.want)
				}
				if !errors.Is(err, tc.want) {
					t.Fatalf("OpenFile(%s) = %v; want %v", tc.path, err, tc.want)
				}
				var pe *fs.PathError
				if !errors.As(err, &pe) || pe.Path != path {
					t.Errorf("error %q does not name %s", err, path)
				}
				if got := fx.outEntries(t); len(got) != 1 {
					t.Errorf("outside now holds %v; want only the secret", got)
				}
			})
		})
	}
}

func TestSymlinksStayingInsideAreFollowed(t *testing.T) {
	cases := []struct {
		name  string
		plant func(fx fixture, t *testing.T)
		path  string
	}{
		{"relative", func(fx fixture, t *testing.T) { fx.link(t, "real", "conf") }, "conf/file"},
		{"absolute beneath root", func(fx fixture, t *testing.T) { fx.link(t, filepath.Join(fx.root, "real"), "conf") }, "conf/file"},
		{"dot-dot inside", func(fx fixture, t *testing.T) { fx.link(t, "../file", "real/sub/up") }, "real/sub/up"},
		{"chain", func(fx fixture, t *testing.T) { fx.link(t, "b", "a"); fx.link(t, "real/sub/..", "b") }, "a/file"},
		{"last component", func(fx fixture, t *testing.T) { fx.link(t, "real/file", "f") }, "f"},
		{"dot-dot in the path", func(fx fixture, t *testing.T) {}, "real/sub/../file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			both(t, func(t *testing.T) {
				fx := newFixture(t)
				tc.plant(fx, t)
				f, err := OpenFile(fx.root, filepath.Join(fx.root, tc.path), os.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				b := make([]byte, 64)
				n, _ := f.Read(b)
				if string(b[:n]) != "inside\n" {
					t.Errorf("read %q; want the file inside", b[:n])
				}
			})
		})
	}
}

func TestPathsOutsideRootAreUsedAsWritten(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t)
		f, err := OpenFile(fx.root, fx.secret, os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	})
}

func TestCreateExclusiveRefusesAPlantedName(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t)
		fx.link(t, filepath.Join(fx.out, "new"), "real/tmp")
		_, err := OpenFile(fx.root, filepath.Join(fx.root, "real/tmp"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			t.Fatalf("err = %v; want it exists", err)
		}
		if got := fx.outEntries(t); len(got) != 1 {
			t.Errorf("outside now holds %v", got)
		}
	})
}

func TestMkdirAll(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t)
		d, err := MkdirAll(fx.root, filepath.Join(fx.root, "x/y/z"), 0o750)
		must(t, err)
		d.Close()
		if fi, err := os.Stat(filepath.Join(fx.root, "x/y/z")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
			t.Fatalf("x/y/z: %v %v", fi, err)
		}
		fx.link(t, "real", "in")
		d, err = MkdirAll(fx.root, filepath.Join(fx.root, "in/new"), 0o755)
		must(t, err)
		d.Close()
		if _, err := os.Stat(filepath.Join(fx.root, "real/new")); err != nil {
			t.Errorf("through a link inside: %v", err)
		}
		fx.link(t, fx.out, "logs")
		if _, err := MkdirAll(fx.root, filepath.Join(fx.root, "logs/a/b"), 0o755); !errors.Is(err, ErrOutside) {
			t.Errorf("through a link out: %v; want ErrOutside", err)
		}
		if got := fx.outEntries(t); len(got) != 1 {
			t.Errorf("outside now holds %v", got)
		}
	})
}

func TestRemoveAll(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t)
		// A version directory holding a link out, and a store replaced by a link out.
		must(t, os.MkdirAll(filepath.Join(fx.root, "store/1/d"), 0o755))
		fx.link(t, fx.out, "store/1/d/out")
		fx.link(t, fx.out, "store/1/out")
		must(t, RemoveAll(fx.root, filepath.Join(fx.root, "store/1")))
		if _, err := os.Lstat(filepath.Join(fx.root, "store/1")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("store/1 still there: %v", err)
		}
		must(t, os.MkdirAll(filepath.Join(fx.out, "2"), 0o755))
		fx.link(t, fx.out, "old")
		if err := RemoveAll(fx.root, filepath.Join(fx.root, "old/2")); !errors.Is(err, ErrOutside) {
			t.Errorf("through a link out: %v; want ErrOutside", err)
		}
		if got := fx.outEntries(t); len(got) != 2 {
			t.Errorf("outside now holds %v; want the secret and 2", got)
		}
		must(t, RemoveAll(fx.root, filepath.Join(fx.root, "old"))) // the link itself
		if _, err := os.Lstat(filepath.Join(fx.root, "old")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("old still there: %v", err)
		}
		must(t, RemoveAll(fx.root, filepath.Join(fx.root, "missing/x")))
		if err := RemoveAll(fx.root, fx.root); err == nil {
			t.Error("removed the root")
		}
	})
}

func TestRename(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t)
		fx.link(t, fx.out, "o")
		if err := Rename(fx.root, filepath.Join(fx.root, "real/file"), filepath.Join(fx.root, "o/file")); !errors.Is(err, ErrOutside) {
			t.Errorf("into a link out: %v; want ErrOutside", err)
		}
		must(t, Rename(fx.root, filepath.Join(fx.root, "real/file"), filepath.Join(fx.root, "o")))
		if fi, err := os.Lstat(filepath.Join(fx.root, "o")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("o: %v %v; want the file that replaced the link", fi, err)
		}
	})
}

func TestLink(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t)
		fx.link(t, fx.out, "o")
		if err := Link(fx.root, filepath.Join(fx.root, "real/file"), filepath.Join(fx.root, "o/file")); !errors.Is(err, ErrOutside) {
			t.Errorf("into a link out: %v; want ErrOutside", err)
		}
		if _, err := os.Lstat(filepath.Join(fx.out, "file")); !os.IsNotExist(err) {
			t.Errorf("a link out: %v; want nothing made outside", err)
		}
		must(t, Link(fx.root, filepath.Join(fx.root, "real/file"), filepath.Join(fx.root, "real/again")))
		var a, b unix.Stat_t
		must(t, unix.Stat(filepath.Join(fx.root, "real/file"), &a))
		must(t, unix.Stat(filepath.Join(fx.root, "real/again"), &b))
		if a.Ino != b.Ino {
			t.Error("real/again is not a hard link of real/file")
		}
	})
}

// trustedDir is a directory whose every ancestor is owned by root and writable by
// nobody else (the package's own directory in a root-owned checkout), or skips.
func trustedDir(t *testing.T) string {
	wd, err := os.Getwd()
	must(t, err)
	d, err := os.MkdirTemp(wd, ".beneath-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	must(t, os.Chmod(d, 0o755))
	var st unix.Stat_t
	for p := d; ; p = filepath.Dir(p) {
		must(t, unix.Lstat(p, &st))
		if !rootOnly(&st) {
			t.Skipf("%s is not owned by root or is writable by others", p)
		}
		if p == "/" {
			return d
		}
	}
}

func TestRootOwnedLinkOfAnImageIsFollowed(t *testing.T) {
	both(t, func(t *testing.T) {
		base := trustedDir(t)
		root := filepath.Join(base, "inst")
		secrets := filepath.Join(base, "run-secrets")
		must(t, os.MkdirAll(root, 0o755))
		must(t, os.MkdirAll(secrets, 0o700))
		must(t, os.WriteFile(filepath.Join(secrets, "token"), []byte("t"), 0o600))
		must(t, os.Symlink(secrets, filepath.Join(root, "secrets")))
		f, err := OpenFile(root, filepath.Join(root, "secrets/token"), os.O_RDONLY, 0)
		must(t, err)
		f.Close()

		// The same link owned by a user is refused.
		must(t, unix.Lchown(filepath.Join(root, "secrets"), 65534, 65534))
		if _, err := OpenFile(root, filepath.Join(root, "secrets/token"), os.O_RDONLY, 0); !errors.Is(err, ErrOutside) {
			t.Errorf("a user's link: %v; want ErrOutside", err)
		}
		// A root-owned link in a directory a user may write is refused.
		must(t, unix.Lchown(filepath.Join(root, "secrets"), 0, 0))
		must(t, os.Chown(root, 65534, 65534))
		if _, err := OpenFile(root, filepath.Join(root, "secrets/token"), os.O_RDONLY, 0); !errors.Is(err, ErrOutside) {
			t.Errorf("in a user's directory: %v; want ErrOutside", err)
		}
	})
}

func TestRootOwnedLinkUnderAWorldWritableDirIsRefused(t *testing.T) {
	both(t, func(t *testing.T) {
		fx := newFixture(t) // under the temporary directory, writable by all
		must(t, os.Chmod(filepath.Dir(fx.root), 0o755))
		fx.link(t, fx.out, "secrets")
		if _, err := OpenFile(fx.root, filepath.Join(fx.root, "secrets/secret"), os.O_RDONLY, 0); !errors.Is(err, ErrOutside) {
			t.Errorf("err = %v; want ErrOutside", err)
		}
	})
}

func TestRel(t *testing.T) {
	cases := []struct {
		root, path, rel string
		ok              bool
	}{
		{"/i", "/i/a/b", "a/b", true},
		{"/i", "/i", ".", true},
		{"/i/", "/i/./a/../b", "b", true},
		{"/i", "a/b", "a/b", true},
		{"/i", "/ix/a", "", false},
		{"/i", "/i/../etc", "", false},
		{"/i", "/etc", "", false},
		{"", "/i/a", "", false},
	}
	for _, c := range cases {
		rel, ok := Rel(c.root, c.path)
		if rel != c.rel || ok != c.ok {
			t.Errorf("Rel(%q, %q) = %q, %v; want %q, %v", c.root, c.path, rel, ok, c.rel, c.ok)
		}
	}
}
