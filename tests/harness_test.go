// Package tests runs the real tend binary with real children, signals and sockets.
// Each tend runs as PID 1 of its own PID namespace (unshare --pid --fork
// --mount-proc --kill-child) where the machine allows one (as root), so whatever a
// test leaves behind dies with it. Elsewhere tend runs as a plain child, the harness
// kills what it leaves by process group, and the tests that need tend as PID 1 are
// skipped.
package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/internal/testutil"
	"github.com/tend-sh/tend/status"
)

// tendBin is the tend under test, built by TestMain with the race detector.
//
// parallelTests: the tests that spend seconds waiting (floods, frozen tends, memory
// bounds, start-first under load) call t.Parallel(), so that they wait together after
// the quick ones (`make test` runs six at a time). Such a test uses no fixed port
// another parallel test uses, no t.Setenv, and never reassigns a package variable (a
// test that needs another binary says so in runOpts.bin).
var tendBin string

// noPIDNamespace says why tend cannot run as PID 1 of a new PID namespace here (not
// root, or a kernel or container that refuses one); "" when it can.
var noPIDNamespace string

func TestMain(m *testing.M) {
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "true").CombinedOutput(); err != nil {
		noPIDNamespace = fmt.Sprintf("unshare --pid --fork --mount-proc --kill-child true: %v: %s", err, strings.TrimSpace(string(out)))
		fmt.Fprintf(os.Stderr, "tests: no PID namespace (%s): tend runs as a plain child, the tests that need it as PID 1 are skipped\n", noPIDNamespace)
	}
	// A race-built tend waits 1 s at exit by default (atexit_sleep_ms): every
	// command the tests run would take a second longer. Children inherit this.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	dir, err := os.MkdirTemp("", "tend-test-bin")
	if err != nil {
		panic(err)
	}
	tendBin = filepath.Join(dir, "tend")
	args := []string{"build", "-o", tendBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "..")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build tend:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects output that is written while the test reads it.
type syncBuffer = testutil.SyncBuffer

// tend is one running tend under test.
type tend struct {
	t      *testing.T
	dir    string
	sock   string
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// runAs is how a test runs tend.
type runAs int

const (
	// isolated (the default): PID 1 of a new PID namespace where the machine allows
	// one, so that what the test leaves dies with it; else a plain child.
	isolated runAs = iota
	// asPID1: PID 1 of a new PID namespace, for tests of what only PID 1 does; they
	// are skipped where no namespace can be made.
	asPID1
	// asChild: a plain child of the test, as a foreground command (a child subreaper).
	asChild
)

type runOpts struct {
	as      runAs
	discard bool     // send tend's stdout to /dev/null (floods)
	args    []string // extra flags for `tend run`, before SPEC
	after   []string // extra arguments after SPEC
	env     []string
	wrap    []string // a command that runs tend (e.g. prlimit --nofile=S:H); it must exec it
	bin     string   // the tend binary to run; "" is tendBin (plainTend for memory tests)
	// cgroup is the cgroup tend starts in; nil: a fresh one of its own (newTestCgroup),
	// so that parallel tends never share <start>/containers (they would lock each
	// other out), unless noCgroup: then the test process's own.
	cgroup   *testCgroup
	noCgroup bool
	// dir is the instance's directory; "" makes a new one (a restarted tend of the
	// same instance passes the first one's).
	dir string
}

// needPID1 skips t where tend cannot run as PID 1 of a new PID namespace.
func needPID1(t *testing.T) {
	t.Helper()
	if noPIDNamespace != "" {
		t.Skipf("needs tend as PID 1 of a new PID namespace, which this machine refuses (run the tests as root): %s", noPIDNamespace)
	}
}

// start writes spec (with {DIR} replaced by the test's directory) and runs tend on it.
func start(t *testing.T, specText string, opts ...runOpts) *tend {
	t.Helper()
	var o runOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.as == asPID1 {
		needPID1(t)
	}
	inNamespace := o.as == asPID1 || (o.as == isolated && noPIDNamespace == "")
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	specText = strings.ReplaceAll(specText, "{DIR}", dir)
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(specText), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tend.sock")
	args := []string{"run", "--log-format", "json", "--log-level", "debug"}
	for _, a := range o.args {
		args = append(args, strings.ReplaceAll(a, "{DIR}", dir))
	}
	args = append(args, path)
	for _, a := range o.after {
		args = append(args, strings.ReplaceAll(a, "{DIR}", dir))
	}
	cg := o.cgroup
	if cg == nil && !o.noCgroup {
		cg = newTestCgroup(t) // before tend's cleanup below, so it is removed after tend
	}
	bin := tendBin
	if o.bin != "" {
		bin = o.bin
	}
	argv := append(append(append(cg.wrap(), o.wrap...), bin), args...)
	var cmd *exec.Cmd
	if inNamespace {
		cmd = exec.Command("unshare", append([]string{"--pid", "--fork", "--mount-proc", "--kill-child"}, argv...)...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), o.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	tp := &tend{t: t, dir: dir, sock: sock, cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = tp.stdout, tp.stderr
	if o.discard {
		cmd.Stdout = nil
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { tp.err = cmd.Wait(); close(tp.done) }()
	t.Cleanup(func() {
		select {
		case <-tp.done:
		default:
			if inNamespace {
				// The namespace dies with its PID 1; unshare --kill-child takes it down.
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			} else {
				killTree(cmd.Process.Pid)
			}
			<-tp.done
		}
		if t.Failed() {
			t.Logf("tend stdout:\n%s", tail(tp.stdout.String(), 4000))
			t.Logf("tend stderr:\n%s", tail(tp.stderr.String(), 8000))
		}
	})
	return tp
}

// killTree kills tend (pid, the leader of its process group) and every process
// below it. tend is a child subreaper, so whatever its containers started, also a
// process that left their process groups, stays below it until it dies: tend is
// stopped first so that it starts nothing new, then the processes below it and their
// groups are killed until none is left, then tend's group.
func killTree(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		below := descendants(pid)
		if len(below) == 0 || time.Now().After(deadline) {
			break
		}
		for _, p := range below {
			_ = syscall.Kill(-p, syscall.SIGKILL) // its group, if it leads one
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline: the kills land asynchronously
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// descendants lists the living (not zombie) processes below pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	living := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := procStat(p)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], p)
		living[p] = state != "Z"
	}
	var below []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if living[p] {
			below = append(below, p)
		}
		queue = append(queue, children[p]...)
	}
	return below
}

// procStat reads the state and the parent of pid from /proc/PID/stat.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0], ppid, err == nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// pid is tend's pid as seen from the test: the child of unshare in a PID namespace.
func (tp *tend) pid() int {
	tp.t.Helper()
	if tp.cmd.Args[0] != "unshare" {
		return tp.cmd.Process.Pid
	}
	var pid int
	waitFor(tp.t, 10*time.Second, "tend's pid under unshare", func() (bool, string) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", tp.cmd.Process.Pid, tp.cmd.Process.Pid))
		if err != nil {
			return false, err.Error()
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return false, "no child yet"
		}
		pid, _ = strconv.Atoi(f[0])
		return true, ""
	})
	return pid
}

// signal sends sig to tend itself.
func (tp *tend) signal(sig syscall.Signal) {
	tp.t.Helper()
	if sig == syscall.SIGKILL && tp.cmd.Args[0] != "unshare" {
		// Outside a PID namespace (tests without root) a SIGKILL would leave tend's
		// children running after the test: take them with it, as the end of the
		// namespace does.
		killTree(tp.cmd.Process.Pid)
		return
	}
	if err := syscall.Kill(tp.pid(), sig); err != nil {
		tp.t.Fatalf("signal tend: %v", err)
	}
}

// wait waits for tend to exit and returns its exit code.
func (tp *tend) wait(timeout time.Duration) int {
	tp.t.Helper()
	select {
	case <-tp.done:
	case <-time.After(timeout):
		tp.t.Fatalf("tend did not exit within %v", timeout)
	}
	if tp.err == nil {
		return 0
	}
	if ee, ok := tp.err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	tp.t.Fatalf("wait tend: %v", tp.err)
	return -1
}

func (tp *tend) client() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", tp.sock)
		}}}
}

