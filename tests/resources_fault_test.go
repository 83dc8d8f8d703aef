package tests

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// dynSpec has one dynamic resource "geo" kept in shared (so a second tend finds it)
// with the given verify command, and a container "app".
func dynSpec(srv *fileServer, shared string, rev int, path, verify string) string {
	return fmt.Sprintf(`
dynamic_resources:
  - name: geo
    revision: %d
    urls: ["%s%s"]
    storage_dir: %s/store
    destination: %s/geo
    cached_revisions_count: 3
    verify: {exec: {command: ["sh", "-c", %q]}}
containers:
  - name: app
    command: ["sleep", "60"]
`, rev, srv.URL, path, shared, shared, verify)
}

// badVerify fails when the active version says "bad".
func badVerify(shared string) string { return "! grep -q bad " + shared + "/geo" }

func readGeo(t *testing.T, shared string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shared, "geo"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stateActive is the active revision the state file in storage_dir records.
func stateActive(t *testing.T, storage string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(storage, ".tend-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Active struct {
			Revision int64 `json:"revision"`
		} `json:"active"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state file: %v\n%s", err, b)
	}
	return st.Active.Revision
}

func geoIs(state string, revision, active int64) func(status.Document) bool {
	return func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return string(g.State) == state && g.Revision == revision && g.ActiveRevision == active
	}
}

// A revision rolled back after a failed verify stays rejected across a restart of
// tend with the same spec: the verified revision stays active, status says
// rolled_back with the reason.
func TestResourceDynamicRollbackSurvivesRestart(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/bad": "bad"})
	shared := t.TempDir()
	first := start(t, dynSpec(srv, shared, 1, "/v1", badVerify(shared)))
	first.waitStatus(15*time.Second, "geo ready", geoIs("ready", 1, 1))
	writeSpec(t, first, dynSpec(srv, shared, 2, "/bad", badVerify(shared)))
	post(t, first, "/v1/reload")
	first.waitStatus(15*time.Second, "rolled back to 1", geoIs("rolled_back", 2, 1))
	termAndWait(t, first, 10*time.Second)

	second := start(t, dynSpec(srv, shared, 2, "/bad", badVerify(shared)))
	doc := second.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	g := dynamicStatus(doc, "geo")
	if g.State != "rolled_back" || g.ActiveRevision != 1 || !strings.HasPrefix(g.Reason, "verify failed") {
		t.Errorf("after a restart geo = %+v, want rolled_back to 1 with the verify failure", g)
	}
	if got := readGeo(t, shared); got != "v1" {
		t.Errorf("after a restart geo = %q, want v1", got)
	}
	// A new revision is taken as usual.
	srv.mu.Lock()
	srv.files["/v3"] = "v3"
	srv.mu.Unlock()
	writeSpec(t, second, dynSpec(srv, shared, 3, "/v3", badVerify(shared)))
	post(t, second, "/v1/reload")
	second.waitStatus(15*time.Second, "revision 3 active", geoIs("ready", 3, 3))
	termAndWait(t, second, 10*time.Second)
}

// A tend killed (or stopped) while verify runs: status showed the revision the
// symlink points at, and the next start goes back to the verified revision instead
// of activating the one that never passed verify.
func TestResourceDynamicKilledDuringVerify(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { testStoppedDuringVerify(t, sig) })
	}
}

func testStoppedDuringVerify(t *testing.T, sig syscall.Signal) {
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/v2": "v2"})
	shared := t.TempDir()
	fifo := filepath.Join(shared, "hold")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// Verify announces itself, then blocks on the fifo nobody writes.
	verify := fmt.Sprintf("echo > %s/verifying; read x < %s", shared, fifo)
	first := start(t, dynSpec(srv, shared, 1, "/v1", verify))
	first.waitStatus(15*time.Second, "geo ready", geoIs("ready", 1, 1))
	writeSpec(t, first, dynSpec(srv, shared, 2, "/v2", verify))
	post(t, first, "/v1/reload")
	waitFile(t, 15*time.Second, filepath.Join(shared, "verifying"))
	if got := readGeo(t, shared); got != "v2" {
		t.Fatalf("during verify geo = %q, want v2", got)
	}
	doc, _ := first.status()
	if g := dynamicStatus(doc, "geo"); g.ActiveRevision != 2 {
		t.Errorf("during verify active_revision = %d, want 2 (where the symlink points)", g.ActiveRevision)
	}
	first.signal(sig)
	first.wait(10 * time.Second)

	second := start(t, dynSpec(srv, shared, 2, "/v2", badVerify(shared)))
	doc = second.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	g := dynamicStatus(doc, "geo")
	if g.State != "rolled_back" || g.ActiveRevision != 1 || !strings.Contains(g.Reason, "verify of revision 2 did not finish") {
		t.Errorf("after a kill during verify geo = %+v, want rolled_back to 1", g)
	}
	if got := readGeo(t, shared); got != "v1" {
		t.Errorf("after a kill during verify geo = %q, want v1", got)
	}
	if a := stateActive(t, filepath.Join(shared, "store")); a != 1 {
		t.Errorf("state file says active %d, want 1", a)
	}
	termAndWait(t, second, 10*time.Second)
}

// A full disk while switching a dynamic resource leaves the symlink, the state file
// and status agreeing on the version that was active, whether the state cannot be
// written before the switch or after verify.
func TestResourceDynamicDiskFullDuringSwitch(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/v2": "v2"})
	shared := t.TempDir()
	storage := mountTmpfs(t, 256<<10)
	spec := func(rev int, path, verify string) string {
		return strings.Replace(dynSpec(srv, shared, rev, path, verify), shared+"/store", storage, 1)
	}
	tp := start(t, spec(1, "/v1", "true"))
	tp.waitStatus(15*time.Second, "geo ready", geoIs("ready", 1, 1))
	writeSpec(t, tp, spec(2, "/v2", "true"))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "revision 2 active", geoIs("ready", 2, 2))

	// Revision 3 reuses the kept version of revision 1: no download, only the state
	// to write, on a full disk.
	fill(t, filepath.Join(storage, "filler"))
	writeSpec(t, tp, spec(3, "/v1", "true"))
	post(t, tp, "/v1/reload")
	doc := tp.waitStatus(15*time.Second, "geo failed", func(d status.Document) bool {
		return dynamicStatus(d, "geo").State == "failed"
	})
	if g := dynamicStatus(doc, "geo"); g.ActiveRevision != 2 || !strings.Contains(g.Reason, "no space left on device") {
		t.Errorf("geo = %+v, want failed with active 2 and the reason", g)
	}
	if got := readGeo(t, shared); got != "v2" {
		t.Errorf("geo = %q, want v2 (the symlink must not move when the state cannot be written)", got)
	}
	if a := stateActive(t, storage); a != 2 {
		t.Errorf("state file says active %d, want 2", a)
	}

	// With room again, the same spec is retried.
	os.Remove(filepath.Join(storage, "filler"))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "revision 3 active", geoIs("ready", 3, 3))

	// The disk fills up while verify runs: the switch cannot be recorded and is
	// undone.
	writeSpec(t, tp, spec(4, "/v2", fmt.Sprintf("cat /dev/zero > %s/filler 2>/dev/null; true", storage)))
	post(t, tp, "/v1/reload")
	doc = tp.waitStatus(15*time.Second, "geo failed", func(d status.Document) bool {
		return dynamicStatus(d, "geo").State == "failed"
	})
	if g := dynamicStatus(doc, "geo"); g.ActiveRevision != 3 || !strings.Contains(g.Reason, "no space left on device") {
		t.Errorf("geo = %+v, want failed with active 3 and the reason", g)
	}
	if got := readGeo(t, shared); got != "v1" {
		t.Errorf("geo = %q, want v1 (revision 3) after the switch could not be recorded", got)
	}
	if a := stateActive(t, storage); a != 3 {
		t.Errorf("state file says active %d, want 3", a)
	}
	termAndWait(t, tp, 10*time.Second)
}

// A tend killed mid-download leaves a partial file; the next start removes it even
// when it wants another name or revision, and leaves every other file alone.
func TestResourcePartialDownloadsRemovedAtStart(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/small": "small"})
	release := make(chan struct{})
	defer close(release)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			fmt.Fprint(w, "small")
			return
		}
		w.Header().Set("Content-Length", "100000000")
		w.Write(make([]byte, 1<<20))
		w.(http.Flusher).Flush()
		select { // never finishes
		case <-release:
		case <-r.Context().Done():
		}
	})
	shared := t.TempDir()
	spec := func(body string) string {
		return "instance: {dir: " + shared + "}\n" + body + "containers: [{name: app, command: [sleep, '60']}]\n"
	}
	keep := []string{".mine.tend-part-x", "notes.tend-part-1", ".a.tend-partial-1", ".tend-part-1"}
	for _, name := range keep {
		if err := os.WriteFile(filepath.Join(shared, name), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listen := runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock"}}
	parts := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".*.tend-part-[0-9]*"))
		return m
	}
	killMidDownload := func(body, dir string) {
		tp := start(t, spec(body), listen)
		waitFor(t, 15*time.Second, "a partial download in "+dir, func() (bool, string) {
			for _, p := range parts(dir) {
				if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
					return true, ""
				}
			}
			return false, fmt.Sprint(parts(dir))
		})
		tp.signal(syscall.SIGKILL)
		tp.wait(10 * time.Second)
	}
	killMidDownload("resources: [{name: old.bin, urls: ['"+srv.URL+"/big']}]\n", shared)
	if p := parts(shared); len(p) != 1 {
		t.Fatalf("partial files after the first kill: %v", p)
	}
	// The next start wants another name: old.bin's partial file goes.
	store := filepath.Join(shared, "store")
	killMidDownload("dynamic_resources: [{name: geo, revision: 5, urls: ['"+srv.URL+"/big'], storage_dir: store, destination: geo}]\n", store)
	if p := parts(shared); len(p) != 0 {
		t.Errorf("partial download of old.bin left after a restart: %v", p)
	}
	if p := parts(store); len(p) != 1 {
		t.Fatalf("partial files after the second kill: %v", p)
	}
	// The next start wants revision 6: revision 5's partial file goes.

	tp := start(t, spec("resources: [{name: new.bin, urls: ['"+srv.URL+"/small']}]\n"+
		"dynamic_resources: [{name: geo, revision: 6, urls: ['"+srv.URL+"/small'], storage_dir: store, destination: geo}]\n"), listen)
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if left := append(parts(shared), parts(store)...); len(left) > 0 {
		t.Errorf("partial downloads left after a restart: %v", left)
	}
	for _, name := range keep {
		if _, err := os.Stat(filepath.Join(shared, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	termAndWait(t, tp, 10*time.Second)
}

// An archive rejected as unsafe is not fetched and unpacked again in a tight loop:
// status says failed with the reason and the next try is far off.
func TestResourceUnsafeArchiveBacksOff(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "../evil.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4})
	tw.Write([]byte("evil"))
	tw.Close()
	srv := newFileServer(t, map[string]string{"/bad.tar": buf.String()})
	tp := start(t, `
resources:
  - {name: data, urls: ["`+srv.URL+`/bad.tar"], checksum: "`+md5of(buf.String())+`", extract: true}
containers: []
`)
	tp.waitStatus(15*time.Second, "data failed", func(d status.Document) bool {
		r := resourceStatus(d, "data")
		return r.State == "failed" && strings.Contains(r.Reason, `unsafe archive: entry "../evil.txt" leads outside the target`)
	})
	var retry time.Duration
	waitFor(t, 10*time.Second, "the retry in the log", func() (bool, string) {
		for _, line := range strings.Split(tp.stderr.String(), "\n") {
			var ev struct {
				Message string  `json:"message"`
				RetryMs float64 `json:"retry_in_ms"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.Message == "fetching resource failed" {
				retry = time.Duration(ev.RetryMs * float64(time.Millisecond))
				return true, ""
			}
		}
		return false, tail(tp.stderr.String(), 500)
	})
	if retry < 5*time.Minute {
		t.Errorf("an unsafe archive is fetched again in %v, want minutes", retry)
	}
	if n := srv.count("/bad.tar"); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	termAndWait(t, tp, 10*time.Second)
}
