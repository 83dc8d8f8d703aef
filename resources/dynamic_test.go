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

// geoSpec is a spec with one dynamic resource "geo" at revision rev from path on
// srv, a container "app" whose notify action records its arguments, and a verify
// that fails when the active version says "bad".
func geoSpec(srv *server, rev int, path string, cached int) string {
	return fmt.Sprintf(`
dynamic_resources:
  - name: geo
    revision: %d
    urls: ["rbtorrent:abc", "%s%s"]
    storage_dir: store
    destination: geo
    cached_revisions_count: %d
    verify: {exec: {command: ["sh", "-c", "! grep -q bad {DIR}/geo"]}}
containers:
  - name: app
    command: ["sleep", "60"]
    env: [{name: WHO, value: app}]
    notify_actions: [{exec: {command: ["sh", "-c", "echo \"$WHO $*\" >> {DIR}/notified", "notify"]}}]
`, rev, srv.URL, path, cached)
}

func dynStatus(m *Manager) status.DynamicResource {
	_, ds := m.Status()
	if len(ds) == 0 {
		return status.DynamicResource{}
	}
	return ds[0]
}

func linkTarget(t *testing.T, dir string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(dir, "geo"))
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Join(dir, "store"), target)
	return rel
}

func notified(t *testing.T, dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "notified"))
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

func TestDynamicLifecycle(t *testing.T) {
	srv := newServer(t)
	for _, v := range []string{"v1", "v2", "bad", "v5", "bad6"} {
		body := v
		if v == "bad6" {
			body = "bad again"
		}
		srv.file("/"+v, []byte(body))
	}
	dir := t.TempDir()
	ctx := context.Background()
	m := newManager(t, &syncBuffer{})
	running := []string{"app"}

	// Start-up: fetched while preparing, no notify.
	if err := m.Prepare(ctx, loadSpec(t, dir, geoSpec(srv, 1, "/v1", 3))); err != nil {
		t.Fatal(err)
	}
	if got := linkTarget(t, dir); got != "1" {
		t.Fatalf("geo -> %s, want store/1", got)
	}
	if st := dynStatus(m); st.State != status.ResourceReady || st.ActiveRevision != 1 || st.Revision != 1 {
		t.Errorf("status = %+v", st)
	}
	if n := notified(t, dir); len(n) != 0 {
		t.Errorf("notified while preparing: %v", n)
	}

	// A new revision: downloaded, switched, notified with the name, verified.
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 2, "/v2", 3)), running)
	if got := linkTarget(t, dir); got != "2" {
		t.Fatalf("geo -> %s, want store/2", got)
	}
	if st := dynStatus(m); st.State != status.ResourceReady || st.ActiveRevision != 2 {
		t.Errorf("status = %+v", st)
	}
	if n := strings.Join(notified(t, dir), " "); n != "app geo |" {
		t.Errorf("notify arguments = %q, want \"app geo\"", n)
	}

	// A version that fails verify: switched back and notified again.
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 3, "/bad", 3)), running)
	if got := linkTarget(t, dir); got != "2" {
		t.Fatalf("after a failed verify geo -> %s, want store/2", got)
	}
	st := dynStatus(m)
	if st.State != status.ResourceRolledBack || st.ActiveRevision != 2 || st.Revision != 3 || !strings.HasPrefix(st.Reason, "verify failed: ") {
		t.Errorf("status = %+v, want rolled_back to 2", st)
	}
	if n := strings.Join(notified(t, dir), " "); n != "app geo | app geo | app geo |" {
		t.Errorf("notifications = %q, want three", n)
	}
	// An unrelated reload does not retry the rolled-back version.
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 3, "/bad", 3)), running)
	if srv.count("/bad") != 1 || len(notified(t, dir)) != 9 {
		t.Errorf("a rolled-back version was tried again")
	}

	// Revision 4 has the url set of the kept revision 1: reused without a request.
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 4, "/v1", 3)), running)
	if got := linkTarget(t, dir); got != "1" || srv.count("/v1") != 1 {
		t.Fatalf("geo -> %s with %d requests for v1, want store/1 reused", got, srv.count("/v1"))
	}
	if st := dynStatus(m); st.State != status.ResourceReady || st.ActiveRevision != 4 {
		t.Errorf("status = %+v", st)
	}

	// Revision 5 is a fourth version: the least recently active one that is neither
	// active nor previous (3, the failed one) is evicted.
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 5, "/v5", 3)), running)
	for path, want := range map[string]bool{"1": true, "2": true, "3": false, "5": true} {
		if _, err := os.Lstat(filepath.Join(dir, "store", path)); (err == nil) != want {
			t.Errorf("store/%s present = %v, want %v", path, err == nil, want)
		}
	}

	// A restart of tend: nothing is downloaded again and the rollback target is known.
	m.Close()
	m2 := newManager(t, &syncBuffer{})
	if err := m2.Prepare(ctx, loadSpec(t, dir, geoSpec(srv, 5, "/v5", 3))); err != nil {
		t.Fatal(err)
	}
	if srv.count("/v5") != 1 || linkTarget(t, dir) != "5" {
		t.Fatalf("after a restart: %d requests for v5, geo -> %s", srv.count("/v5"), linkTarget(t, dir))
	}
	m2.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 6, "/bad6", 3)), running)
	if got := linkTarget(t, dir); got != "5" {
		t.Errorf("after a restart, a failed verify leaves geo -> %s, want store/5", got)
	}
	if st := dynStatus(m2); st.State != status.ResourceRolledBack || st.ActiveRevision != 5 {
		t.Errorf("status = %+v, want rolled_back to 5", st)
	}
	if left := leftovers(t, filepath.Join(dir, "store")); len(left) > 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

