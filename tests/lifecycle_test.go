package tests

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

func init() {
	// The notify tests run this test binary as their container.
	if os.Getenv("LIFECYCLE_TEST_HELPER") == "notify" {
		os.Exit(notifyHelper(os.Args[1:]))
	}
}

// notifyHelper speaks systemd's notify protocol on $NOTIFY_SOCKET: it sends each
// argument as one datagram ("STATUS=warming up", "READY=1"), "sleep:MS" waits,
// "pings" sends WATCHDOG=1 at once and then every half WATCHDOG_USEC ("pings:MS"
// every MS; at once, so that a helper slow to start, a race-built binary on a cold
// machine, still pings within the period that began at its exec), and
// "runs:FILE:N" counts this run in FILE (runHelper). Then it sleeps until killed.
func notifyHelper(args []string) int {
	addr := os.Getenv("NOTIFY_SOCKET")
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "notify helper:", err)
		return 1
	}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "sleep:"):
			ms, _ := strconv.Atoi(strings.TrimPrefix(a, "sleep:"))
			time.Sleep(time.Duration(ms) * time.Millisecond)
		case a == "pings" || strings.HasPrefix(a, "pings:"):
			usec, _ := strconv.Atoi(os.Getenv("WATCHDOG_USEC"))
			every := time.Duration(usec/2) * time.Microsecond
			if ms, ok := strings.CutPrefix(a, "pings:"); ok {
				n, _ := strconv.Atoi(ms)
				every = time.Duration(n) * time.Millisecond
			}
			go func() {
				for {
					c.Write([]byte("WATCHDOG=1"))
					time.Sleep(every)
				}
			}()
		case strings.HasPrefix(a, "runs:"):
			if code, exit := runHelper(c, strings.TrimPrefix(a, "runs:")); exit {
				return code
			}
		default:
			if _, err := c.Write([]byte(a)); err != nil {
				fmt.Fprintln(os.Stderr, "notify helper:", err)
				return 1
			}
		}
	}
	time.Sleep(time.Hour)
	return 0
}

// startLifecycle starts tend with {SELF} replaced by the notify helper's command.
func startLifecycle(t *testing.T, specText string) *tend {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return start(t, strings.ReplaceAll(specText, "{SELF}", self), runOpts{env: []string{"LIFECYCLE_TEST_HELPER=notify"}})
}

