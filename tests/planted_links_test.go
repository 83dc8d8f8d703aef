package tests

// What a container cannot make tend do (docs/reference.md): a container running as
// nobody, owning instance.dir, replaces a directory or a secret source there with a
// symlink to a root-only place; the next reload must not make root write or read
// there.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// nobodyOwns gives instance.dir (dir) to nobody, who must also reach it, as a
// container's user may own it.
func nobodyOwns(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the container runs as nobody and tend as root")
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// rootOnlyDir is a directory only root may enter, holding secret (the content of a
// root-only file in it, "secret"); a leak would copy that text, a write add entries.
func rootOnlyDir(t *testing.T, secret string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// plantAndReload lets the container plant its links (it waits for the file go),
// waits until it has, then reloads the spec next.
func plantAndReload(t *testing.T, tp *tend, next string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(tp.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "planted"))
	writeSpec(t, tp, next)
	if _, errOut, code := runCLI(t, tp.dir, "reload"); code != 0 {
		t.Logf("tend reload: exit %d, %s", code, errOut)
	}
}

// plant is a container command: as nobody, once the test says go, run sh (the
// planting), mark it done, then sleep.
func plant(sh string) string {
	return `[sh, -c, 'while [ ! -e go ]; do sleep 0.05; done; if [ ! -e planted ]; then ` + sh + ` && touch planted; fi; exec sleep 60']`
}

// files: a reload that changes conf/app.ini after the container replaced conf with
// a symlink to a root-owned directory writes nothing there; installed says why.
func TestFilesAreNotWrittenThroughAPlantedDirectoryLink(t *testing.T) {
	victim := rootOnlyDir(t, "root only\n")
	specText := func(v string) string {
		return `
files:
  - {path: conf/app.ini, content: "v = ` + v + `"}
containers:
  - name: app
    user: nobody
    command: ` + plant("mv conf conf.old && ln -s "+victim+" conf") + `
`
	}
	tp := start(t, specText("1"))
	nobodyOwns(t, tp.dir)
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	plantAndReload(t, tp, specText("2"))
	doc := tp.waitStatus(15*time.Second, "the files error, or the file written", func(d status.Document) bool {
		_, err := os.Stat(filepath.Join(victim, "app.ini"))
		return err == nil || d.Installed.Reason == status.ReasonFilesFailing
	})
	if got := entries(t, victim); len(got) != 1 {
		t.Errorf("root wrote through the link: %s holds %v", victim, got)
	}
	want := filepath.Join(tp.dir, "conf") + " is a symlink leading out of the instance directory"
	if !strings.Contains(doc.Installed.Message, "files[0]") || !strings.Contains(doc.Installed.Message, want) {
		t.Errorf("installed = %+v; want files[0] and %q", doc.Installed, want)
	}
}

// log.file: a reload that rebuilds the container after it replaced its log directory
// with a symlink to a root-owned directory creates no log there; the reload fails
// naming the path and the old container runs on.
func TestLogFileIsNotOpenedThroughAPlantedDirectoryLink(t *testing.T) {
	victim := rootOnlyDir(t, "root only\n")
	specText := func(v string) string {
		return `
containers:
  - name: app
    user: nobody
    env: [{name: V, value: "` + v + `"}]
    log: {file: logs/evil.log}
    command: ` + plant("mv logs logs.old && ln -s "+victim+" logs") + `
`
	}
	tp := start(t, specText("1"))
	nobodyOwns(t, tp.dir)
	doc := tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	pid := runningPid(t, doc, "app")
	plantAndReload(t, tp, specText("2"))
	doc = tp.waitStatus(15*time.Second, "reload_error, or a new app", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return d.ReloadError != "" || (c.Pid != nil && *c.Pid != pid)
	})
	if got := entries(t, victim); len(got) != 1 {
		t.Errorf("root wrote through the link: %s holds %v", victim, got)
	}
	want := filepath.Join(tp.dir, "logs") + " is a symlink leading out of the instance directory"
	if !strings.Contains(doc.ReloadError, want) {
		t.Errorf("reload_error = %q; want %q", doc.ReloadError, want)
	}
	if p := runningPid(t, doc, "app"); p != pid {
		t.Errorf("app pid %d, was %d", p, pid)
	}
}

