package tests

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// fileServer serves files from memory on loopback and counts requests per path.
type fileServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string]string
	hits  map[string]int
}

func newFileServer(t *testing.T, files map[string]string) *fileServer {
	fs := &fileServer{files: files, hits: map[string]int{}}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		fs.hits[r.URL.Path]++
		body, ok := fs.files[r.URL.Path]
		fs.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fileServer) count(path string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hits[path]
}

func md5of(s string) string {
	sum := md5.Sum([]byte(s))
	return "MD5:" + hex.EncodeToString(sum[:])
}

func resourceStatus(doc status.Document, name string) status.Resource {
	for _, r := range doc.Resources {
		if r.Name == name {
			return r
		}
	}
	return status.Resource{}
}

func writeSpec(t *testing.T, tp *tend, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(strings.ReplaceAll(text, "{DIR}", tp.dir)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A resource is in place, verified, before the first init container runs.
func TestResourceBeforeInitContainers(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/model.bin": "the model\n"})
	tp := start(t, `
resources:
  - {name: model.bin, urls: ["`+srv.URL+`/nope", "`+srv.URL+`/model.bin"], checksum: "`+md5of("the model\n")+`"}
init_containers:
  - name: first
    command: ["sh", "-c", "cp {DIR}/model.bin {DIR}/seen-by-init"]
containers:
  - name: app
    command: ["sleep", "60"]
`)
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if got := waitFile(t, time.Second, filepath.Join(tp.dir, "seen-by-init")); got != "the model\n" {
		t.Errorf("the init container saw %q", got)
	}
	r := resourceStatus(doc, "model.bin")
	if r.State != "ready" || !r.ChecksumOK || r.BytesDone != 10 || r.BytesTotal == nil || *r.BytesTotal != 10 {
		t.Errorf("resource status = %+v", r)
	}
	if srv.count("/nope") != 1 || srv.count("/model.bin") != 1 {
		t.Errorf("requests: nope=%d model=%d", srv.count("/nope"), srv.count("/model.bin"))
	}
	termAndWait(t, tp, 10*time.Second)
}

// A wrong checksum keeps installed False with the reason, starts nothing, puts no
// file in place, and init_timeout_ms ends preparing with exit 1.
func TestResourceWrongChecksumStartsNothing(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	srv := newFileServer(t, map[string]string{"/model.bin": "not the model"})
	want := "MD5:99300b5d1e10ec1d72cb45d023fe86ac"
	tp := start(t, `
instance: {init_timeout_ms: 4000}
resources:
  - {name: model.bin, urls: ["`+srv.URL+`/model.bin"], checksum: "`+want+`"}
init_containers:
  - name: first
    command: ["touch", "{DIR}/init-ran"]
containers:
  - name: app
    command: ["touch", "{DIR}/app-ran"]
`)
	doc := tp.waitStatus(10*time.Second, "installed False with the checksum reason", func(d status.Document) bool {
		return d.State == status.InstancePreparing && d.Installed.Status == "False" &&
			strings.Contains(d.Installed.Message, "model.bin: checksum mismatch: want "+want+", got "+md5of("not the model"))
	})
	if r := resourceStatus(doc, "model.bin"); r.ChecksumOK || r.State == "ready" || !strings.Contains(r.Reason, "checksum mismatch") {
		t.Errorf("resource status = %+v", r)
	}
	if code := tp.wait(15 * time.Second); code != 1 {
		t.Errorf("exit code = %d, want 1 after init_timeout_ms", code)
	}
	for _, f := range []string{"model.bin", "init-ran", "app-ran"} {
		if _, err := os.Lstat(filepath.Join(tp.dir, f)); err == nil {
			t.Errorf("%s exists", f)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tp.dir, ".model.bin.tend-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// A reload that leaves a resource unchanged does not fetch it; a changed resource is
// in place before the changed container starts again.
func TestResourceReload(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/a": "version a\n", "/b": "version b\n", "/keep": "keep\n"})
	specText := func(url, cmd string) string {
		return `
resources:
  - {name: keep.txt, urls: ["` + srv.URL + `/keep"]}
  - {name: model.txt, urls: ["` + srv.URL + url + `"]}
containers:
  - name: app
    command: ["sh", "-c", "cat {DIR}/model.txt >> {DIR}/seen; ` + cmd + `"]
`
	}
	tp := start(t, specText("/a", "exec sleep 60"))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	pid := *containerStatus(doc, "app").Pid
	// Reloaded once its program has begun (a stop before the first instruction, in
	// the v1 cgroup shim, ends the run before it reads).
	waitFor(t, 5*time.Second, "the first container to read the resource", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "seen"))
		return len(l) == 1, strings.Join(l, ",")
	})

	writeSpec(t, tp, specText("/b", "exec sleep 61"))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: HTTP %d", code)
	}
	tp.waitStatus(15*time.Second, "app restarted", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.State == status.Running && c.Pid != nil && *c.Pid != pid
	})
	waitFor(t, 5*time.Second, "the new container to read the resource", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "seen"))
		return len(l) == 2, strings.Join(l, ",")
	})
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "seen")), ","); got != "version a,version b" {
		t.Errorf("the containers saw %s, want version a then version b", got)
	}
	if srv.count("/keep") != 1 || srv.count("/b") != 1 {
		t.Errorf("requests: keep=%d (want 1, unchanged), b=%d (want 1)", srv.count("/keep"), srv.count("/b"))
	}
}