// status fetches the status document; ok is false while tend is not answering.
func (tp *tend) status() (status.Document, bool) {
	var doc status.Document
	resp, err := tp.client().Get("http://tend/v1/status")
	if err != nil {
		return doc, false
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return doc, false
	}
	return doc, true
}

// waitStatus waits until cond holds for the status document.
func (tp *tend) waitStatus(timeout time.Duration, what string, cond func(status.Document) bool) status.Document {
	tp.t.Helper()
	var doc status.Document
	waitFor(tp.t, timeout, what, func() (bool, string) {
		d, ok := tp.status()
		if !ok {
			return false, "tend not answering"
		}
		doc = d
		b, _ := json.Marshal(d)
		return cond(d), string(b)
	})
	return doc
}

func containerStatus(doc status.Document, name string) status.Container {
	for _, c := range doc.Containers {
		if c.Name == name {
			return c
		}
	}
	return status.Container{}
}

// waitFor polls cond (tests may poll; tend may not) until it holds or the deadline
// passes, and reports what it last saw.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last saw: %s", timeout, what, tail(last, 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFile waits until path exists and returns its content.
func waitFile(t *testing.T, timeout time.Duration, path string) string {
	t.Helper()
	var content string
	waitFor(t, timeout, "file "+path, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		content = string(b)
		return true, ""
	})
	return content
}

// lines returns the non-empty lines of path.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func jsonDecode(r interface{ Read([]byte) (int, error) }, v any) error {
	return json.NewDecoder(r).Decode(v)
}

// termAndWait sends SIGTERM to tend and waits for it to exit with 0. It returns when the
// signal was sent and when tend had exited.
func termAndWait(t *testing.T, tp *tend, timeout time.Duration) (sent, exited time.Time) {
	t.Helper()
	sent = time.Now()
	tp.signal(syscall.SIGTERM)
	if code := tp.wait(timeout); code != 0 {
		t.Errorf("tend exit code after SIGTERM = %d, want 0", code)
	}
	return sent, time.Now()
}
