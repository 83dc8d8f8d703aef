package resources

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tend-sh/tend/status"
)

func TestReloadStatic(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	v2 := []byte("version two")
	modelURL := srv.file("/model.bin", payload)
	otherURL := srv.file("/other.bin", v2)
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+modelURL+`"], checksum: "`+md5sum(payload)+`"}
  - {name: other.bin, urls: ["`+otherURL+`"]}
containers: []
`)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(filepath.Join(dir, "model.bin"))

	// Unchanged name, urls and checksum (check_period may change): no request, no touch.
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+modelURL+`"], checksum: "`+md5sum(payload)+`", check_period: 0d1h0m}
  - {name: other.bin, urls: ["`+otherURL+`"]}
containers: []
`), nil); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, "model.bin"))
	if srv.count("/model.bin") != 1 || srv.count("/other.bin") != 1 || !os.SameFile(before, after) {
		t.Fatalf("unchanged resources fetched again or touched: %d, %d requests", srv.count("/model.bin"), srv.count("/other.bin"))
	}

	// A change that fails leaves everything as it was, also the resource that worked.
	newURL := srv.file("/model-v2.bin", v2)
	err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+newURL+`"], checksum: "`+md5sum(v2)+`"}
  - {name: other.bin, urls: ["`+srv.URL+`/gone"]}
containers: []
`), nil)
	if err == nil || !strings.Contains(err.Error(), `resource "other.bin": HTTP 404`) {
		t.Fatalf("reload error = %v, want other.bin 404", err)
	}
	checkContent(t, filepath.Join(dir, "model.bin"), payload)
	checkContent(t, filepath.Join(dir, "other.bin"), v2)
	if srv.count("/gone") != 2 {
		t.Errorf("requests for a failing URL = %d, want ReloadRounds (2)", srv.count("/gone"))
	}
	if st := staticStatus(m, "model.bin"); st.State != status.ResourceReady {
		t.Errorf("status after a failed reload = %+v", st)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}

	// A change that works replaces the file.
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+newURL+`"], checksum: "`+md5sum(v2)+`"}
containers: []
`), nil); err != nil {
		t.Fatal(err)
	}
	checkContent(t, filepath.Join(dir, "model.bin"), v2)
	if srv.count("/model-v2.bin") != 2 { // once in the failed reload, once now
		t.Errorf("requests for the new version = %d, want 2", srv.count("/model-v2.bin"))
	}
	// Resources with the same checksum are identical (as in ISS): new urls alone
	// fetch nothing when the file in place has that checksum.
	if err := m.Reload(context.Background(), loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+srv.URL+`/never", "`+newURL+`"], checksum: "`+md5sum(v2)+`"}
containers: []
`), nil); err != nil {
		t.Fatal(err)
	}
	if srv.count("/never") != 0 || srv.count("/model-v2.bin") != 2 {
		t.Errorf("new urls with an unchanged checksum were fetched")
	}
	rs, _ := m.Status()
	if len(rs) != 1 || rs[0].Name != "model.bin" || rs[0].State != status.ResourceReady {
		t.Errorf("status = %+v, want model.bin ready only", rs)
	}
}