func dynamicStatus(doc status.Document, name string) status.DynamicResource {
	for _, r := range doc.DynamicResources {
		if r.Name == name {
			return r
		}
	}
	return status.DynamicResource{}
}

// geoSpec has one dynamic resource with storage and destination in shared (so a
// second tend finds them), a container that records its notify arguments, and a
// verify that fails for content "bad".
func geoSpec(srv *fileServer, shared string, rev int, path string) string {
	return fmt.Sprintf(`
dynamic_resources:
  - name: geo
    revision: %d
    urls: ["%s%s"]
    storage_dir: %s/store
    destination: %s/geo
    cached_revisions_count: 2
    verify: {exec: {command: ["sh", "-c", "! grep -q bad %s/geo"]}}
containers:
  - name: app
    command: ["sleep", "60"]
    notify_actions: [{exec: {command: ["sh", "-c", "echo \"$*\" >> {DIR}/notified", "notify"]}}]
`, rev, srv.URL, path, shared, shared, shared)
}

// A reload that changes only a dynamic resource switches the symlink, notifies the
// running container with the name, restarts nothing; a failed verify rolls back.
func TestResourceDynamicSwitchAndRollback(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/v2": "v2", "/bad": "bad"})
	shared := t.TempDir()
	tp := start(t, geoSpec(srv, shared, 1, "/v1"))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && dynamicStatus(d, "geo").State == "ready"
	})
	pid := *containerStatus(doc, "app").Pid
	if b, _ := os.ReadFile(filepath.Join(shared, "geo")); string(b) != "v1" {
		t.Fatalf("geo = %q, want v1", b)
	}

	writeSpec(t, tp, geoSpec(srv, shared, 2, "/v2"))
	post(t, tp, "/v1/reload")
	doc = tp.waitStatus(15*time.Second, "revision 2 active", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.Revision == 2 && g.ActiveRevision == 2 && g.State == "ready"
	})
	if b, _ := os.ReadFile(filepath.Join(shared, "geo")); string(b) != "v2" {
		t.Errorf("geo = %q, want v2", b)
	}
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "notified")), ","); got != "geo" {
		t.Errorf("notify arguments = %q, want geo", got)
	}
	if c := containerStatus(doc, "app"); c.Pid == nil || *c.Pid != pid || c.Restarts != 0 {
		t.Errorf("app was restarted: %+v", c)
	}

	writeSpec(t, tp, geoSpec(srv, shared, 3, "/bad"))
	post(t, tp, "/v1/reload")
	doc = tp.waitStatus(15*time.Second, "rolled back to 2", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.Revision == 3 && g.ActiveRevision == 2 && g.State == "rolled_back" && strings.HasPrefix(g.Reason, "verify failed")
	})
	if b, _ := os.ReadFile(filepath.Join(shared, "geo")); string(b) != "v2" {
		t.Errorf("geo = %q after the rollback, want v2", b)
	}
	waitFor(t, 5*time.Second, "three notifications", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "notified"))
		return len(l) == 3, strings.Join(l, ",")
	})
	if c := containerStatus(doc, "app"); c.Pid == nil || *c.Pid != pid {
		t.Errorf("app was restarted: %+v", c)
	}
}

