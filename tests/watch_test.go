package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// Log messages of the watcher (tend runs with --log-level debug in tests).
const (
	watchReloading = `"message":"the spec file changed; reloading"`
	watchUnchanged = `"message":"the spec file's directory changed, its content did not"`
)

func revisionOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:6])
}

// renameOver replaces path with content the way editors save: a new file renamed
// over the old one.
func renameOver(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// configMapSwap does what the kubelet does to a ConfigMap volume: the new content in
// a new timestamped directory, then the "..data" symlink renamed to point at it.
func configMapSwap(t *testing.T, dir, version, content string) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_11_24_"+version)
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "spec.yaml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestWatch: with --watch (here TEND_WATCH) a change of the spec file's content
// reloads, whether the file is renamed over or swapped through a ConfigMap's
// "..data" symlink; a touch or the same content does not; an invalid spec is a
// reload_error.
func TestWatch(t *testing.T) {
	v1 := "containers:\n  - {name: a, command: sleep 1000}\n"
	tp := start(t, v1, runOpts{env: []string{"TEND_WATCH=true"}})
	path := filepath.Join(tp.dir, "spec.yaml")
	doc := tp.waitStatus(10*time.Second, "a running", func(d status.Document) bool {
		return containerStatus(d, "a").State == status.Running
	})
	pidA := *containerStatus(doc, "a").Pid
	count := func(msg string) int { return strings.Count(tp.stderr.String(), msg) }
	waitCount := func(msg string, n int) {
		t.Helper()
		waitFor(t, 10*time.Second, msg, func() (bool, string) { return count(msg) >= n, tail(tp.stderr.String(), 2000) })
	}

	// A touch: the directory changes, the content does not; no reload.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	waitCount(watchUnchanged, 1)
	if n := count(watchReloading); n != 0 {
		t.Fatalf("a touch reloaded (%d reloads)", n)
	}

	// Renamed over with a new container: a reload within a second (generous bound
	// here: the machine is loaded), the unchanged container untouched.
	v2 := v1 + "  - {name: b, command: sleep 1000}\n"
	changed := time.Now()
	renameOver(t, path, v2)
	doc = tp.waitStatus(10*time.Second, "revision of v2 with b running", func(d status.Document) bool {
		return d.Revision == revisionOf(v2) && containerStatus(d, "b").State == status.Running
	})
	// The promise is a second; the bound is generous for a loaded machine and still
	// catches a debounce that waits for seconds.
	if took := time.Since(changed); took > 3*time.Second {
		t.Errorf("rename-over applied %v after the change, want within a second or so", took)
	} else {
		t.Logf("rename-over applied %v after the change", took.Round(time.Millisecond))
	}
	if p := containerStatus(doc, "a").Pid; p == nil || *p != pidA {
		t.Errorf("a was restarted by the reload: pid %v, want %d", p, pidA)
	}

	// The file becomes a ConfigMap volume's symlink with the same content: no reload.
	unchanged := count(watchUnchanged)
	configMapSwap(t, tp.dir, "01", v2)
	if err := os.Symlink("..data/spec.yaml", path+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	waitCount(watchUnchanged, unchanged+1)
	if n := count(watchReloading); n != 1 {
		t.Fatalf("the same content through a symlink reloaded: %d reloads, want 1", n)
	}

	// The kubelet's update: "..data" swapped to a new directory.
	v3 := "containers:\n  - {name: a, command: sleep 1000}\n  - {name: c, command: sleep 1000}\n"
	changed = time.Now()
	configMapSwap(t, tp.dir, "02", v3)
	tp.waitStatus(10*time.Second, "revision of v3 with c running and b gone", func(d status.Document) bool {
		return d.Revision == revisionOf(v3) && containerStatus(d, "c").State == status.Running && containerStatus(d, "b").Name == ""
	})
	t.Logf("..data swap applied %v after the change", time.Since(changed).Round(time.Millisecond))

	// An invalid spec changes nothing and shows as reload_error.
	configMapSwap(t, tp.dir, "03", "containers:\n  - {name: a, command: sleep 1000, bogus: 1}\n")
	doc = tp.waitStatus(10*time.Second, "reload_error", func(d status.Document) bool { return d.ReloadError != "" })
	if !strings.Contains(doc.ReloadError, "bogus") || doc.Revision != revisionOf(v3) {
		t.Errorf("invalid spec: reload_error %q, revision %s; want the error naming bogus and revision %s", doc.ReloadError, doc.Revision, revisionOf(v3))
	}
	// Events are handled in order, so by now the touch and the same-content swap have
	// certainly been looked at: three reloads (v2, v3, the invalid one), no more. tend's
	// log reaches stderr through a queue of its own: wait for the third line.
	waitCount(watchReloading, 3)
	if n := count(watchReloading); n != 3 {
		t.Errorf("%d reloads, want 3 (v2, v3, the invalid spec)", n)
	}
	termAndWait(t, tp, 20*time.Second)
}

// A spec that is a symlink into another directory reloads when the file there is
// edited in place or renamed over (the events are in that directory, not the spec's).
func TestWatchSymlinkIntoAnotherDirectory(t *testing.T) {
	tp := start(t, "containers: []\n", runOpts{env: []string{"TEND_WATCH=true"}})
	real := filepath.Join(tp.dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(real, "spec.yaml")
	v1 := "containers:\n  - {name: a, command: sleep 1000}\n"
	if err := os.WriteFile(target, []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(tp.dir, "spec.yaml")
	if err := os.Symlink("real/spec.yaml", path+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil { // an event in the spec's directory
		t.Fatal(err)
	}
	tp.waitStatus(10*time.Second, "v1 through the symlink", func(d status.Document) bool {
		return d.Revision == revisionOf(v1) && containerStatus(d, "a").State == status.Running
	})

	// Edited in place in its own directory.
	v2 := v1 + "  - {name: b, command: sleep 1000}\n"
	if err := os.WriteFile(target, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(10*time.Second, "v2 edited in place", func(d status.Document) bool {
		return d.Revision == revisionOf(v2) && containerStatus(d, "b").State == status.Running
	})

	// Renamed over there, as editors and sed -i save.
	v3 := v1 + "  - {name: c, command: sleep 1000}\n"
	renameOver(t, target, v3)
	tp.waitStatus(10*time.Second, "v3 renamed over", func(d status.Document) bool {
		return d.Revision == revisionOf(v3) && containerStatus(d, "c").State == status.Running
	})
	termAndWait(t, tp, 20*time.Second)
}
