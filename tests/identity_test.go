package tests

import (
	"fmt"
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

// shared is a directory every user may write, for what the unprivileged processes
// report (the test's own directory is root's, mode 0700).
func shared(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tend-identity")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// procField is a line of /proc/PID/status ("Uid", "Groups"), its fields.
func procField(t *testing.T, pid int, key string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.Fields(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return nil
}

// limitLine is the "Max open files" line of a limits file, its soft and hard values.
func limitLine(t *testing.T, limits, name string) string {
	t.Helper()
	for _, l := range strings.Split(limits, "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			f := strings.Fields(v)
			if len(f) >= 2 {
				return f[0] + " " + f[1]
			}
		}
	}
	t.Fatalf("no %q in limits:\n%s", name, limits)
	return ""
}

// TestUserAndRlimits: a container with user nobody and rlimits runs as nobody (uid,
// gid, no supplementary groups of root) with its limits in effect at exec; its init
// command, exec readiness probe and notify readiness run so too; tend keeps its own.
func TestUserAndRlimits(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	nobody := exec.Command("id", "-u", "nobody")
	out, err := nobody.Output()
	if err != nil {
		t.Skip("no user nobody")
	}
	uid := strings.TrimSpace(string(out))
	gidOut, _ := exec.Command("id", "-g", "nobody").Output()
	gid := strings.TrimSpace(string(gidOut))
	sh := shared(t)
	tp := start(t, `
instance: {name: ident, dir: {DIR}}
containers:
  - name: web
    user: nobody
    rlimits: {nofile: 1024, core: {soft: 0, hard: 4096}}
    working_dir: `+sh+`
    init:
      - command: ["sh", "-c", "(id -u; id -g; ulimit -n) > init.out"]
    log: {file: {DIR}/web.log}
    command: ["sh", "-c", "cat /proc/self/limits > limits.out; echo $HOME $USER $LOGNAME > env.out; echo hello from $(id -un); exec sleep 1000"]
    readiness_probe:
      exec: {command: ["sh", "-c", "(id -u; ulimit -n) > probe.out"]}
    stop_policy:
      exec: {command: ["sh", "-c", "(id -u; ulimit -n) > stop.out"]}
      term_timeout_ms: 100
  - name: notified
    user: nobody
    working_dir: `+sh+`
    command: ["sh", "-c", "systemd-notify --ready; exec sleep 1000"]
    readiness_probe: {notify: {}}
`, runOpts{as: asChild})
	doc := tp.waitStatus(20*time.Second, "both ready", func(d status.Document) bool {
		return containerStatus(d, "web").Ready.Status == "True" && containerStatus(d, "notified").Ready.Status == "True"
	})
	pid := *containerStatus(doc, "web").Pid
	// The process that runs now is the program itself, not a shim.
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) != "sleep" {
		t.Errorf("pid %d is %q, want sleep", pid, comm)
	}
	for key, want := range map[string]string{"Uid": uid, "Gid": gid} {
		if f := procField(t, pid, key); len(f) != 4 || f[0] != want || f[1] != want || f[2] != want || f[3] != want {
			t.Errorf("%s: %v, want %s everywhere", key, f, want)
		}
	}
	if g := procField(t, pid, "Groups"); strings.Join(g, " ") != strings.Join(supplementary(t, "nobody", gid), " ") {
		t.Errorf("Groups: %v, want nobody's (%v)", g, supplementary(t, "nobody", gid))
	}
	limits := waitFile(t, 5*time.Second, filepath.Join(sh, "limits.out"))
	if got := limitLine(t, limits, "Max open files"); got != "1024 1024" {
		t.Errorf("the program started with nofile %s, want 1024 1024", got)
	}
	if got := limitLine(t, limits, "Max core file size"); got != "0 4096" {
		t.Errorf("the program started with core %s, want 0 4096", got)
	}
	now, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if got := limitLine(t, string(now), "Max open files"); got != "1024 1024" {
		t.Errorf("/proc/%d/limits: nofile %s", pid, got)
	}
	if got := strings.TrimSpace(waitFile(t, 5*time.Second, filepath.Join(sh, "env.out"))); !strings.HasSuffix(got, " nobody nobody") || strings.HasPrefix(got, "/root") {
		t.Errorf("HOME USER LOGNAME: %q", got)
	}
	if got := strings.Fields(waitFile(t, 5*time.Second, filepath.Join(sh, "init.out"))); strings.Join(got, " ") != uid+" "+gid+" 1024" {
		t.Errorf("init ran as uid gid nofile %v, want %s %s 1024", got, uid, gid)
	}
	if got := strings.Fields(waitFile(t, 5*time.Second, filepath.Join(sh, "probe.out"))); strings.Join(got, " ") != uid+" 1024" {
		t.Errorf("exec probe ran as uid nofile %v, want %s 1024", got, uid)
	}
	// Its output reaches tend's stdout and the log file tend writes for it.
	waitFor(t, 5*time.Second, "the output", func() (bool, string) {
		log, _ := os.ReadFile(filepath.Join(tp.dir, "web.log"))
		return strings.Contains(unpadded(tp.stdout.String()), "web | hello from nobody") && strings.Contains(string(log), "web | hello from nobody"), tp.stdout.String()
	})
	// tend's own limits are untouched.
	tendLimits, _ := os.ReadFile("/proc/" + strconv.Itoa(tp.cmd.Process.Pid) + "/limits")
	if got := limitLine(t, string(tendLimits), "Max open files"); got == "1024 1024" {
		t.Errorf("tend's own nofile became %s", got)
	}
	if f := procField(t, tp.cmd.Process.Pid, "Uid"); f[0] != "0" {
		t.Errorf("tend's uid became %v", f)
	}
	tp.signal(syscall.SIGTERM)
	// The file exists before the shell has written it: wait for both lines.
	waitFor(t, 10*time.Second, "the stop handler's uid and nofile", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(sh, "stop.out"))
		return string(b) == uid+"\n1024\n", string(b)
	})
}

