package tests

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// webPid is the pid of the container web, 0 when it has none.
func webPid(d status.Document) int {
	for _, c := range d.Containers {
		if c.Name == "web" && c.Pid != nil {
			return *c.Pid
		}
	}
	return 0
}

// A revision's static resources are fetched into its store when it is installed,
// while the active revision runs untouched: an install with activate: manual has
// fetched its resource into .tend/revisions/ID/ and changed nothing in place; one
// whose fetch fails is InstallFailed naming the resource, with nothing running
// touched; a revision whose resource has a checksum the instance already has
// fetches nothing, at install or at activation; activating the first one later
// fetches nothing either.
func TestRevisionInstallFetchesIntoItsStore(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/a.bin": "version a\n", "/b.bin": "version b\n", "/other.bin": "version a\n"})
	specOf := func(id, activate, name, file, content string) string {
		return `instance: {revision: ` + id + `, activate: ` + activate + `}
resources:
  - {name: ` + name + `, urls: ["` + srv.URL + `/` + file + `"], checksum: "` + md5of(content) + `"}
containers:
  - name: web
    command: [sh, -c, "cat ` + name + ` > seen; exec sleep 1000"]
    readiness_probe: {exec: {command: test -s seen}, period: 50ms, initial_delay: 0s}
`
	}
	tp := start(t, specOf("v1", "auto", "model.bin", "a.bin", "version a\n"))
	d := tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() && webPid(d) != 0 })
	pid := webPid(d)
	inPlace := func() string {
		b, _ := os.ReadFile(filepath.Join(tp.dir, "model.bin"))
		return string(b)
	}
	untouched := func(when string) {
		t.Helper()
		d, _ := tp.status()
		if d.Revision != "v1" || !d.Ready.True() || webPid(d) != pid || inPlace() != "version a\n" {
			t.Errorf("%s: revision %s, ready %v, web pid %d (was %d), model.bin %q; want v1 running untouched", when, d.Revision, d.Ready.True(), webPid(d), pid, inPlace())
		}
	}

	// Installed, not activated: the store has the resource, nothing in place changed.
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", specOf("v2", "manual", "model.bin", "b.bin", "version b\n"))); code != 0 {
		t.Fatalf("tend apply v2 (manual): exit %d:\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, ".tend/revisions/v2/resources/model.bin")); string(got) != "version b\n" || srv.count("/b.bin") != 1 {
		t.Errorf("after installing v2: its store holds %q, b.bin fetched %d times; want version b, fetched once", got, srv.count("/b.bin"))
	}
	untouched("after installing v2")

	// A fetch that fails: InstallFailed naming the resource, nothing touched.
	out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v3.yaml", specOf("v3", "auto", "model.bin", "missing.bin", "never\n")))
	if code == 0 || !strings.Contains(out, "install failed") || !strings.Contains(out, `"model.bin"`) {
		t.Errorf("tend apply of a revision whose resource cannot be fetched: exit %d:\n%s\nwant a failure naming the resource", code, out)
	}
	d, _ = tp.status()
	if v3 := revisionEntry(d, "v3"); v3.Installed.Status != "False" || v3.Installed.Reason != status.ReasonInstallFailed || !strings.Contains(v3.Installed.Message, "model.bin") || v3.Active {
		t.Errorf("v3 = %+v; want installed False InstallFailed naming model.bin, inactive", v3)
	}
	if d.ReloadError == "" {
		t.Errorf("a failed install leaves reload_error empty")
	}
	untouched("after the failed install of v3")

	// The same checksum as the resource in place: nothing fetched, at install or at
	// activation.
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v4.yaml", specOf("v4", "auto", "other.bin", "other.bin", "version a\n"))); code != 0 {
		t.Fatalf("tend apply v4: exit %d:\n%s", code, out)
	}
	tp.waitStatus(10*time.Second, "v4 active and ready", func(d status.Document) bool { return d.Revision == "v4" && d.Ready.True() })
	if n := srv.count("/other.bin"); n != 0 {
		t.Errorf("v4's resource has the checksum of one in place, yet it was fetched %d times", n)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, "other.bin")); string(got) != "version a\n" {
		t.Errorf("other.bin = %q", got)
	}

	// v2 from its store: b.bin is not fetched again.
	if out, code := tendCtl(t, tp, "activate", "v2"); code != 0 {
		t.Fatalf("tend activate v2: exit %d:\n%s", code, out)
	}
	if inPlace() != "version b\n" || srv.count("/b.bin") != 1 {
		t.Errorf("after activating v2: model.bin %q, b.bin fetched %d times; want version b, once", inPlace(), srv.count("/b.bin"))
	}
}