func TestDynamicExtractAndFailedDownload(t *testing.T) {
	srv := newServer(t)
	srv.file("/geo.tgz", gzipBytes(tarBytes(t, good)))
	dir := t.TempDir()
	spec := func(rev int, path string) string {
		return fmt.Sprintf(`
dynamic_resources:
  - {name: geo, revision: %d, urls: ["%s%s"], storage_dir: store, destination: geo, extract: true}
containers: []
`, rev, srv.URL, path)
	}
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, spec(7, "/geo.tgz"))); err != nil {
		t.Fatal(err)
	}
	checkGood(t, filepath.Join(dir, "geo"), true)
	if fi, err := os.Lstat(filepath.Join(dir, "store", "7")); err != nil || !fi.IsDir() {
		t.Fatalf("store/7 = %v, %v; want a directory", fi, err)
	}
	// A new version that cannot be fetched: the active one stays, status says why.
	m.Reload(context.Background(), loadSpec(t, dir, spec(8, "/missing.tgz")), nil)
	if got := linkTarget(t, dir); got != "7" {
		t.Errorf("geo -> %s, want store/7", got)
	}
	if st := dynStatus(m); st.State != status.ResourceFailed || st.ActiveRevision != 7 || !strings.Contains(st.Reason, "HTTP 404") {
		t.Errorf("status = %+v", st)
	}
	// The same spec again retries a failed download.
	srv.file("/missing.tgz", gzipBytes(tarBytes(t, good)))
	m.Reload(context.Background(), loadSpec(t, dir, spec(8, "/missing.tgz")), nil)
	if st := dynStatus(m); st.State != status.ResourceReady || st.ActiveRevision != 8 || linkTarget(t, dir) != "8" {
		t.Errorf("status = %+v, geo -> %s", st, linkTarget(t, dir))
	}
}

func TestDynamicBadPlaces(t *testing.T) {
	srv := newServer(t)
	url := srv.file("/v1", []byte("v1"))
	tests := []struct {
		name, storage, want string
		setup               func(dir string)
	}{
		{"destination is a file", "store", "destination {DIR}/geo exists and is not a symlink; not overwriting it",
			func(dir string) { os.WriteFile(filepath.Join(dir, "geo"), []byte("mine"), 0o644) }},
		{"destination is a directory", "store", "destination {DIR}/geo exists and is not a symlink",
			func(dir string) { os.Mkdir(filepath.Join(dir, "geo"), 0o755) }},
		{"storage parent missing", "no/such/store", "storage_dir: mkdir {DIR}/no/such/store: no such file or directory", func(string) {}},
		{"storage is a file", "store", "storage_dir {DIR}/store is not a directory",
			func(dir string) { os.WriteFile(filepath.Join(dir, "store"), nil, 0o644) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			s := loadSpec(t, dir, `
dynamic_resources: [{name: geo, revision: 1, urls: ["`+url+`"], storage_dir: `+tc.storage+`, destination: geo}]
containers: []
`)
			m := newManager(t, &syncBuffer{})
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if err := m.Prepare(ctx, s); err == nil {
				t.Fatal("Prepare succeeded")
			}
			want := "geo: " + strings.ReplaceAll(tc.want, "{DIR}", dir)
			if got := m.Failing(); !strings.Contains(got, want) {
				t.Errorf("failing = %q, want %q", got, want)
			}
			if tc.name == "destination is a file" {
				if b, _ := os.ReadFile(filepath.Join(dir, "geo")); string(b) != "mine" {
					t.Errorf("the existing destination was overwritten: %q", b)
				}
			}
		})
	}
}

// A reload does not fetch an archive rejected as unsafe a second time: the same
// bytes would be rejected again.
func TestDynamicUnsafeArchiveNotRetriedByReload(t *testing.T) {
	srv := newServer(t)
	srv.file("/good.tgz", gzipBytes(tarBytes(t, good)))
	srv.file("/bad.tar", tarBytes(t, []entry{{name: "../evil.txt", body: "evil"}}))
	dir := t.TempDir()
	spec := func(rev int, path string) string {
		return fmt.Sprintf(`
dynamic_resources:
  - {name: geo, revision: %d, urls: ["%s%s"], storage_dir: store, destination: geo, extract: true}
containers: []
`, rev, srv.URL, path)
	}
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, spec(1, "/good.tgz"))); err != nil {
		t.Fatal(err)
	}
	// Also when another URL fails otherwise.
	m.Reload(context.Background(), loadSpec(t, dir, spec(2, `/bad.tar", "`+srv.URL+`/missing`)), nil)
	if st := dynStatus(m); st.State != status.ResourceFailed || st.ActiveRevision != 1 || !strings.Contains(st.Reason, "unsafe archive") {
		t.Errorf("status = %+v", st)
	}
	if n := srv.count("/bad.tar"); n != 1 {
		t.Errorf("requests for the unsafe archive = %d, want 1", n)
	}
}