// Secret sources relative to instance.dir (env_files, value_from.file, from_file)
// replaced by links to a root-only file are not read: the reload fails naming them,
// and the secret is in no status, file or environment.
func TestSecretSourcesAreNotReadThroughPlantedLinks(t *testing.T) {
	const secret = "LEAKED=root-only-9d1e"
	victim := rootOnlyDir(t, secret+"\n")
	specText := func(v string, secrets bool, copyName string) string {
		env := `env: [{name: V, value: "` + v + `"}]`
		if secrets {
			env = "env_files: [app.env]\n" + `env: [{name: V, value: "` + v + `"}, {name: TOKEN, value_from: {file: token}}]`
		}
		return env + `
files:
  - {path: ` + copyName + `, from_file: src}
containers:
  - name: app
    user: nobody
    command: ` + plant("rm -f app.env token src && ln -s "+victim+"/secret app.env && ln -s "+victim+"/secret token && ln -s "+victim+"/secret src") + `
`
	}
	// The sources must exist before the spec that reads them: start with a stand-in.
	tp := start(t, "containers: [{name: app, command: [sleep, '60']}]")
	standIn := runningPid(t, tp.waitStatus(15*time.Second, "the stand-in running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	}), "app")
	for name, text := range map[string]string{"app.env": "A=1\n", "token": "t0k3n\n", "src": "copy me\n"} {
		if err := os.WriteFile(filepath.Join(tp.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeSpec(t, tp, specText("1", true, "copy"))
	if _, errOut, code := runCLI(t, tp.dir, "reload"); code != 0 {
		t.Fatalf("tend reload: exit %d, %s", code, errOut)
	}
	nobodyOwns(t, tp.dir)
	doc := tp.waitStatus(15*time.Second, "app running as nobody", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.State == status.Running && d.ReloadError == "" && c.Pid != nil && *c.Pid != standIn
	})
	pid := runningPid(t, doc, "app")

	// env_files and value_from.file: both named, neither read.
	plantAndReload(t, tp, specText("2", true, "copy"))
	doc = tp.waitStatus(15*time.Second, "reload_error, or a new app", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return d.ReloadError != "" || (c.Pid != nil && *c.Pid != pid)
	})
	for _, name := range []string{"app.env", "token"} {
		want := filepath.Join(tp.dir, name) + " is a symlink leading out of the instance directory"
		if !strings.Contains(doc.ReloadError, want) {
			t.Errorf("reload_error = %q; want %q", doc.ReloadError, want)
		}
	}

	// from_file: named, not copied (a change of files: reads it at the reload).
	writeSpec(t, tp, specText("3", false, "copy2"))
	if _, errOut, code := runCLI(t, tp.dir, "reload"); code != 0 {
		t.Logf("tend reload: exit %d, %s", code, errOut)
	}
	doc = tp.waitStatus(15*time.Second, "reload_error about from_file, or a new app", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return strings.Contains(d.ReloadError, "from_file") || (c.Pid != nil && *c.Pid != pid)
	})
	want := filepath.Join(tp.dir, "src") + " is a symlink leading out of the instance directory"
	if !strings.Contains(doc.ReloadError, want) {
		t.Errorf("reload_error = %q; want %q", doc.ReloadError, want)
	}

	if p := runningPid(t, doc, "app"); p != pid {
		t.Errorf("app pid %d, was %d: a reload went through", p, pid)
	}
	for _, name := range []string{"copy", "copy2"} {
		if b, _ := os.ReadFile(filepath.Join(tp.dir, name)); strings.Contains(string(b), "root-only") {
			t.Errorf("%s holds the root-only file: %q", name, b)
		}
	}
	resp, err := tp.client().Get("http://tend/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "root-only") {
		t.Errorf("/v1/status shows the secret:\n%s", body)
	}
	termAndWait(t, tp, 10*time.Second)
	if strings.Contains(tp.stdout.String()+tp.stderr.String(), "root-only") {
		t.Errorf("tend's output shows the secret")
	}
}

// An env_files line that is not KEY=VALUE is reported by file and line, never by its
// text: reload_error is served to anyone who can reach a listener.
func TestEnvFileErrorsDoNotShowTheLine(t *testing.T) {
	const line = "the-first-line-of-a-secret-4b7a"
	tp := start(t, "containers: [{name: app, command: [sleep, '60']}]")
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	if err := os.WriteFile(filepath.Join(tp.dir, "app.env"), []byte("# comment\n\n"+line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeSpec(t, tp, "env_files: [app.env]\ncontainers: [{name: app, command: [sleep, '60']}]\n")
	if _, errOut, code := runCLI(t, tp.dir, "reload"); code == 0 || strings.Contains(errOut, line) {
		t.Errorf("tend reload: exit %d, %s", code, errOut)
	}
	doc := tp.waitStatus(15*time.Second, "reload_error", func(d status.Document) bool { return d.ReloadError != "" })
	want := filepath.Join(tp.dir, "app.env") + ":3: want KEY=VALUE"
	if !strings.Contains(doc.ReloadError, want) || strings.Contains(doc.ReloadError, line) {
		t.Errorf("reload_error = %q; want %q and not the line", doc.ReloadError, want)
	}
	out, errOut, code := runCLI(t, tp.dir, "validate", filepath.Join(tp.dir, "spec.yaml"))
	if code == 0 || strings.Contains(out+errOut, line) || !strings.Contains(out+errOut, ":3: want KEY=VALUE") {
		t.Errorf("validate: exit %d, %s%s", code, out, errOut)
	}
	termAndWait(t, tp, 10*time.Second)
	if strings.Contains(tp.stdout.String()+tp.stderr.String(), line) {
		t.Errorf("tend's output shows the line")
	}
}

// dynamic_resources: storage_dir replaced by a symlink to a root-owned directory
// that holds a 1 of its own; the reload to revision 3 (which would
// evict revision 1) must not download into it nor remove its store/1.
func TestDynamicVersionsAreNotWrittenOrRemovedThroughAPlantedLink(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/v2": "v2", "/v3": "v3"})
	victim := rootOnlyDir(t, "root only\n")
	precious := filepath.Join(victim, "store", "1")
	if err := os.MkdirAll(filepath.Dir(precious), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(precious, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	specText := func(rev int) string {
		return fmt.Sprintf(`
dynamic_resources:
  - name: geo
    revision: %d
    urls: ["%s/v%d"]
    storage_dir: store
    destination: geo
    cached_revisions_count: 2
containers:
  - name: app
    user: nobody
    command: `+plant("mv store store.old && ln -s "+victim+"/store store")+`
`, rev, srv.URL, rev)
	}
	tp := start(t, specText(1))
	nobodyOwns(t, tp.dir)
	tp.waitStatus(15*time.Second, "geo 1 ready", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 1 && containerStatus(d, "app").State == status.Running
	})
	writeSpec(t, tp, specText(2))
	post(t, tp, "/v1/reload")
	tp.waitStatus(15*time.Second, "geo 2 ready", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return g.State == "ready" && g.ActiveRevision == 2
	})
	plantAndReload(t, tp, specText(3))
	doc := tp.waitStatus(15*time.Second, "geo failing, or revision 3 in place", func(d status.Document) bool {
		g := dynamicStatus(d, "geo")
		return (g.ActiveRevision == 3 && g.State == "ready") || strings.Contains(g.Reason, "leading out")
	})
	if b, err := os.ReadFile(precious); err != nil || string(b) != "precious" {
		t.Errorf("root removed or changed %s through the link: %q %v", precious, b, err)
	}
	if got := entries(t, filepath.Dir(precious)); len(got) != 1 {
		t.Errorf("root wrote through the link: %s holds %v", filepath.Dir(precious), got)
	}
	want := filepath.Join(tp.dir, "store") + " is a symlink leading out of the instance directory"
	if g := dynamicStatus(doc, "geo"); !strings.Contains(g.Reason, want) {
		t.Errorf("geo = %+v; want a reason with %q", g, want)
	}
}