// tarOf is a tar archive of one file.
func tarOf(t *testing.T, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	return buf.String()
}

// An extracted resource is kept in the revision's store as its archive: going back
// to the revision unpacks it from there and fetches nothing.
func TestRevisionArchiveKeptInItsStore(t *testing.T) {
	archive := tarOf(t, "hello.txt", "hello from v2\n")
	srv := newFileServer(t, map[string]string{"/d.tar": archive})
	plain := func(id string) string {
		return `instance: {revision: ` + id + `}
containers:
  - name: web
    command: [sh, -c, "touch seen; exec sleep 1000"]
    env: [{name: V, value: ` + id + `}]
    readiness_probe: {exec: {command: test -f seen}, period: 50ms, initial_delay: 0s}
`
	}
	tp := start(t, plain("v1"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	v2 := `instance: {revision: v2}
resources:
  - {name: data, urls: ["` + srv.URL + `/d.tar"], checksum: "` + md5of(archive) + `", extract: true}
containers:
  - name: web
    command: [sh, -c, "cat data/hello.txt > seen; exec sleep 1000"]
    readiness_probe: {exec: {command: test -s seen}, period: 50ms, initial_delay: 0s}
`
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", v2)); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v3.yaml", plain("v3"))); code != 0 {
		t.Fatalf("tend apply v3: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(tp.dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("data/ is still in place under v3: %v", err)
	}
	if out, code := tendCtl(t, tp, "activate", "v2"); code != 0 {
		t.Fatalf("tend activate v2: exit %d:\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, "data/hello.txt")); string(got) != "hello from v2\n" || srv.count("/d.tar") != 1 {
		t.Errorf("after activating v2 again: data/hello.txt %q, d.tar fetched %d times; want its content, fetched once", got, srv.count("/d.tar"))
	}
}

// An init container with at: install runs when its revision is installed, in the
// revision's store ({REVISION_DIR}, also its working directory and $REVISION_DIR),
// while the active revision keeps serving; the activation that follows runs the
// init containers with at: activate and not it again.
func TestRevisionInitContainerAtInstall(t *testing.T) {
	web := `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env", "notify"]
    sockets: [{listen: "{ADDR}"}]
    readiness_probe: {notify: {}}
`
	tp, addr := startSockets(t, "instance: {revision: v1}\n"+web)
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	v1pid, err := ask(addr)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	v2 := `instance: {revision: v2}
init_containers:
  - name: unpack
    at: install
    command: ["sh", "-c", "pwd > where; echo $REVISION_DIR >> where; echo run >> {REVISION_DIR}/runs; touch {DIR}/install-began; while [ ! -e {DIR}/go-on ]; do sleep 0.02; done"]
  - name: migrate
    command: ["sh", "-c", "echo run >> {DIR}/activate-runs"]
` + strings.NewReplacer("{SELF}", self, "{ADDR}", addr).Replace(web)
	apply := exec.Command(tendBin, "apply", writeFile(t, tp, "v2.yaml", v2), "--listen", "unix:"+tp.sock)
	var out bytes.Buffer
	apply.Stdout, apply.Stderr = &out, &out
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "install-began"))
	// The install is under way: v1 serves, v2 is Installing.
	for i := 0; i < 20; i++ {
		if pid, err := ask(addr); err != nil || pid != v1pid {
			t.Fatalf("during the install: answered by %d (%v), want v1's process %d", pid, err, v1pid)
		}
	}
	d, _ := tp.status()
	if v2 := revisionEntry(d, "v2"); d.Revision != "v1" || v2.Installed.Reason != status.ReasonInstalling {
		t.Errorf("during the install: revision %s, v2 installed %+v; want v1 active, v2 Installing", d.Revision, v2.Installed)
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := apply.Wait(); err != nil {
		t.Fatalf("tend apply v2: %v:\n%s", err, out.String())
	}
	tp.waitStatus(10*time.Second, "v2 active and ready", func(d status.Document) bool { return d.Revision == "v2" && d.Ready.True() })
	store := filepath.Join(tp.dir, ".tend/revisions/v2")
	if got, _ := os.ReadFile(filepath.Join(store, "where")); string(got) != store+"\n"+store+"\n" {
		t.Errorf("the install's init container ran in %q; want the store %s (pwd and $REVISION_DIR)", got, store)
	}
	if got, _ := os.ReadFile(filepath.Join(store, "runs")); string(got) != "run\n" {
		t.Errorf("the at: install init container ran %q; want once, at install", got)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, "activate-runs")); string(got) != "run\n" {
		t.Errorf("the at: activate init container ran %q; want once, at activation", got)
	}
}