// The state in storage_dir survives a restart of tend: the same revision is not
// downloaded again, a kept one with the same urls is reused without a request, and
// a failed verify still rolls back.
func TestResourceDynamicStateSurvivesRestart(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/v2": "v2", "/bad": "bad"})
	shared := t.TempDir()
	first := start(t, geoSpec(srv, shared, 1, "/v1"))
	first.waitStatus(15*time.Second, "geo ready", func(d status.Document) bool { return dynamicStatus(d, "geo").State == "ready" })
	writeSpec(t, first, geoSpec(srv, shared, 2, "/v2"))
	post(t, first, "/v1/reload")
	// Verified, not only active: a SIGTERM during the verify marks revision 2 as cut
	// short, and the next start keeps it off (as it should).
	first.waitStatus(15*time.Second, "revision 2 verified", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 2
	})
	first.signal(syscall.SIGTERM)
	if code := first.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code = %d", code)
	}

	second := start(t, geoSpec(srv, shared, 2, "/v2"))
	second.waitStatus(15*time.Second, "geo ready", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 2
	})
	if srv.count("/v2") != 1 {
		t.Errorf("requests for v2 = %d after a restart, want 1", srv.count("/v2"))
	}
	writeSpec(t, second, geoSpec(srv, shared, 3, "/bad"))
	post(t, second, "/v1/reload")
	second.waitStatus(15*time.Second, "rolled back to 2", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "rolled_back" && g.ActiveRevision == 2
	})
	// Revision 4 has revision 1's url set: reused, no request.
	writeSpec(t, second, geoSpec(srv, shared, 4, "/v1"))
	post(t, second, "/v1/reload")
	second.waitStatus(15*time.Second, "revision 4 active", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 4
	})
	if b, _ := os.ReadFile(filepath.Join(shared, "geo")); string(b) != "v1" || srv.count("/v1") != 1 {
		t.Errorf("geo = %q with %d requests for v1, want v1 reused", b, srv.count("/v1"))
	}
}

// Resources with the same checksum are identical (as in ISS): the second is copied
// from the first, not downloaded.
func TestResourceSameChecksumDownloadsOnce(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/a": "the model\n", "/b": "the model\n"})
	tp := start(t, `
resources:
  - {name: a.bin, urls: ["`+srv.URL+`/a"], checksum: "`+md5of("the model\n")+`"}
  - {name: b.bin, urls: ["`+srv.URL+`/b"], checksum: "`+md5of("the model\n")+`"}
containers:
  - name: app
    command: ["sleep", "60"]
`)
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if n := srv.count("/a") + srv.count("/b"); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	for _, name := range []string{"a.bin", "b.bin"} {
		if b, _ := os.ReadFile(filepath.Join(tp.dir, name)); string(b) != "the model\n" {
			t.Errorf("%s = %q", name, b)
		}
		if r := resourceStatus(doc, name); r.State != "ready" || !r.ChecksumOK {
			t.Errorf("%s status = %+v", name, r)
		}
	}
	// tend's log reaches stderr through a queue of its own: wait for the line.
	waitFor(t, 5*time.Second, "the copy in the log", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "with the same checksum"), tail(tp.stderr.String(), 2000)
	})
	termAndWait(t, tp, 10*time.Second)
}

// A reload that removes a dynamic resource runs the running containers'
// notify_actions with its name (seed 001: "on update, add or delete"), restarts
// nothing, and leaves the kept resource alone.
func TestResourceDynamicRemovedNotifies(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/geo": "geo", "/tz": "tz"})
	specText := func(withTZ bool) string {
		text := `
dynamic_resources:
  - {name: geo, revision: 1, urls: ["` + srv.URL + `/geo"], storage_dir: store-geo, destination: geo}
`
		if withTZ {
			text += `  - {name: tz, revision: 1, urls: ["` + srv.URL + `/tz"], storage_dir: store-tz, destination: tz}
`
		}
		return text + `
containers:
  - name: app
    command: ["sleep", "60"]
    notify_actions: [{exec: {command: ["sh", "-c", "echo \"$*\" >> {DIR}/notified", "notify"]}}]
`
	}
	tp := start(t, specText(true))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && dynamicStatus(d, "tz").State == "ready"
	})
	pid := *containerStatus(doc, "app").Pid

	writeSpec(t, tp, specText(false))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: HTTP %d", code)
	}
	waitFor(t, 10*time.Second, "a notification of the removal", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "notified"))
		return len(l) > 0, strings.Join(l, ",")
	})
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "notified")), ","); got != "tz" {
		t.Errorf("notify arguments = %q, want tz", got)
	}
	doc, _ = tp.status()
	if c := containerStatus(doc, "app"); c.Pid == nil || *c.Pid != pid || c.Restarts != 0 {
		t.Errorf("app was restarted: %+v", c)
	}
	if len(doc.DynamicResources) != 1 || doc.DynamicResources[0].Name != "geo" {
		t.Errorf("dynamic resources after the reload = %+v, want geo only", doc.DynamicResources)
	}
	termAndWait(t, tp, 10*time.Second)
}
