package resources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// requests is the number of requests the server got for paths.
func requests(srv *server, paths ...string) int {
	n := 0
	for _, p := range paths {
		n += srv.count(p)
	}
	return n
}

// Resources with the same checksum staged at once (preparing runs them in
// parallel) download once: the others are copied from the first.
func TestSameChecksumDownloadsOnce(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	paths := []string{"/a", "/b", "/c", "/d"}
	var list strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&list, "  - {name: r%d.bin, urls: [%q], checksum: %q}\n", i, srv.file(p, payload), sha256sum(payload))
	}
	logs := &syncBuffer{}
	m := newManager(t, logs)
	if err := m.Prepare(context.Background(), loadSpec(t, dir, "resources:\n"+list.String()+"containers: []\n")); err != nil {
		t.Fatal(err)
	}
	if n := requests(srv, paths...); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	for i := range paths {
		name := fmt.Sprintf("r%d.bin", i)
		checkContent(t, filepath.Join(dir, name), payload)
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode = %v, %v; want 0644", name, fi.Mode(), err)
		}
		if st := staticStatus(m, name); st.State != status.ResourceReady || !st.ChecksumOK || st.BytesDone != int64(len(payload)) {
			t.Errorf("%s status = %+v", name, st)
		}
	}
	if n := strings.Count(logs.String(), `with the same checksum"`); n != len(paths)-1 {
		t.Errorf("copy log lines = %d, want %d:\n%s", n, len(paths)-1, logs)
	}
	if !strings.Contains(logs.String(), `"resource":"r`) || !strings.Contains(logs.String(), `"from":"r`) {
		t.Errorf("copy log lines without resource and from:\n%s", logs)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

// A reload copies new and changed resources whose checksum an existing resource
// has, and two new ones with the same checksum download once.
func TestSameChecksumOnReload(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	v2 := []byte("version two")
	aURL, otherURL := srv.file("/a", payload), srv.file("/other", v2)
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, `
resources:
  - {name: a.bin, urls: ["`+aURL+`"], checksum: "`+md5sum(payload)+`"}
  - {name: other.bin, urls: ["`+otherURL+`"], checksum: "`+md5sum(v2)+`"}
containers: []
`)); err != nil {
		t.Fatal(err)
	}

	// c.bin is new and other.bin changes to a.bin's checksum: no request at all.
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: a.bin, urls: ["`+aURL+`"], checksum: "`+md5sum(payload)+`"}
  - {name: other.bin, urls: ["`+srv.file("/other2", payload)+`"], checksum: "`+md5sum(payload)+`"}
  - {name: c.bin, urls: ["`+srv.file("/c", payload)+`"], checksum: "`+md5sum(payload)+`"}
containers: []
`), nil); err != nil {
		t.Fatal(err)
	}
	if n := requests(srv, "/a", "/other2", "/c"); n != 1 {
		t.Errorf("requests = %d, want the first download only", n)
	}
	for _, name := range []string{"a.bin", "other.bin", "c.bin"} {
		checkContent(t, filepath.Join(dir, name), payload)
		if st := staticStatus(m, name); st.State != status.ResourceReady || !st.ChecksumOK {
			t.Errorf("%s status = %+v", name, st)
		}
	}

	// Two new resources with a checksum nobody has yet: one download, one copy of
	// the staged file (a reload commits only after staging everything).
	v3 := []byte("version three")
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: a.bin, urls: ["`+aURL+`"], checksum: "`+md5sum(payload)+`"}
  - {name: d.bin, urls: ["`+srv.file("/d", v3)+`"], checksum: "`+md5sum(v3)+`"}
  - {name: e.bin, urls: ["`+srv.file("/e", v3)+`"], checksum: "`+md5sum(v3)+`"}
containers: []
`), nil); err != nil {
		t.Fatal(err)
	}
	if n := requests(srv, "/d", "/e"); n != 1 {
		t.Errorf("requests for two new resources with one checksum = %d, want 1", n)
	}
	checkContent(t, filepath.Join(dir, "d.bin"), v3)
	checkContent(t, filepath.Join(dir, "e.bin"), v3)
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

// A source changed on disk since it was verified is not copied: the resource is
// downloaded as usual.
func TestSameChecksumCorruptSourceDownloads(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	aURL := srv.file("/a", payload)
	logs := &syncBuffer{}
	m := newManager(t, logs)
	if err := m.Prepare(context.Background(), loadSpec(t, dir, `
resources: [{name: a.bin, urls: ["`+aURL+`"], checksum: "`+md5sum(payload)+`"}]
containers: []
`)); err != nil {
		t.Fatal(err)
	}
	bad := []byte(strings.ToUpper(string(payload))) // same size, other bytes
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: a.bin, urls: ["`+aURL+`"], checksum: "`+md5sum(payload)+`"}
  - {name: b.bin, urls: ["`+srv.file("/b", payload)+`"], checksum: "`+md5sum(payload)+`"}
containers: []
`), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"from":"a.bin"`) || !strings.Contains(logs.String(), "checksum mismatch") {
		t.Errorf("no failed copy from a.bin in the log:\n%s", logs)
	}
	if srv.count("/b") != 1 {
		t.Errorf("requests for b.bin = %d, want 1", srv.count("/b"))
	}
	checkContent(t, filepath.Join(dir, "b.bin"), payload)
	if strings.Contains(logs.String(), "with the same checksum") {
		t.Errorf("a corrupt file was copied:\n%s", logs)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

// A kept version of a dynamic resource is a source too; EMPTY: and extract are not.
func TestSameChecksumFromDynamicVersion(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	v1 := []byte("geo v1")
	geo := `
dynamic_resources:
  - {name: geo, revision: 1, urls: ["` + srv.file("/geo", v1) + `"], checksum: "` + md5sum(v1) + `", storage_dir: store, destination: geo}
containers: []
`
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, geo)); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: geo.bin, urls: ["`+srv.file("/geo-static", v1)+`"], checksum: "`+md5sum(v1)+`"}
  - {name: empty.bin, urls: ["`+srv.file("/empty", v1)+`"]}
`+strings.TrimPrefix(geo, "\n")), nil); err != nil {
		t.Fatal(err)
	}
	if srv.count("/geo-static") != 0 || srv.count("/empty") != 1 {
		t.Errorf("requests: geo-static=%d (want 0, copied), empty=%d (want 1)", srv.count("/geo-static"), srv.count("/empty"))
	}
	checkContent(t, filepath.Join(dir, "geo.bin"), v1)
	checkContent(t, filepath.Join(dir, "empty.bin"), v1)
}

// A resource whose re-verification failed is copied from another resource with the
// same checksum instead of downloaded again.
func TestSameChecksumRecheckCopies(t *testing.T) {
	old := checkPeriodMinute
	checkPeriodMinute = 20 * time.Millisecond
	t.Cleanup(func() { checkPeriodMinute = old })
	srv := newServer(t)
	dir := t.TempDir()
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, `
resources:
  - {name: a.bin, urls: ["`+srv.file("/a", payload)+`"], checksum: "`+md5sum(payload)+`", check_period: 0d0h1m}
  - {name: b.bin, urls: ["`+srv.file("/b", payload)+`"], checksum: "`+md5sum(payload)+`"}
containers: []
`)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.bin"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a.bin in place again", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(dir, "a.bin"))
		return string(b) == string(payload) && staticStatus(m, "a.bin").State == status.ResourceReady, fmt.Sprint(len(b))
	})
	if n := requests(srv, "/a", "/b"); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}
