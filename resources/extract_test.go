package resources

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one archive member: a file (body), a dir (name ends in /), a symlink or
// hardlink (link), or a device.
type entry struct {
	name, body, link string
	mode             int64
	kind             byte // tar type flag; 0: by name
}

func tarBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Linkname: e.link, Typeflag: e.kind}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		switch {
		case e.kind != 0:
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func zipBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch {
		case e.link != "":
			h.SetMode(fs.ModeSymlink | 0o777)
		case strings.HasSuffix(e.name, "/"):
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(fs.FileMode(max(e.mode, 0o644)))
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if e.link != "" {
			w.Write([]byte(e.link))
		} else {
			w.Write([]byte(e.body))
		}
	}
	zw.Close()
	return buf.Bytes()
}

// runExtract writes archive to a file and extracts it into a new directory.
func runExtract(t *testing.T, archive []byte, lim extractLimits) (string, int, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "archive")
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	skipped, err := extract(path, root, lim)
	return root, skipped, err
}

var bigLimits = extractLimits{bytes: 1 << 30, entries: 1000, nameBytes: 1 << 20}

var good = []entry{
	{name: "data/"},
	{name: "data/a.txt", body: "alpha"},
	{name: "data/sub/b.txt", body: "beta", mode: 0o4755}, // setuid is dropped
	{name: "link", link: "data/a.txt", kind: tar.TypeSymlink},
	{name: "hard", link: "data/a.txt", kind: tar.TypeLink},
}

func checkGood(t *testing.T, root string, hardlink bool) {
	t.Helper()
	for path, want := range map[string]string{"data/a.txt": "alpha", "data/sub/b.txt": "beta", "link": "alpha"} {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	fi, err := os.Stat(filepath.Join(root, "data/sub/b.txt"))
	if err != nil || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
		t.Errorf("b.txt mode = %v, %v; want 0755 without setuid", fi.Mode(), err)
	}
	if hardlink {
		if got, _ := os.ReadFile(filepath.Join(root, "hard")); string(got) != "alpha" {
			t.Errorf("hardlink content = %q", got)
		}
	}
}

func TestExtractTarTgzZip(t *testing.T) {
	root, _, err := runExtract(t, tarBytes(t, good), bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	checkGood(t, root, true)

	root, _, err = runExtract(t, gzipBytes(tarBytes(t, good)), bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	checkGood(t, root, true)

	zipEntries := []entry{good[0], good[1], good[2], {name: "link", link: "data/a.txt"}}
	root, _, err = runExtract(t, zipBytes(t, zipEntries), bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	checkGood(t, root, false)
}

func TestExtractRejectsUnsafeEntries(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"dotdot", tarBytes(t, []entry{{name: "ok.txt", body: "x"}, {name: "../evil.txt", body: "x"}}), `entry "../evil.txt" leads outside the target`},
		{"dotdot inside", tarBytes(t, []entry{{name: "a/../../evil.txt", body: "x"}}), `leads outside the target`},
		{"absolute", tarBytes(t, []entry{{name: "/tmp/evil.txt", body: "x"}}), `entry "/tmp/evil.txt" has an absolute path`},
		{"absolute symlink", tarBytes(t, []entry{{name: "l", link: outside, kind: tar.TypeSymlink}}), `symlink "l" points to`},
		{"relative symlink out", tarBytes(t, []entry{{name: "d/l", link: "../../x", kind: tar.TypeSymlink}}), `symlink "d/l" leads outside the target`},
		{"symlink chain out", tarBytes(t, []entry{{name: "t", link: "s/..", kind: tar.TypeSymlink}, {name: "s", link: ".", kind: tar.TypeSymlink}}), `symlink "t" leads outside the target`},
		{"write through symlink", tarBytes(t, []entry{{name: "d", link: ".", kind: tar.TypeSymlink}, {name: "d/x", body: "x"}}), `entry "d/x" is below the symlink "d"`},
		{"hardlink out", tarBytes(t, []entry{{name: "h", link: "../etc/passwd", kind: tar.TypeLink}}), `hardlink "h" to "../etc/passwd" leads outside`},
		{"hardlink absolute", tarBytes(t, []entry{{name: "h", link: "/etc/passwd", kind: tar.TypeLink}}), `hardlink "h" to "/etc/passwd" leads outside`},
		{"zip dotdot", zipBytes(t, []entry{{name: "../evil.txt", body: "x"}}), `leads outside the target`},
		{"zip symlink out", zipBytes(t, []entry{{name: "l", link: "../../etc"}}), `symlink "l" leads outside the target`},
		{"not an archive", []byte(strings.Repeat("plain text, not an archive\n", 40)), `not a tar, tar.gz or zip archive`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runExtract(t, tc.archive, bigLimits)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if tc.name != "not an archive" && !errors.Is(err, ErrUnsafeArchive) {
				t.Errorf("error %v does not wrap ErrUnsafeArchive", err)
			}
		})
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("something was written outside: %v", entries)
	}
}

