package resources

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

func newManager(t *testing.T, logs *syncBuffer) *Manager {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := New(ctx, testOptions(logs))
	t.Cleanup(func() { cancel(); m.Close() })
	return m
}

func staticStatus(m *Manager, name string) status.Resource {
	rs, _ := m.Status()
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	return status.Resource{}
}

func TestPrepareStatic(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	s := loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+srv.URL+`/missing", "`+srv.file("/model.bin", payload)+`"], checksum: "`+md5sum(payload)+`"}
  - {name: data, urls: ["`+srv.file("/data.tgz", gzipBytes(tarBytes(t, good)))+`"], extract: true}
containers: []
`)
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	checkContent(t, filepath.Join(dir, "model.bin"), payload)
	checkGood(t, filepath.Join(dir, "data"), true)
	for _, p := range []string{"model.bin", "data"} {
		if fi, err := os.Stat(filepath.Join(dir, p)); err != nil || fi.Mode().Perm()&0o044 != 0o044 {
			t.Errorf("%s mode = %v, %v; want readable by all", p, fi.Mode(), err)
		}
	}
	st := staticStatus(m, "model.bin")
	if st.State != status.ResourceReady || !st.ChecksumOK || st.BytesDone != int64(len(payload)) || st.BytesTotal == nil || *st.BytesTotal != int64(len(payload)) {
		t.Errorf("status = %+v", st)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}

	// A restart of tend finds both in place and fetches nothing.
	m2 := newManager(t, &syncBuffer{})
	if err := m2.Prepare(context.Background(), loadSpec(t, dir, readSpec(t, dir))); err != nil {
		t.Fatal(err)
	}
	if srv.count("/model.bin") != 1 || srv.count("/data.tgz") != 1 {
		t.Errorf("requests after restart: model=%d data=%d, want 1 each", srv.count("/model.bin"), srv.count("/data.tgz"))
	}
}

func readSpec(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPrepareWrongChecksumPutsNothingInPlace(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	want := "MD5:99300b5d1e10ec1d72cb45d023fe86ac"
	s := loadSpec(t, dir, `
resources: [{name: model.bin, urls: ["`+srv.file("/model.bin", payload)+`"], checksum: "`+want+`"}]
containers: []
`)
	m := newManager(t, &syncBuffer{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Prepare(ctx, s) }()
	waitFor(t, "a failing reason", func() (bool, string) {
		return srv.count("/model.bin") >= 2 && strings.Contains(m.Failing(), "model.bin: checksum mismatch: want "+want+", got "+md5sum(payload)), m.Failing()
	})
	if st := staticStatus(m, "model.bin"); st.State != status.ResourceFailed || st.ChecksumOK {
		t.Errorf("status = %+v, want failed", st)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Prepare = %v, want cancelled", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "model.bin")); err == nil {
		t.Error("a file with the wrong checksum was put in place")
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

func TestRecheckFetchesAgainAfterChangeOnDisk(t *testing.T) {
	old := checkPeriodMinute
	checkPeriodMinute = 20 * time.Millisecond
	t.Cleanup(func() { checkPeriodMinute = old })
	srv := newServer(t)
	dir := t.TempDir()
	s := loadSpec(t, dir, `
resources:
  - {name: model.bin, urls: ["`+srv.file("/model.bin", payload)+`"], checksum: "`+sha256sum(payload)+`", check_period: 0d0h1m}
  - {name: data, urls: ["`+srv.file("/data.tar", tarBytes(t, good))+`"], extract: true, check_period: 0d0h1m}
containers: []
`)
	logs := &syncBuffer{}
	m := newManager(t, logs)
	if err := m.Prepare(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// Unchanged files are re-hashed but not fetched again.
	waitFor(t, "a few re-verifications", func() (bool, string) {
		return strings.Count(logs.String(), "resource re-verified") >= 4, logs.String()
	})
	if srv.count("/model.bin") != 1 || srv.count("/data.tar") != 1 {
		t.Fatalf("unchanged resources fetched again: %d, %d", srv.count("/model.bin"), srv.count("/data.tar"))
	}
	if err := os.WriteFile(filepath.Join(dir, "model.bin"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data/a.txt"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both fetched again", func() (bool, string) {
		return srv.count("/model.bin") == 2 && srv.count("/data.tar") == 2 &&
			staticStatus(m, "model.bin").State == status.ResourceReady && staticStatus(m, "data").State == status.ResourceReady, logs.String()
	})
	checkContent(t, filepath.Join(dir, "model.bin"), payload)
	checkGood(t, filepath.Join(dir, "data"), true)
	if n := strings.Count(logs.String(), "re-verification failed; fetching the resource again"); n != 2 {
		t.Errorf("re-verification events = %d, want one per resource", n)
	}
}
