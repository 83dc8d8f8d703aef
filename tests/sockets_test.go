package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

func init() {
	// The socket tests run this test binary as their server.
	if os.Getenv("SOCKET_TEST_HELPER") == "server" {
		os.Exit(socketServer(os.Args[1:]))
	}
}

// socketServer is a server of systemd's socket activation protocol, as a user's
// would be: it takes its listener from fd 3 (net.FileListener), writes
// "LISTEN_PID LISTEN_FDS LISTEN_FDNAMES its-pid" to the file args[0], answers every
// connection with its pid, and on SIGTERM stops accepting, finishes the connections
// it has and exits 0. Further arguments: "notify" sends READY=1 once it serves;
// "once:FILE" serves only if FILE does not exist (and creates it): every later start
// exits 3 at once, a new version that does not work; "delay:MS" waits MS after
// writing the file before it serves (a slow start); "drain:MS" waits MS after its
// last connection on SIGTERM before it exits (a slow drain).
func socketServer(args []string) int {
	notify, delay, drain := false, 0, 0
	for _, a := range args[1:] {
		notify = notify || a == "notify"
		if ms, ok := strings.CutPrefix(a, "delay:"); ok {
			delay, _ = strconv.Atoi(ms)
		}
		if ms, ok := strings.CutPrefix(a, "drain:"); ok {
			drain, _ = strconv.Atoi(ms)
		}
		if file, ok := strings.CutPrefix(a, "once:"); ok {
			f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				fmt.Fprintln(os.Stderr, "socket server: failing on purpose")
				return 3
			}
			f.Close()
		}
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "socket server:", err)
		return 1
	}
	env := fmt.Sprintf("%s %s %s %d\n", os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES"), os.Getpid())
	if err := os.WriteFile(args[0], []byte(env), 0o644); err != nil {
		return 1
	}
	time.Sleep(time.Duration(delay) * time.Millisecond)
	if notify {
		if c, err := net.Dial("unixgram", "\x00"+strings.TrimPrefix(os.Getenv("NOTIFY_SOCKET"), "@")); err == nil {
			c.Write([]byte("READY=1"))
			c.Close()
		}
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { <-term; ln.Close() }()
	var wg sync.WaitGroup
	answer := []byte(strconv.Itoa(os.Getpid()) + "\n")
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.Write(answer); c.Close() }()
	}
	wg.Wait()
	time.Sleep(time.Duration(drain) * time.Millisecond)
	return 0
}

// startSockets starts tend with {SELF} replaced by the socket server's command and
// {PORT} by a free port, which it returns.
func startSockets(t *testing.T, specText string) (*tend, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	specText = strings.NewReplacer("{SELF}", self, "{ADDR}", addr).Replace(specText)
	return start(t, specText, runOpts{env: []string{"SOCKET_TEST_HELPER=server"}}), addr
}

// hostPid is the pid in this test's PID namespace of tend's descendant whose pid is
// pid in tend's namespace.
func (tp *tend) hostPid(pid int) int {
	tp.t.Helper()
	for _, p := range append(descendants(tp.pid()), tp.pid()) {
		if nsPid(p) == pid {
			return p
		}
	}
	tp.t.Fatalf("no process of tend has pid %d in its namespace", pid)
	return 0
}

// ask connects to addr and returns the pid that answered.
func ask(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	return strconv.Atoi(strings.TrimSpace(line))
}