func TestExtractBombAndDevices(t *testing.T) {
	bomb := gzipBytes(tarBytes(t, []entry{{name: "zeros", body: strings.Repeat("\x00", 1<<20)}}))
	_, _, err := runExtract(t, bomb, extractLimits{bytes: 64 << 10, entries: 10, nameBytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "unpacks to more than 65536 bytes (archive bomb?)") {
		t.Fatalf("bomb error = %v", err)
	}
	many := tarBytes(t, []entry{{name: "a"}, {name: "b"}, {name: "c"}})
	if _, _, err := runExtract(t, many, extractLimits{bytes: 1 << 20, entries: 2, nameBytes: 1 << 20}); err == nil || !strings.Contains(err.Error(), "more than 2 entries") {
		t.Errorf("entries error = %v", err)
	}
	// Names count too: a few long paths are as bad as many entries.
	long := strings.Repeat("d", 200) + "/"
	names := tarBytes(t, []entry{{name: long}, {name: long + "a"}, {name: long + "b"}})
	if _, _, err := runExtract(t, names, extractLimits{bytes: 1 << 20, entries: 10, nameBytes: 500}); err == nil || !strings.Contains(err.Error(), "more than 500 bytes of entry names") {
		t.Errorf("names error = %v", err)
	}
	// A zip says how many entries it has: too many is rejected before any is
	// written. 70,000 entries need the zip64 end record.
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for i := range 70_000 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprint(i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	zw.Close()
	root, _, err := runExtract(t, zbuf.Bytes(), extractLimits{bytes: 1 << 20, entries: 69_999, nameBytes: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "more than 69999 entries") {
		t.Errorf("zip entries error = %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("%d entries were written before the zip was rejected", len(entries))
	}
	dev := tarBytes(t, []entry{{name: "null", kind: tar.TypeChar}, {name: "fifo", kind: tar.TypeFifo}, {name: "f", body: "x"}})
	root, skipped, err := runExtract(t, dev, bigLimits)
	if err != nil || skipped != 2 {
		t.Fatalf("devices: skipped %d, %v; want 2 skipped", skipped, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "null")); err == nil {
		t.Error("a device file was created")
	}
	// The default bound: at least 1 GiB, else 100 times the archive.
	if l := DefaultOptions().limitsFor(100 << 20); l.bytes != 10000<<20 {
		t.Errorf("bound for 100 MiB = %d, want 100x", l.bytes)
	}
	if l := DefaultOptions().limitsFor(1 << 10); l.bytes != 1<<30 {
		t.Errorf("bound for 1 KiB = %d, want 1 GiB", l.bytes)
	}
}

// The zip reader checks every entry's CRC-32.
func TestExtractZipChecksum(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "a.txt", Method: zip.Store})
	w.Write([]byte("hello zip"))
	zw.Close()
	good := buf.Bytes()

	root, _, err := runExtract(t, good, bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "hello zip" {
		t.Errorf("a.txt = %q", b)
	}
	bad := bytes.Replace(good, []byte("hello zip"), []byte("hello zap"), 1)
	if _, _, err := runExtract(t, bad, bigLimits); err == nil || !strings.Contains(err.Error(), "checksum error") {
		t.Errorf("corrupt entry: error = %v, want a checksum error", err)
	}
}

// A directory the archive makes read-only still takes the entries that follow it;
// its mode keeps the owner's access.
func TestExtractReadOnlyDirectory(t *testing.T) {
	archive := tarBytes(t, []entry{
		{name: "ro", kind: tar.TypeDir, mode: 0o555},
		{name: "ro/f", body: "in a read-only dir"},
		{name: "ro/sub/g", body: "deeper"},
	})
	root, _, err := runExtract(t, archive, bigLimits)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "ro/sub/g")); string(b) != "deeper" {
		t.Errorf("ro/sub/g = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(root, "ro")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("ro mode = %v, %v; want 0755 (0555 and the owner's access)", fi.Mode(), err)
	}
}

// A directory entry below a symlink an earlier entry made must not change the mode of
// the directory the symlink leads to (outside the target).
func TestExtractNoChmodThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "archive")
	os.WriteFile(archive, tarBytes(t, []entry{
		{name: "l", link: "../outside", kind: tar.TypeSymlink},
		{name: "l/sub", kind: tar.TypeDir, mode: 0o777},
	}), 0o644)
	root := filepath.Join(dir, "root")
	os.Mkdir(root, 0o755)
	_, err := extract(archive, root, bigLimits)
	if !errors.Is(err, ErrUnsafeArchive) {
		t.Errorf("error = %v, want an unsafe archive", err)
	}
	if fi, _ := os.Stat(filepath.Join(outside, "sub")); fi.Mode().Perm() != 0o700 {
		t.Errorf("outside/sub mode = %v, want 0700 untouched", fi.Mode().Perm())
	}
}