// supplementary is what `id -G` says of user's groups, without the primary gid.
func supplementary(t *testing.T, user, gid string) []string {
	t.Helper()
	out, err := exec.Command("id", "-G", user).Output()
	if err != nil {
		t.Fatal(err)
	}
	var gs []string
	for _, g := range strings.Fields(string(out)) {
		if g != gid {
			gs = append(gs, g)
		}
	}
	return gs
}

// TestUserNeedsRoot: a spec with a user fails at start, naming the field, when tend
// is not root; nothing starts.
func TestUserNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to become someone else")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	sh := shared(t)
	tp := start(t, `
instance: {name: ident, dir: `+sh+`}
containers:
  - name: web
    user: nobody
    command: ["sh", "-c", "touch started; exec sleep 1000"]
`, runOpts{as: asChild, wrap: []string{"sh", "-c",
		// The spec's and the binary's directories are root's (0700): open them to the user.
		`chmod 0755 . .. "${1%/*}" && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"`, "sh"}, args: []string{"--listen", "unix:" + sh + "/tend.sock"}})
	if code := tp.wait(10 * time.Second); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(tp.stderr.String(), "containers[0]: user and group need tend to run as root") {
		t.Errorf("stderr: %s", tp.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(sh, "started")); err == nil {
		t.Error("the container started")
	}
}

// A reload that adds a user to a tend that is not root is refused, naming the field;
// what runs goes on.
func TestReloadAddingUserNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to become someone else")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	sh := shared(t)
	spec := `
instance: {name: ident, dir: ` + sh + `}
containers:
  - name: web
    command: ["sleep", "1000"]
`
	tp := start(t, spec, runOpts{as: asChild, wrap: []string{"sh", "-c",
		`chmod 0755 . .. "${1%/*}" && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"`, "sh"}, args: []string{"--listen", "unix:" + sh + "/tend.sock"}})
	tp.sock = filepath.Join(sh, "tend.sock")
	doc := tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	pid := *containerStatus(doc, "web").Pid
	writeSpec(t, tp, strings.Replace(spec, "  - name: web\n", "  - name: web\n    user: nobody\n", 1))
	out, errOut, code := runCLI(t, tp.dir, "reload", "--listen", "unix:"+tp.sock)
	if code != 1 || !strings.Contains(errOut, "containers[0]: user and group need tend to run as root") {
		t.Errorf("reload: exit %d, stdout %q, stderr %q; want exit 1 naming containers[0]", code, out, errOut)
	}
	doc, _ = tp.status()
	if c := containerStatus(doc, "web"); c.State != status.Running || *c.Pid != pid {
		t.Errorf("web after the refused reload: %s pid %v, want running pid %d", c.State, c.Pid, pid)
	}
}

// The verify command of a dynamic resource belongs to no container: it runs as
// instance.user, with instance's rlimits.
func TestVerifyRunsAsInstanceUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	out, err := exec.Command("id", "-u", "nobody").Output()
	if err != nil {
		t.Skip("no user nobody")
	}
	uid := strings.TrimSpace(string(out))
	srv := newFileServer(t, map[string]string{"/v1": "v1", "/v2": "v2"})
	sh := shared(t)
	specText := func(rev int) string {
		return fmt.Sprintf(`
instance: {name: ident, dir: %s, user: nobody, rlimits: {nofile: 123}}
dynamic_resources:
  - name: geo
    revision: %d
    urls: ["%s/v%d"]
    storage_dir: store
    destination: geo
    verify: {exec: {command: ["sh", "-c", "echo $(id -u) $(ulimit -n) > %s/verify.out"]}}
containers:
  - name: app
    command: ["sleep", "60"]
`, sh, rev, srv.URL, rev, sh)
	}
	tp := start(t, specText(1))
	tp.sock = filepath.Join(sh, "tend.sock") // in instance.dir
	tp.waitStatus(15*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running && dynamicStatus(d, "geo").State == "ready"
	})
	writeSpec(t, tp, specText(2))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: %d", code)
	}
	if got := strings.TrimSpace(waitFile(t, 15*time.Second, filepath.Join(sh, "verify.out"))); got != uid+" 123" {
		t.Errorf("verify ran as uid and nofile %q, want %q", got, uid+" 123")
	}
}