// A reload cut short while verify runs (tend shutting down) rejects the revision
// like a kill would: it never passed verify, so the next start keeps the old one.
func TestDynamicVerifyCutShort(t *testing.T) {
	srv := newServer(t)
	srv.file("/v1", []byte("v1"))
	srv.file("/v2", []byte("v2"))
	dir := t.TempDir()
	spec := func(rev int, path string) string {
		return fmt.Sprintf(`
dynamic_resources:
  - name: geo
    revision: %d
    urls: ["%s%s"]
    storage_dir: store
    destination: geo
    verify: {exec: {command: ["sh", "-c", "echo > {DIR}/verifying; exec sleep 60"]}}
containers: []
`, rev, srv.URL, path)
	}
	m := newManager(t, &syncBuffer{})
	if err := m.Prepare(context.Background(), loadSpec(t, dir, spec(1, "/v1"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // cancels when verify has started (or after 10 s, failing below)
		defer cancel()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "verifying")); err == nil {
				return
			}
		}
	}()
	m.Reload(ctx, loadSpec(t, dir, spec(2, "/v2")), nil)
	want := "verify of revision 2 did not finish (tend stopped)"
	if st := dynStatus(m); st.State != status.ResourceRolledBack || st.ActiveRevision != 1 || st.Reason != want {
		t.Errorf("status = %+v, want rolled_back to 1: %s", st, want)
	}
	m.Close()
	m2 := newManager(t, &syncBuffer{})
	if err := m2.Prepare(context.Background(), loadSpec(t, dir, spec(2, "/v2"))); err != nil {
		t.Fatal(err)
	}
	if st := dynStatus(m2); st.State != status.ResourceRolledBack || st.ActiveRevision != 1 || st.Reason != want || linkTarget(t, dir) != "1" {
		t.Errorf("after a restart status = %+v, geo -> %s; want rolled_back to 1", st, linkTarget(t, dir))
	}
}

// A kept version is reused only while it still holds what was downloaded: with
// checksum EMPTY: (the usual DRU spec) a storage_dir/1 changed on disk was reused for
// a later revision with the same urls. Now it is fetched again, and the same holds
// for the active version at a restart of tend.
func TestDynamicTamperedKeptVersionIsFetchedAgain(t *testing.T) {
	srv := newServer(t)
	srv.file("/v1", []byte("the real v1\n"))
	srv.file("/v2", []byte("v2\n"))
	dir := t.TempDir()
	ctx := context.Background()
	m := newManager(t, &syncBuffer{})
	running := []string{"app"}
	if err := m.Prepare(ctx, loadSpec(t, dir, geoSpec(srv, 1, "/v1", 3))); err != nil {
		t.Fatal(err)
	}
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 2, "/v2", 3)), running)
	if got := linkTarget(t, dir); got != "2" {
		t.Fatalf("geo -> %s, want store/2", got)
	}
	// Someone changes the kept version 1 (same size, other bytes).
	if err := os.WriteFile(filepath.Join(dir, "store", "1"), []byte("the fake v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 3, "/v1", 3)), running)
	if n := srv.count("/v1"); n != 2 {
		t.Errorf("requests for v1 = %d, want 2 (the changed kept version fetched again)", n)
	}
	checkContent(t, filepath.Join(dir, "geo"), []byte("the real v1\n"))
	if st := dynStatus(m); st.State != status.ResourceReady || st.ActiveRevision != 3 {
		t.Errorf("status = %+v", st)
	}

	// The active version changed while tend was not running: start-up fetches it again.
	m.Close()
	target, err := os.Readlink(filepath.Join(dir, "geo"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("the fake v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m2 := newManager(t, &syncBuffer{})
	if err := m2.Prepare(ctx, loadSpec(t, dir, geoSpec(srv, 3, "/v1", 3))); err != nil {
		t.Fatal(err)
	}
	if n := srv.count("/v1"); n != 3 {
		t.Errorf("requests for v1 after a restart = %d, want 3", n)
	}
	checkContent(t, filepath.Join(dir, "geo"), []byte("the real v1\n"))
	// An intact kept version is still reused without a request.
	m2.Reload(ctx, loadSpec(t, dir, geoSpec(srv, 4, "/v2", 3)), running)
	if n := srv.count("/v2"); n != 1 || linkTarget(t, dir) != "2" {
		t.Errorf("intact version 2: %d requests, geo -> %s; want 1 and store/2", n, linkTarget(t, dir))
	}
}