// While the startup probe has not passed, liveness and readiness do not run and the
// container is not ready; once it passes, they take over.
func TestStartupProbeHoldsLivenessAndReadiness(t *testing.T) {
	tp := start(t, `
containers:
  - name: slow
    command: ["sh", "-c", "touch {DIR}/running; while [ ! -e {DIR}/go ]; do sleep 0.02; done; touch {DIR}/started; exec sleep 600"]
    startup_probe:
      exec: {command: ["test", "-e", "{DIR}/started"]}
      time_limit: {initial_delay_ms: 0, min_restart_period_ms: 50, max_restart_period_ms: 50}
      failure_threshold: 1000
    liveness_probe:
      exec: {command: ["sh", "-c", "echo x >> {DIR}/liveness"]}
      time_limit: {initial_delay_ms: 0, min_restart_period_ms: 50, max_restart_period_ms: 50}
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "running"))
	tp.waitStatus(5*time.Second, "slow running", func(d status.Document) bool {
		return containerStatus(d, "slow").State == status.Running
	})
	time.Sleep(300 * time.Millisecond) // several startup checks fail meanwhile
	doc, _ := tp.status()
	if c := containerStatus(doc, "slow"); c.Ready.True() || c.Ready.Reason != "StartupProbe" {
		t.Errorf("ready before the startup probe passed: %+v", c.Ready)
	}
	if _, err := os.Stat(filepath.Join(tp.dir, "liveness")); err == nil {
		t.Errorf("the liveness probe ran before the startup probe passed")
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	doc = tp.waitStatus(10*time.Second, "slow ready", func(d status.Document) bool {
		return containerStatus(d, "slow").Ready.True()
	})
	waitFile(t, 5*time.Second, filepath.Join(tp.dir, "liveness"))
	if c := containerStatus(doc, "slow"); c.Restarts != 0 {
		t.Errorf("restarted %d times", c.Restarts)
	}
}

// failure_threshold consecutive startup failures kill the process and restart it,
// with the reason in last_exit.
func TestStartupProbeFailureRestarts(t *testing.T) {
	tp := start(t, `
containers:
  - name: never
    command: ["sleep", "600"]
    restart_policy: {min_period_ms: 10000, max_jitter_ms: 0}
    startup_probe:
      exec: {command: ["false"]}
      time_limit: {initial_delay_ms: 0, min_restart_period_ms: 50, max_restart_period_ms: 50}
      failure_threshold: 3
`)
	doc := tp.waitStatus(10*time.Second, "killed by its startup probe", func(d status.Document) bool {
		c := containerStatus(d, "never")
		return c.State == status.Backoff && c.LastExit != nil
	})
	x := containerStatus(doc, "never").LastExit
	if x.Reason != "startup probe failed: exit code 1" || x.Signal != "SIGKILL" {
		t.Errorf("last_exit %+v", x)
	}
}

// A readiness probe by notification: ready after READY=1 from the container's own
// process, STATUS= shown as status_text; the same datagram from outside its process
// group changes nothing.
func TestNotifyReadiness(t *testing.T) {
	tp := startLifecycle(t, `
containers:
  - name: web
    command: ["{SELF}", "STATUS=warming up", "sleep:600", "READY=1", "STATUS=serving"]
    readiness_probe: {notify: {}}
`)
	doc := tp.waitStatus(10*time.Second, "status_text warming up", func(d status.Document) bool {
		return containerStatus(d, "web").StatusText == "warming up"
	})
	c := containerStatus(doc, "web")
	if c.Ready.True() {
		t.Fatalf("ready before READY=1: %+v", c.Ready)
	}
	// A process outside the container's group sends READY=1 to its socket.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", hostPid(t, tp, *c.Pid)))
	if err != nil {
		t.Fatal(err)
	}
	var sock string
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := strings.CutPrefix(string(kv), "NOTIFY_SOCKET="); ok {
			sock = v
		}
	}
	if !strings.HasPrefix(sock, "@") {
		t.Fatalf("NOTIFY_SOCKET = %q, want an abstract socket", sock)
	}
	if err := sendDatagram(sock, "READY=1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if doc, _ := tp.status(); containerStatus(doc, "web").Ready.True() {
		t.Fatalf("READY=1 from outside the container made it ready")
	}
	doc = tp.waitStatus(10*time.Second, "web ready after its own READY=1", func(d status.Document) bool {
		c := containerStatus(d, "web")
		return c.Ready.True() && c.StatusText == "serving"
	})
	_ = doc
}

// hostPid turns a pid in tend's namespace into the test's view of it.
func hostPid(t *testing.T, tp *tend, pid int) int {
	t.Helper()
	if tp.cmd.Args[0] != "unshare" {
		return pid
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 3 && f[0] == "NSpid:" && f[len(f)-1] == strconv.Itoa(pid) {
				if p, err := strconv.Atoi(e.Name()); err == nil && isBelow(p, tp.cmd.Process.Pid) {
					return p
				}
			}
		}
	}
	t.Fatalf("no process %d in tend's namespace", pid)
	return 0
}

// isBelow reports whether pid descends from ancestor.
func isBelow(pid, ancestor int) bool {
	for pid > 1 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		pid, _ = strconv.Atoi(f[1])
		if pid == ancestor {
			return true
		}
	}
	return false
}

func sendDatagram(addr, msg string) error {
	name := addr
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(msg))
	return err
}

// systemd-notify --ready from a shell script: the usual way a program without sd_notify
// says it is ready.
func TestNotifyReadinessSystemdNotify(t *testing.T) {
	if _, err := exec.LookPath("systemd-notify"); err != nil {
		t.Skip("systemd-notify is not installed")
	}
	tp := start(t, `
containers:
  - name: script
    command: ["sh", "-c", "sleep 0.2; systemd-notify --ready --status='all set'; exec sleep 600"]
    readiness_probe: {notify: {}}
`)
	tp.waitStatus(10*time.Second, "ready by systemd-notify", func(d status.Document) bool {
		c := containerStatus(d, "script")
		return c.Ready.True() && c.StatusText == "all set"
	})
}

// s6's protocol: ready once the process writes a newline to its descriptor N; and
// log_line: ready once a line of output matches.
func TestNotifyFDAndLogLineReadiness(t *testing.T) {
	tp := start(t, `
containers:
  - name: s6
    command: ["sh", "-c", "while [ ! -e {DIR}/go ]; do sleep 0.02; done; echo >&3; exec sleep 600"]
    readiness_probe: {notify: {fd: 3}}
  - name: db
    command: ["sh", "-c", "echo starting; while [ ! -e {DIR}/go ]; do sleep 0.02; done; echo 'LOG:  database system is ready to accept connections' >&2; exec sleep 600"]
    readiness_probe: {log_line: "database system is ready"}
`)
	tp.waitStatus(10*time.Second, "both running", func(d status.Document) bool {
		return containerStatus(d, "s6").State == status.Running && containerStatus(d, "db").State == status.Running
	})
	time.Sleep(200 * time.Millisecond)
	doc, _ := tp.status()
	for _, n := range []string{"s6", "db"} {
		if c := containerStatus(doc, n); c.Ready.True() {
			t.Errorf("%s ready before its signal: %+v", n, c.Ready)
		}
	}
	if err := os.WriteFile(filepath.Join(tp.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(10*time.Second, "both ready", func(d status.Document) bool {
		return containerStatus(d, "s6").Ready.True() && containerStatus(d, "db").Ready.True()
	})
}

// notify with watchdog_ms: a process that stops sending WATCHDOG=1 is killed at once
// and restarted; one that keeps sending stays. The pinging one has a period well
// above its first ping's time: the race-built helper (this test binary) took 200–300
// ms to reach its first ping after its exec here, and 930 ms on a fresh CI machine.
func TestNotifyWatchdog(t *testing.T) {
	tp := startLifecycle(t, `
containers:
  - name: silent
    command: ["{SELF}", "READY=1"]
    readiness_probe: {notify: {watchdog_ms: 300}}
    restart_policy: {min_period_ms: 10000, max_jitter_ms: 0}
  - name: pinging
    command: ["{SELF}", "READY=1", "pings:100"]
    readiness_probe: {notify: {watchdog_ms: 2000}}
`)
	doc := tp.waitStatus(10*time.Second, "silent killed by the watchdog", func(d status.Document) bool {
		return containerStatus(d, "silent").LastExit != nil
	})
	if x := containerStatus(doc, "silent").LastExit; x.Reason != "watchdog timeout: no WATCHDOG=1 for 300 ms" {
		t.Errorf("last_exit %+v", x)
	}
	time.Sleep(time.Second)
	doc, _ = tp.status()
	if c := containerStatus(doc, "pinging"); c.Restarts != 0 || !c.Ready.True() {
		t.Errorf("the pinging container was touched: %+v", c)
	}
}

// max_failures ends a crash loop: the container is failed, the instance not ready.
func TestMaxFailuresGivesUp(t *testing.T) {
	tp := start(t, `
containers:
  - name: crash
    command: ["sh", "-c", "echo x >> {DIR}/runs; exit 3"]
    restart_policy: {min_period_ms: 10, max_period_ms: 10, max_jitter_ms: 0, max_failures: 3}
  - name: steady
    command: ["sleep", "600"]
`)
	doc := tp.waitStatus(10*time.Second, "crash failed", func(d status.Document) bool {
		return containerStatus(d, "crash").State == status.Failed
	})
	c := containerStatus(doc, "crash")
	if n := len(lines(t, filepath.Join(tp.dir, "runs"))); n != 3 {
		t.Errorf("ran %d times, want 3", n)
	}
	if c.Ready.Reason != "RestartLimit" || !strings.Contains(c.Ready.Message, "gave up after 3 failures") || c.LastExit.Code != 3 {
		t.Errorf("failed container: ready %+v, last exit %+v", c.Ready, c.LastExit)
	}
	if doc.Ready.True() {
		t.Errorf("instance ready with a failed container")
	}
	// tend start resets the count.
	if code := post(t, tp, "/v1/containers/crash/start"); code != 200 {
		t.Fatalf("start: %d", code)
	}
	tp.waitStatus(10*time.Second, "crash failed again after three more runs", func(d status.Document) bool {
		return containerStatus(d, "crash").State == status.Failed && len(lines(t, filepath.Join(tp.dir, "runs"))) == 6
	})
}

// max_run_ms stops a run through the stop sequence; in job mode the final exit code is
// that of the stopped process, or 1 when it exited 0.
func TestMaxRunDeadline(t *testing.T) {
	tp := start(t, `
containers:
  - name: clean
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait $!"]
    restart_policy: {mode: never}
    max_run_ms: 300
  - name: other
    command: ["sleep", "1"]
    restart_policy: {mode: never}
`)
	if code := tp.wait(15 * time.Second); code != 1 {
		t.Errorf("job exit code %d, want 1 (a deadline is a failure even when the process exits 0)", code)
	}
	if !strings.Contains(tp.stdout.String()+tp.stderr.String(), "deadline exceeded") {
		t.Errorf("no log line says deadline exceeded")
	}
}
