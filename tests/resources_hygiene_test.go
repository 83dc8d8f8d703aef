package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A resource dropped from the spec is deleted at the reload's re-prepare, a cached
// one moves to .tend/cache, and a later spec that names it again takes it from
// there without a request: the container reads the same bytes.
func TestResourceRemovedDeletedOrCached(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/model": "the model\n", "/conf": "conf\n"})
	specText := func(resources string) string {
		return "resources:\n" + resources + `containers:
  - name: app
    command: ["sh", "-c", "cat {DIR}/model.bin >> {DIR}/seen 2>/dev/null; exec sleep 60"]
`
	}
	both := `  - {name: model.bin, urls: ["` + srv.URL + `/model"], cached: true}
  - {name: conf.txt, urls: ["` + srv.URL + `/conf"]}
`
	tp := start(t, specText(both))
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	// Reloaded once the first run has read it (a stop before cat ran would lose the line).
	waitFor(t, 5*time.Second, "the first container to read model.bin", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "seen"))
		return len(l) == 1, strings.Join(l, ",")
	})
	writeSpec(t, tp, specText("  []\n"))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "re-prepared without resources", func(d status.Document) bool {
		return d.State == status.InstanceRunning && len(d.Resources) == 0 && containerStatus(d, "app").State == status.Running
	})
	for _, name := range []string{"model.bin", "conf.txt"} {
		if _, err := os.Lstat(filepath.Join(tp.dir, name)); err == nil {
			t.Errorf("%s is still in instance.dir", name)
		}
	}
	cached, _ := filepath.Glob(filepath.Join(tp.dir, ".tend", "cache", "*.json"))
	if len(cached) != 1 {
		t.Errorf("cache entries = %v, want model.bin's", cached)
	}

	writeSpec(t, tp, specText(both))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "model.bin back", func(d status.Document) bool {
		return resourceStatus(d, "model.bin").State == "ready" && containerStatus(d, "app").State == status.Running
	})
	waitFor(t, 5*time.Second, "the container to read model.bin", func() (bool, string) {
		l := lines(t, filepath.Join(tp.dir, "seen"))
		return len(l) == 2, strings.Join(l, ",")
	})
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "seen")), ","); got != "the model,the model" {
		t.Errorf("the container read %q", got)
	}
	if m, c := srv.count("/model"), srv.count("/conf"); m != 1 || c != 2 {
		t.Errorf("requests: model %d (want 1: from the cache), conf %d (want 2)", m, c)
	}
}

// size is checked against the free space of instance.dir's filesystem before any
// download: on a full disk the resource fails with InsufficientDisk, installed is
// False with that reason, and the server gets no request; once space is freed it is
// fetched.
func TestResourceSizeInsufficientDisk(t *testing.T) {
	disk := mountTmpfs(t, 1<<20)
	filler := filepath.Join(disk, "filler")
	if err := os.WriteFile(filler, make([]byte, 900<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newFileServer(t, map[string]string{"/model": strings.Repeat("m", 300<<10)})
	tp := start(t, `
instance: {dir: `+disk+`}
resources:
  - {name: model.bin, urls: ["`+srv.URL+`/model"], size: 512Ki}
containers:
  - {name: app, command: [sleep, "60"]}
`, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock"}})
	doc := tp.waitStatus(15*time.Second, "model.bin failed for the disk", func(d status.Document) bool {
		r := resourceStatus(d, "model.bin")
		return r.State == "failed" && strings.HasPrefix(r.Reason, "InsufficientDisk") && d.Installed.Reason == status.ReasonInsufficientDisk
	})
	if doc.Installed.True() || !strings.Contains(doc.Installed.Message, "model.bin") {
		t.Errorf("installed = %+v, want False naming model.bin", doc.Installed)
	}
	if n := srv.count("/model"); n != 0 {
		t.Errorf("requests = %d before there was space, want 0", n)
	}
	if c := containerStatus(doc, "app"); c.State != status.Waiting {
		t.Errorf("app is %s, want waiting", c.State)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(30*time.Second, "model.bin fetched once there is space", func(d status.Document) bool {
		return resourceStatus(d, "model.bin").State == "ready" && d.Installed.True() && containerStatus(d, "app").State == status.Running
	})
	if n := srv.count("/model"); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

// Resources with the same uuid are the same content: one request for all of them.
func TestResourceSameUUIDFetchedOnce(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/a": "starter\n", "/b": "starter\n"})
	tp := start(t, `
resources:
  - {name: start1, urls: ["`+srv.URL+`/a"], uuid: iss_hook_start_mollari-1.0}
  - {name: start2, urls: ["`+srv.URL+`/b"], uuid: iss_hook_start_mollari-1.0}
containers:
  - {name: app, command: [sh, -c, "cat {DIR}/start1 {DIR}/start2 > {DIR}/seen; exec sleep 60"]}
`)
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if got := waitFile(t, 5*time.Second, filepath.Join(tp.dir, "seen")); got != "starter\nstarter\n" && got != "" {
		t.Errorf("app read %q", got)
	}
	if n := srv.count("/a") + srv.count("/b"); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	for _, name := range []string{"start1", "start2"} {
		if b, _ := os.ReadFile(filepath.Join(tp.dir, name)); string(b) != "starter\n" {
			t.Errorf("%s = %q", name, b)
		}
	}
}
