package tests

// files: (docs/reference.md "Files"): written before the init
// containers, content substituted, from_file copied and never shown.

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

const fileSecret = "s3cr3t-VALUE-9f2c"

// filesSpec writes conf/app.ini from content, secrets/db.pass from the from_file
// secret, and other/linked.txt (absolute) where a symlink to victim waits; the
// init container appends what it sees of app.ini to init-saw. extra is more files.
func filesSpec(other, port, extra string) string {
	return `
instance: {vars: {PORT: "` + port + `"}}
files:
  - path: conf/app.ini
    content: |
      port = {PORT}
    mode: "0640"
  - path: secrets/db.pass
    from_file: ` + other + `/secret-src
    mode: "0400"
  - path: ` + other + `/linked.txt
    content: safe
` + extra + `
init_containers:
  - name: setup
    command: [sh, -c, 'cat {DIR}/conf/app.ini >> {DIR}/init-saw']
containers:
  - name: app
    command: [sleep, "60"]
`
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// Files are in place before the init container with their modes; a symlink at the
// target is replaced, not followed; the secret is in no render, status or log.
func TestFilesWrittenBeforeInit(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "secret-src"), []byte(fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(other, "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(other, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	tp := start(t, filesSpec(other, "8080", ""))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "init-saw")), ","); got != "port = 8080" {
		t.Errorf("the init container saw %q, want port = 8080", got)
	}
	if m := fileMode(t, filepath.Join(tp.dir, "conf/app.ini")); m != 0o640 {
		t.Errorf("conf/app.ini mode %v, want 0640", m)
	}
	secret := filepath.Join(tp.dir, "secrets/db.pass")
	if m := fileMode(t, secret); m != 0o400 {
		t.Errorf("secrets/db.pass mode %v, want 0400", m)
	}
	if b, _ := os.ReadFile(secret); string(b) != fileSecret+"\n" {
		t.Errorf("secrets/db.pass = %q, want the from_file bytes", b)
	}
	if b, _ := os.ReadFile(victim); string(b) != "victim" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if m := fileMode(t, filepath.Join(other, "linked.txt")); !m.IsRegular() {
		t.Errorf("linked.txt is %v, want a regular file in place of the symlink", m)
	}
	if left, _ := filepath.Glob(filepath.Join(tp.dir, "conf", ".*tend-file-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	out, _, code := runCLI(t, tp.dir, "render", filepath.Join(tp.dir, "spec.yaml"))
	if code != 0 || strings.Contains(out, fileSecret) || !strings.Contains(out, "from_file: "+other+"/secret-src") {
		t.Errorf("render (code %d) shows the secret or not its from_file:\n%s", code, out)
	}
	resp, err := tp.client().Get("http://tend/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), fileSecret) {
		t.Errorf("/v1/status shows the secret:\n%s", body)
	}
	if doc.Installed.Reason != status.ReasonPrepared {
		t.Errorf("installed = %+v", doc.Installed)
	}
	termAndWait(t, tp, 10*time.Second)
	if strings.Contains(tp.stdout.String()+tp.stderr.String(), fileSecret) {
		t.Errorf("tend's output shows the secret")
	}
}

// Bad files in a reload change nothing that runs and say why in reload_error; a
// good change of content re-prepares: the new file is in place before the init
// container runs again and the container starts again.
func TestFilesReload(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "secret-src"), []byte(fileSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	tp := start(t, filesSpec(other, "8080", ""))
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	pid := runningPid(t, doc, "app")

	bad := []struct{ name, spec, want string }{
		{"a path out of instance.dir", filesSpec(other, "8080", "  - {path: ../escape, content: x}"), `files[3].path: "../escape" is outside instance.dir`},
		{"content and from_file", filesSpec(other, "8080", "  - {path: both, content: x, from_file: y}"), "files[3]: has both content and from_file"},
		{"an unreadable from_file", filesSpec(other, "9090", "  - {path: gone, from_file: "+other+"/nope}"), "files[3].from_file: open " + other + "/nope"},
	}
	for _, b := range bad {
		writeSpec(t, tp, b.spec)
		post(t, tp, "/v1/reload")
		doc = tp.waitStatus(15*time.Second, b.name+" in reload_error", func(d status.Document) bool {
			return strings.Contains(d.ReloadError, b.want)
		})
		if p := runningPid(t, doc, "app"); p != pid || doc.State != status.InstanceRunning {
			t.Errorf("%s: app pid %d (was %d), instance %s", b.name, p, pid, doc.State)
		}
	}
	if got := lines(t, filepath.Join(tp.dir, "init-saw")); len(got) != 1 {
		t.Errorf("the init container ran again: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(tp.dir, "conf/app.ini")); string(b) != "port = 8080\n" {
		t.Errorf("conf/app.ini = %q after the failed reloads", b)
	}

	writeSpec(t, tp, filesSpec(other, "9090", ""))
	post(t, tp, "/v1/reload")
	doc = tp.waitStatus(15*time.Second, "app restarted", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return d.ReloadError == "" && d.State == status.InstanceRunning && c.State == status.Running && c.Pid != nil && *c.Pid != pid
	})
	if got := strings.Join(lines(t, filepath.Join(tp.dir, "init-saw")), ","); got != "port = 8080,port = 9090" {
		t.Errorf("the init containers saw %q, want port = 8080 then port = 9090", got)
	}
	termAndWait(t, tp, 10*time.Second)
}

// A from_file that is missing at start keeps installed False with the reason; once
// it appears, preparing goes on.
func TestFilesMissingFromFileKeepsNotInstalled(t *testing.T) {
	other := t.TempDir()
	tp := start(t, filesSpec(other, "8080", ""))
	doc := tp.waitStatus(15*time.Second, "installed False, FilesFailing", func(d status.Document) bool {
		return d.State == status.InstancePreparing && d.Installed.Reason == status.ReasonFilesFailing &&
			strings.Contains(d.Installed.Message, "files[1].from_file: open "+other+"/secret-src")
	})
	if _, err := os.Stat(filepath.Join(tp.dir, "init-saw")); err == nil {
		t.Errorf("the init container ran; installed = %+v", doc.Installed)
	}
	if err := os.WriteFile(filepath.Join(other, "secret-src"), []byte(fileSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && d.Installed.True()
	})
	termAndWait(t, tp, 10*time.Second)
}