// Installs run one at a time and the newest waiting one wins: with v2 installing
// and v3 then v4 given meanwhile, v3 is dropped (its tend apply fails saying it was
// superseded by v4, and it is not listed) and v4 is installed next.
func TestRevisionNewestWaitingInstallWins(t *testing.T) {
	specOf := func(id, initCmd string) string {
		s := "instance: {revision: " + id + "}\n"
		if initCmd != "" {
			s += "init_containers:\n  - {name: slow, at: install, command: [\"sh\", \"-c\", \"" + initCmd + "\"]}\n"
		}
		return s + `containers:
  - name: web
    command: [sh, -c, "touch seen; exec sleep 1000"]
    env: [{name: V, value: ` + id + `}]
    readiness_probe: {exec: {command: test -f seen}, period: 50ms, initial_delay: 0s}
`
	}
	tp := start(t, specOf("v1", ""))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	applyBg := func(id, spec string, flags ...string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(tendBin, append([]string{"apply", writeFile(t, tp, id+".yaml", spec), "--listen", "unix:" + tp.sock}, flags...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	queued := func(id string) func() (bool, string) {
		return func() (bool, string) {
			return strings.Contains(tp.stderr.String(), `"revision":"`+id+`","time"`) && strings.Contains(tp.stderr.String(), "apply queued behind the reload in progress"), ""
		}
	}
	// v2 is active only until v4 takes over: its apply ends saying so, or sees it
	// ready first.
	a2, out2 := applyBg("v2", specOf("v2", "touch {DIR}/v2-began; while [ ! -e {DIR}/go-on ]; do sleep 0.02; done"))
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "v2-began"))
	a3, out3 := applyBg("v3", specOf("v3", "touch {DIR}/v3-ran"))
	waitFor(t, 10*time.Second, "v3 waiting", queued("v3"))
	a4, out4 := applyBg("v4", specOf("v4", ""))
	waitFor(t, 10*time.Second, "v4 waiting", queued("v4"))
	os.WriteFile(filepath.Join(tp.dir, "go-on"), nil, 0o644)

	if err := a3.Wait(); err == nil || !strings.Contains(out3.String(), "superseded before its install began by revision v4") {
		t.Errorf("tend apply v3: %v:\n%s\nwant a failure saying v4 superseded it", err, out3)
	}
	if err := a2.Wait(); err != nil && !strings.Contains(out2.String(), "revision v2 was activated, then revision v4 replaced it") {
		t.Errorf("tend apply v2: %v:\n%s\nwant success, or a failure saying v4 replaced it", err, out2)
	}
	if err := a4.Wait(); err != nil {
		t.Errorf("tend apply v4: %v:\n%s", err, out4)
	}
	d := tp.waitStatus(10*time.Second, "v4 active and ready", func(d status.Document) bool { return d.Revision == "v4" && d.Ready.True() })
	if revisionEntry(d, "v3").ID != "" || revisionEntry(d, "v2").ID != "v2" {
		t.Errorf("revisions %+v; want v2 and v4 listed, not v3", d.Revisions)
	}
	if _, err := os.Stat(filepath.Join(tp.dir, "v3-ran")); err == nil {
		t.Errorf("v3's install ran")
	}
}

// A store whose file no longer matches its checksum is not trusted: going back to
// the revision fetches the resource again, before anything stops, and the instance
// runs the right content.
func TestRevisionCorruptStoreFetchedAgain(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/a.bin": "version a\n", "/b.bin": "version b\n"})
	specOf := func(id, file string) string {
		return `instance: {revision: ` + id + `}
resources:
  - {name: model.bin, urls: ["` + srv.URL + `/` + file + `"], checksum: "` + md5of(strings.TrimSuffix("version "+file, ".bin")+"\n") + `"}
containers:
  - name: web
    command: [sh, -c, "cat model.bin > seen; exec sleep 1000"]
    readiness_probe: {exec: {command: test -s seen}, period: 50ms, initial_delay: 0s}
`
	}
	tp := start(t, specOf("v1", "a.bin"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	stored := filepath.Join(tp.dir, ".tend/revisions/v1/resources/model.bin")
	waitFor(t, 10*time.Second, "v1's resource kept in its store", func() (bool, string) {
		_, err := os.Stat(stored)
		return err == nil, ""
	})
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", specOf("v2", "b.bin"))); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	// The store's copy rots (a disk error, a hand edit), same size.
	if err := os.WriteFile(stored, []byte("version x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := srv.count("/a.bin")
	if out, code := tendCtl(t, tp, "rollback"); code != 0 || !strings.Contains(out, "v1: active and ready") {
		t.Fatalf("tend rollback: exit %d:\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, "model.bin")); string(got) != "version a\n" {
		t.Errorf("model.bin after the rollback = %q, want version a", got)
	}
	waitFor(t, 10*time.Second, "web reading version a", func() (bool, string) {
		got, _ := os.ReadFile(filepath.Join(tp.dir, "seen"))
		return string(got) == "version a\n", string(got)
	})
	if n := srv.count("/a.bin"); n != before+1 {
		t.Errorf("a.bin fetched %d times by the rollback; want once (the store's copy does not verify)", n-before)
	}
	log := tp.stderr.String()
	log = log[strings.LastIndex(log, "rollback requested"):]
	fetch, stop := strings.Index(log, `"message":"fetching resource"`), strings.Index(log, `"message":"stopping"`)
	if fetch < 0 || stop < 0 || fetch > stop {
		t.Errorf("the rollback's fetch (at %d) did not come before web was stopped (at %d):\n%s", fetch, stop, log)
	}
	// Ready again, v1's store holds the good file again.
	waitFor(t, 10*time.Second, "v1's store repaired", func() (bool, string) {
		got, _ := os.ReadFile(stored)
		return string(got) == "version a\n", string(got)
	})
}

// A read-only instance.dir keeps no revisions but the active one, and tend says so
// at start: an apply still installs and activates, the revision it replaced is not
// kept, and there is nothing to roll back to.
func TestRevisionReadOnlyInstanceDirKeepsOnlyTheActive(t *testing.T) {
	needPID1(t) // a mount namespace of its own
	ro := []string{"unshare", "--mount", "sh", "-c", `mount --bind "$RO" "$RO" && mount -o remount,bind,ro "$RO" && exec "$@"`, "sh"}
	specOf := func(id string) string {
		return `instance: {revision: ` + id + `, dir: "{DIR}/ro"}
containers:
  - name: web
    command: [sh, -c, "exec sleep 1000"]
    env: [{name: V, value: ` + id + `}]
    readiness_probe: {exec: {command: "true"}, period: 50ms, initial_delay: 0s}
`
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ro"), 0o755); err != nil {
		t.Fatal(err)
	}
	tp := start(t, specOf("v1"), runOpts{dir: dir, wrap: ro, env: []string{"RO=" + filepath.Join(dir, "ro")}, args: []string{"--listen", "unix:{DIR}/tend.sock"}})
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	waitFor(t, 5*time.Second, "the warning at start", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "only the active revision is kept"), tail(tp.stderr.String(), 2000)
	})
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", strings.ReplaceAll(specOf("v2"), "{DIR}", dir))); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	d := tp.waitStatus(10*time.Second, "v2 active and ready", func(d status.Document) bool { return d.Revision == "v2" && d.Ready.True() })
	if len(d.Revisions) != 1 || d.Revisions[0].ID != "v2" {
		t.Errorf("revisions %+v; want v2 alone", d.Revisions)
	}
	if out, code := tendCtl(t, tp, "rollback"); code != 1 || !strings.Contains(out, "no stable revision") {
		t.Errorf("tend rollback: exit %d:\n%s\nwant exit 1, no stable revision", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ro/.tend")); !os.IsNotExist(err) {
		t.Errorf("a read-only instance.dir has .tend: %v", err)
	}
}

// A tend killed (SIGKILL) in the middle of an install, or of a switch, starts again
// with one whole revision: the old one when the install had not ended (the store of
// the unfinished install removed), the new one when the switch had begun (its
// resources and its containers, none of the old).
func TestRevisionKilledMidInstallOrSwitch(t *testing.T) {
	needPID1(t) // SIGKILL of tend ends its containers with its PID namespace
	srv := newFileServer(t, map[string]string{"/a.bin": "version a\n", "/b.bin": "version b\n"})
	specOf := func(id, file, inits string) string {
		return `instance: {revision: ` + id + `}
resources:
  - {name: model.bin, urls: ["` + srv.URL + `/` + file + `"], checksum: "` + md5of(strings.TrimSuffix("version "+file, ".bin")+"\n") + `"}
` + inits + `containers:
  - name: web
    command: [sh, -c, "echo $V $(cat model.bin) > seen; exec sleep 1000"]
    env: [{name: V, value: ` + id + `}]
    readiness_probe: {exec: {command: test -s seen}, period: 50ms, initial_delay: 0s}
`
	}
	blocking := func(at, began string) string {
		return "init_containers:\n  - {name: hold, at: " + at + ", command: [sh, -c, \"touch {DIR}/" + began + "; while [ ! -e {DIR}/go-on ]; do sleep 0.02; done\"]}\n"
	}
	runs := func(tp *tend, want string) {
		t.Helper()
		waitFor(t, 15*time.Second, "web running "+want, func() (bool, string) {
			got, _ := os.ReadFile(filepath.Join(tp.dir, "seen"))
			d, _ := tp.status()
			return string(got) == want+"\n" && d.Ready.True(), string(got)
		})
	}
	restart := func(tp *tend) *tend {
		t.Helper()
		tp.signal(syscall.SIGKILL)
		tp.wait(10 * time.Second)
		os.Remove(filepath.Join(tp.dir, "seen"))
		spec, err := os.ReadFile(filepath.Join(tp.dir, "spec.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return start(t, string(spec), runOpts{dir: tp.dir})
	}
	applyBg := func(tp *tend, id, spec string) {
		cmd := exec.Command(tendBin, "apply", writeFile(t, tp, id+".yaml", spec), "--listen", "unix:"+tp.sock, "--no-wait")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait() // it fails when tend is killed
	}

	// Killed while v2 installs: v1 runs again, v2 is gone with its store.
	tp := start(t, specOf("v1", "a.bin", ""))
	runs(tp, "v1 version a")
	applyBg(tp, "v2", specOf("v2", "b.bin", blocking("install", "install-began")))
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "install-began"))
	tp = restart(tp)
	runs(tp, "v1 version a")
	if d, _ := tp.status(); d.Revision != "v1" || revisionEntry(d, "v2").ID != "" {
		t.Errorf("after a kill mid-install: revision %s, revisions %+v; want v1 alone", d.Revision, d.Revisions)
	}
	if _, err := os.Stat(filepath.Join(tp.dir, ".tend/revisions/v2")); !os.IsNotExist(err) {
		t.Errorf("the unfinished install's store is still there: %v", err)
	}

	// Killed while switching to v3 (its init container holds the re-prepare: the old
	// containers have stopped, v3's resource is in place): v3 runs, whole.
	applyBg(tp, "v3", specOf("v3", "b.bin", blocking("activate", "switch-began")))
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "switch-began"))
	os.WriteFile(filepath.Join(tp.dir, "go-on"), nil, 0o644) // the next start's init container passes
	tp = restart(tp)
	runs(tp, "v3 version b")
	if d, _ := tp.status(); d.Revision != "v3" || !revisionEntry(d, "v1").Installed.True() {
		t.Errorf("after a kill mid-switch: revision %s, revisions %+v; want v3 active, v1 kept", d.Revision, d.Revisions)
	}
}

// An automatic rollback is reported at once to --report-url (no heartbeat due for
// an hour): the receiver gets the rolled-back revision with why.
func TestRevisionRollbackReported(t *testing.T) {
	rr := newReportReceiver(t, 0)
	tp := start(t, revisionSpec("v1", "1s", "up-v1", "up-v1"), runOpts{args: []string{"--report-url", rr.url, "--report-interval", "1h"}})
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	if out, code := tendCtl(t, tp, "apply", "--no-wait", writeFile(t, tp, "bad.yaml", revisionSpec("v2", "1s", "", "never"))); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	waitFor(t, 10*time.Second, "a report of v2 rolled back", func() (bool, string) {
		for _, d := range rr.all() {
			if v2 := revisionEntry(d, "v2"); v2.Ready.Reason == status.ReasonRolledBack && strings.Contains(v2.Ready.Message, "not ready within 1s") {
				return true, ""
			}
		}
		return false, strconv.Itoa(len(rr.all())) + " reports"
	})
}

// An init container with at: install that runs as another user writes into the
// revision's store: it owns it.
func TestRevisionInitContainerAtInstallAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as nobody")
	}
	tp := start(t, revisionSpec("v1", "0s", "up", "up"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	for _, d := range []string{filepath.Dir(tp.dir), tp.dir} { // nobody reaches the instance's directory
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v2 := strings.Replace(revisionSpec("v2", "0s", "up", "up"), "containers:", `init_containers:
  - {name: unpack, at: install, user: nobody, command: ["sh", "-c", "id -u > {REVISION_DIR}/made-by"]}
containers:`, 1)
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", v2)); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	if got, err := os.ReadFile(filepath.Join(tp.dir, ".tend/revisions/v2/made-by")); err != nil || string(got) != "65534\n" {
		t.Errorf("made-by = %q (%v); want nobody's uid", got, err)
	}
}