// Each process gets the sockets as fds 3, 4, ... with LISTEN_FDS, LISTEN_FDNAMES
// and LISTEN_PID its own pid; it serves the address of the spec, and the unix
// socket is there with mode 0660. Another container's process, started after the
// sockets were bound, holds none of them.
func TestSocketActivationVariables(t *testing.T) {
	tp, addr := startSockets(t, `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env"]
    sockets:
      - {listen: "{ADDR}", name: http}
      - {listen: "unix:web.sock"}
  - name: other
    depends_on: {web: started}
    command: ["sh", "-c", "for f in /proc/$$/fd/*; do readlink $f; done > {DIR}/fds.tmp; mv {DIR}/fds.tmp {DIR}/other-fds; exec sleep 600"]
`)
	if fds := waitFile(t, 10*time.Second, filepath.Join(tp.dir, "other-fds")); strings.Contains(fds, "socket:") {
		t.Errorf("another container's process holds a socket:\n%s", fds)
	}
	env := serverLine(t, tp, "env")
	if len(env) != 4 || env[0] != env[3] || env[1] != "2" || env[2] != "http:web" {
		t.Fatalf("LISTEN_PID LISTEN_FDS LISTEN_FDNAMES pid = %q; want the pid twice, 2, http:web", env)
	}
	pid, err := ask(addr)
	if err != nil || strconv.Itoa(pid) != env[3] {
		t.Fatalf("connection to %s answered by %d (%v), want the server %s", addr, pid, err, env[3])
	}
	info, err := os.Stat(filepath.Join(tp.dir, "web.sock"))
	if err != nil || info.Mode().Type() != os.ModeSocket || info.Mode().Perm() != 0o660 {
		t.Fatalf("unix socket: %v %v, want a socket of mode 0660", info, err)
	}
	termAndWait(t, tp, 10*time.Second)
}

// A connection made while no process runs (the server was killed with SIGKILL)
// waits in the backlog and is answered by the next process.
func TestSocketConnectionWaitsForTheNextProcess(t *testing.T) {
	tp, addr := startSockets(t, `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env"]
    restart_policy: {min_period_ms: 500, max_period_ms: 500, max_jitter_ms: 0}
    sockets: [{listen: "{ADDR}"}]
`)
	first := serverPid(t, tp, "env")
	os.Remove(filepath.Join(tp.dir, "env"))
	if err := syscall.Kill(tp.hostPid(first), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(5*time.Second, "web in backoff", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Backoff
	})
	got, err := ask(addr) // made while no process runs
	if err != nil {
		t.Fatalf("connection while the server was down: %v", err)
	}
	if got == first || got == 0 {
		t.Fatalf("answered by %d, want the next process (the killed one was %d)", got, first)
	}
	termAndWait(t, tp, 10*time.Second)
}

// An address in use is a start failure with the reason in last_exit; tend keeps
// running, and the restart policy binds it once it is free.
func TestSocketBindFailureIsAStartFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	self, _ := os.Executable()
	tp := start(t, fmt.Sprintf(`
containers:
  - name: web
    command: ["%s", "{DIR}/env"]
    restart_policy: {min_period_ms: 200, max_period_ms: 200, max_jitter_ms: 0}
    sockets: [{listen: "%s"}]
`, self, ln.Addr()), runOpts{env: []string{"SOCKET_TEST_HELPER=server"}})
	doc := tp.waitStatus(10*time.Second, "a failed start", func(d status.Document) bool {
		return containerStatus(d, "web").LastExit != nil
	})
	x := containerStatus(doc, "web").LastExit
	if want := "socket " + ln.Addr().String() + ": bind: address already in use"; !strings.Contains(string(x.Reason), want) {
		t.Fatalf("last_exit.reason = %q, want it to say %q", x.Reason, want)
	}
	// tend's log reaches stderr through a queue of its own: wait for the line.
	waitFor(t, 5*time.Second, "the log saying why the start failed", func() (bool, string) {
		return strings.Contains(tp.stdout.String()+tp.stderr.String(), "address already in use"), tail(tp.stderr.String(), 2000)
	})
	ln.Close()
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "env"))
	if _, err := ask(ln.Addr().String()); err != nil {
		t.Fatalf("after the address was freed: %v", err)
	}
	termAndWait(t, tp, 10*time.Second)
}

// hammer connects to addr without pause until stop is closed and returns how many
// connections were answered and the failures (refused, reset, no answer).
func hammer(addr string, stop <-chan struct{}) (ok int, failures []error) {
	for {
		select {
		case <-stop:
			return ok, failures
		default:
		}
		if _, err := ask(addr); err != nil {
			failures = append(failures, err)
		} else {
			ok++
		}
	}
}

// A reload that changes the container but not its sockets hands them to the new
// process: a client connecting without pause through it sees no refusal. A reload
// that removes the container closes them.
func TestSocketsAcrossReload(t *testing.T) {
	self, _ := os.Executable()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	spec := func(file string) string {
		return fmt.Sprintf("containers:\n  - {name: web, command: [%q, %q], sockets: [{listen: %q}]}\n  - {name: other, command: [sleep, 600]}\n", self, file, addr)
	}
	tp := start(t, spec("{DIR}/env1"), runOpts{env: []string{"SOCKET_TEST_HELPER=server"}})
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "env1"))
	stop := make(chan struct{})
	result := make(chan []error, 1)
	var served int
	go func() {
		n, f := hammer(addr, stop)
		served = n
		result <- f
	}()
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(strings.ReplaceAll(text, "{DIR}", tp.dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := post(t, tp, "/v1/reload"); code != 200 {
			t.Fatalf("reload: %d", code)
		}
	}
	write(spec("{DIR}/env2"))
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "env2"))
	close(stop)
	if f := <-result; len(f) > 0 || served == 0 {
		t.Fatalf("through a reload: %d answered, %d failed, first: %v", served, len(f), f)
	}
	write("containers: [{name: other, command: [sleep, 600]}]\n")
	tp.waitStatus(10*time.Second, "web removed", func(d status.Document) bool { return len(d.Containers) == 1 })
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("%s still accepts connections after its container was removed", addr)
	}
	termAndWait(t, tp, 10*time.Second)
}

// startGunicorn runs examples/socket-activation.yaml on a free port (skipped without
// gunicorn; .ci/run installs it) and returns tend and the address.
func startGunicorn(t *testing.T) (*tend, string) {
	t.Helper()
	if _, err := exec.LookPath("gunicorn"); err != nil {
		t.Skip("gunicorn is not installed (Debian: apt-get install gunicorn; .ci/run installs it)")
	}
	b, err := os.ReadFile("../examples/socket-activation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs("../examples")
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	spec := strings.NewReplacer("127.0.0.1:8000", addr, "hello_wsgi:app", "--chdir "+examples+" hello_wsgi:app").Replace(string(b))
	// No __pycache__ in examples/.
	tp := start(t, spec, runOpts{env: []string{"PYTHONDONTWRITEBYTECODE=1"}})
	return tp, addr
}

// httpGet gets / from addr, the connection's own (no keep-alive between calls).
func httpGet(addr string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// gunicorn, given no --bind, serves on the address of the spec: it takes the socket
// by LISTEN_FDS and LISTEN_PID.
func TestGunicornTakesTheSocket(t *testing.T) {
	tp, addr := startGunicorn(t)
	tp.waitStatus(20*time.Second, "gunicorn ready", func(d status.Document) bool {
		return containerStatus(d, "web").Ready.True()
	})
	if body, err := httpGet(addr); err != nil || body != "hello from gunicorn\n" {
		t.Fatalf("GET %s: %q %v", addr, body, err)
	}
	termAndWait(t, tp, 20*time.Second)
}

// With sockets and update: start_first, a client connecting without pause through
// several `tend restart`s never sees a refused or reset connection, and every
// restart replaced the process. Each new process takes 300 ms to be ready, and
// meanwhile status shows both (old_pid): the old one serves until then, and the
// container and the instance stay ready.
func TestStartFirstRestartsUnderLoad(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp, addr := startSockets(t, `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env", "notify", "delay:300"]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
`)
	tp.waitStatus(10*time.Second, "web ready", func(d status.Document) bool { return containerStatus(d, "web").Ready.True() })
	stop := make(chan struct{})
	result := make(chan []error, 1)
	var served int
	go func() {
		n, f := hammer(addr, stop)
		served = n
		result <- f
	}()
	pids := map[int]bool{}
	for i := 0; i < 5; i++ {
		time.Sleep(800 * time.Millisecond) // load between restarts
		before := *containerStatus(mustStatus(t, tp), "web").Pid
		pids[before] = true
		if code := post(t, tp, "/v1/containers/web/restart"); code != 200 {
			t.Fatalf("restart: %d", code)
		}
		d := tp.waitStatus(5*time.Second, "both processes in status", func(d status.Document) bool {
			c := containerStatus(d, "web")
			return c.OldPid != nil && *c.OldPid == before && c.Pid != nil && *c.Pid != before
		})
		// The old one serves: the container and the instance stay ready meanwhile (a
		// readiness check on /v1/ready must not take the pod out of service).
		if c := containerStatus(d, "web"); !c.Ready.True() || !d.Ready.True() {
			t.Errorf("restart %d, both processes running: container ready %+v, instance ready %+v; want both True", i+1, c.Ready, d.Ready)
		}
		tp.waitStatus(10*time.Second, "the new process alone", func(d status.Document) bool {
			c := containerStatus(d, "web")
			return c.Pid != nil && *c.Pid != before && c.OldPid == nil && c.Ready.True()
		})
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	if f := <-result; len(f) > 0 {
		t.Fatalf("%d connections answered, %d failed; first: %v", served, len(f), f[0])
	}
	// Thousands on a quiet machine; the floor only says the load ran throughout.
	if served < 200 || len(pids) != 5 {
		t.Fatalf("%d connections answered by %d processes; want hundreds at least, by 5", served, len(pids))
	}
	t.Logf("%d connections answered through 5 restarts", served)
	termAndWait(t, tp, 10*time.Second)
}

func mustStatus(t *testing.T, tp *tend) status.Document {
	t.Helper()
	d, ok := tp.status()
	if !ok {
		t.Fatal("tend does not answer")
	}
	return d
}

// A new version that fails (exits at once) is stopped and the old one keeps
// serving, not restarted in a loop; last_exit and the log say why.
func TestStartFirstFailedNewVersionKeepsTheOld(t *testing.T) {
	tp, addr := startSockets(t, `
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env", "once:{DIR}/started", "notify"]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
    restart_policy: {min_period_ms: 100, max_period_ms: 100, max_jitter_ms: 0}
`)
	old := serverPid(t, tp, "env")
	if code := post(t, tp, "/v1/containers/web/restart"); code != 200 {
		t.Fatalf("restart: %d", code)
	}
	doc := tp.waitStatus(10*time.Second, "the failed new process in last_exit", func(d status.Document) bool {
		return containerStatus(d, "web").LastExit != nil
	})
	c := containerStatus(doc, "web")
	if !strings.Contains(string(c.LastExit.Reason), "the new process failed (exit code 3); the old one keeps running") || c.LastExit.Code != 3 {
		t.Fatalf("last_exit %+v", c.LastExit)
	}
	time.Sleep(500 * time.Millisecond) // a restart loop would show by now
	c = containerStatus(mustStatus(t, tp), "web")
	if c.State != status.Running || c.Pid == nil || *c.Pid != old || c.OldPid != nil || c.Restarts != 1 || !c.Ready.True() {
		t.Fatalf("state %s, pid %v, old_pid %v, restarts %d, ready %+v; want running, the old pid %d, 1 start of the new, ready", c.State, c.Pid, c.OldPid, c.Restarts, c.Ready, old)
	}
	if got, err := ask(addr); err != nil || got != old {
		t.Fatalf("answered by %d (%v), want the old process %d", got, err, old)
	}
	// tend's log reaches stderr through a queue of its own: wait for the line.
	waitFor(t, 5*time.Second, "the log saying the old process was kept", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "keeping the old process"), tail(tp.stderr.String(), 2000)
	})
	termAndWait(t, tp, 10*time.Second)
}

// gunicorn restarted start-first under load (its SIGTERM is a graceful stop) fails
// no request, and each restart replaced the master.
func TestGunicornStartFirstUnderLoad(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp, addr := startGunicorn(t)
	tp.waitStatus(20*time.Second, "gunicorn ready", func(d status.Document) bool {
		return containerStatus(d, "web").Ready.True()
	})
	stop := make(chan struct{})
	failures := make(chan []error, 1)
	served := 0
	go func() {
		for {
			select {
			case <-stop:
				failures <- nil
				return
			default:
			}
			if _, err := httpGet(addr); err != nil {
				failures <- []error{err}
				return
			}
			served++
		}
	}()
	for i := 0; i < 3; i++ {
		before := *containerStatus(mustStatus(t, tp), "web").Pid
		if code := post(t, tp, "/v1/containers/web/restart"); code != 200 {
			t.Fatalf("restart: %d", code)
		}
		tp.waitStatus(20*time.Second, "the new gunicorn alone", func(d status.Document) bool {
			c := containerStatus(d, "web")
			return c.Pid != nil && *c.Pid != before && c.OldPid == nil && c.Ready.True()
		})
	}
	close(stop)
	if f := <-failures; len(f) > 0 {
		t.Fatalf("after %d requests: %v", served, f[0])
	}
	t.Logf("%d requests through 3 restarts", served)
	termAndWait(t, tp, 20*time.Second)
}
