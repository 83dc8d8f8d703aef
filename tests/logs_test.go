package tests

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// follower is a running `tend logs -f` whose output the test reads.
type follower struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func follow(t *testing.T, args ...string) *follower {
	t.Helper()
	f := &follower{cmd: exec.Command(tendBin, append([]string{"logs", "-f"}, args...)...), out: &syncBuffer{}, done: make(chan struct{})}
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.cmd.Wait(); close(f.done) }()
	t.Cleanup(func() {
		f.cmd.Process.Kill()
		<-f.done
	})
	return f
}

func (f *follower) waitLine(t *testing.T, what string, cond func(line string) bool) {
	t.Helper()
	waitFor(t, 15*time.Second, what, func() (bool, string) {
		for _, l := range strings.Split(f.out.String(), "\n") {
			if cond(l) {
				return true, ""
			}
		}
		return false, f.out.String()
	})
}

func (f *follower) count(substr string) int {
	n := 0
	for _, l := range strings.Split(f.out.String(), "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// TestLogs: tend logs prints the kept lines by time; -f follows them live over the
// unix socket and over TCP with the token (403 without), across a restart of the
// container and for a container a reload adds; the followers end when tend does.
func TestLogs(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tcp := "127.0.0.1:" + itoa(freePort(t))
	specText := `
containers:
  - name: web
    command: ["sh", "-c", "echo start $$; i=0; while :; do i=$((i+1)); echo tick $i; echo warn $i >&2; sleep 0.05; done"]
  - name: db
    log: {keep_lines: 3}
    command: ["sh", "-c", "i=0; while :; do i=$((i+1)); echo db $i; sleep 0.05; done"]
`
	tp := start(t, specText, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", tcp, "--api-token-file", tokenFile}})
	tp.waitStatus(10*time.Second, "running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running && containerStatus(d, "db").State == status.Running
	})
	unix := "unix:" + tp.sock
	isWeb := func(l string) bool { return strings.Contains(l, " web | tick ") }
	viaUnix := follow(t, "--listen", unix, "web")
	viaTCP := follow(t, "--listen", tcp, "--api-token-file", tokenFile, "web")
	all := follow(t, "--listen", unix, "-n", "0")
	viaUnix.waitLine(t, "web's lines over the unix socket", func(l string) bool { return strings.HasSuffix(l, " web | tick 10") })
	viaTCP.waitLine(t, "web's lines over TCP", isWeb)
	if n := viaUnix.count(" db | "); n != 0 {
		t.Errorf("a follow of web printed %d lines of db", n)
	}

	out, errOut, code := runCLI(t, tp.dir, "logs", "--listen", tcp, "web")
	if code != 1 || out != "" || !strings.Contains(errOut, "--api-token-file") {
		t.Errorf("logs over TCP without a token: exit %d, %q, %q", code, out, errOut)
	}
	resp, err := http.Get("http://" + tcp + "/v1/logs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET /v1/logs over TCP without a token: %s, want 403", resp.Status)
	}

	// The last lines over both containers, by time; db keeps only 3.
	out, _, code = runCLI(t, tp.dir, "logs", "--listen", unix, "-n", "12", "--json")
	var last []struct{ Time, Container, Stream, Line string }
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct{ Time, Container, Stream, Line string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
		last = append(last, e)
	}
	if code != 0 || len(last) != 12 {
		t.Fatalf("logs -n 12: exit %d, %d lines:\n%s", code, len(last), out)
	}
	dbLines, streams := 0, map[string]bool{}
	for i, e := range last {
		if i > 0 && e.Time < last[i-1].Time {
			t.Errorf("line %d is older than the one before: %v", i, last)
		}
		if e.Container == "db" {
			dbLines++
		}
		streams[e.Stream] = true
	}
	if dbLines > 3 || !streams["stderr"] || !streams["stdout"] {
		t.Errorf("db lines %d (keep_lines 3), streams %v", dbLines, streams)
	}
	if out, _, _ := runCLI(t, tp.dir, "logs", "--listen", unix, "-n", "0"); out != "" {
		t.Errorf("-n 0 printed %q", out)
	}
	if _, errOut, code := runCLI(t, tp.dir, "logs", "--listen", unix, "nosuch"); code != 1 || !strings.Contains(errOut, `no such container "nosuch"`) {
		t.Errorf("unknown container: exit %d, %q", code, errOut)
	}

	// A restart: the follow goes on with the new process (another pid).
	firstStart := ""
	for _, l := range strings.Split(viaUnix.out.String(), "\n") {
		if _, pid, ok := strings.Cut(l, " web | start "); ok {
			firstStart = pid
		}
	}
	if firstStart == "" {
		t.Fatalf("no start line in %s", viaUnix.out.String())
	}
	if _, errOut, code := runCLI(t, tp.dir, "restart", "--listen", unix, "web"); code != 0 {
		t.Fatalf("restart: %d %s", code, errOut)
	}
	restarted := func(l string) bool {
		return strings.Contains(l, " web | start ") && !strings.HasSuffix(l, " "+firstStart)
	}
	viaUnix.waitLine(t, "the restarted web's start line", restarted)
	viaTCP.waitLine(t, "the restarted web's start line over TCP", restarted)

	// A container that a reload adds joins a follow of every container.
	path := filepath.Join(tp.dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(specText+`  - name: late
    command: ["sh", "-c", "echo late line; exec sleep 600"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, tp.dir, "reload", "--listen", unix); code != 0 {
		t.Fatalf("reload: %d %s", code, errOut)
	}
	all.waitLine(t, "the added container's line", func(l string) bool { return strings.HasSuffix(l, " late | late line") })

	tp.signal(syscall.SIGTERM)
	for _, f := range []*follower{viaUnix, viaTCP, all} {
		select {
		case <-f.done:
			if code := f.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("a follower exited %d when tend stopped: %s", code, tail(f.out.String(), 500))
			}
		case <-time.After(10 * time.Second):
			t.Errorf("a follower still runs after tend stopped")
		}
	}
}

// TestLogsSlowFollower: a follower that does not read never holds up the
// container; when it reads again it is told how many lines it lost.
func TestLogsSlowFollower(t *testing.T) {
	tp := start(t, `
containers:
  - name: flood
    log: {keep_lines: 10}
    command: ["sh", "-c", "touch {DIR}/go; while [ ! -e {DIR}/flood ]; do sleep 0.01; done; seq 1 200000; touch {DIR}/flooded; exec sleep 600"]
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "go"))
	conn, err := net.Dial("unix", tp.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /v1/logs?follow=true&container=flood HTTP/1.1\r\nHost: tend\r\n\r\n"))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	// The container writes 200000 lines while nobody reads: it finishes all the same.
	os.WriteFile(filepath.Join(tp.dir, "flood"), nil, 0o644)
	waitFile(t, 30*time.Second, filepath.Join(tp.dir, "flooded"))
	sc := bufio.NewScanner(resp.Body)
	var dropped uint64
	var lastLine string
	deadline := time.Now().Add(20 * time.Second)
	conn.SetReadDeadline(deadline)
	for lastLine != "200000" && sc.Scan() {
		var e struct {
			Line    string
			Dropped uint64
		}
		json.Unmarshal(sc.Bytes(), &e)
		dropped += e.Dropped
		if e.Dropped == 0 {
			lastLine = e.Line
		}
	}
	if lastLine != "200000" || dropped == 0 {
		t.Errorf("read up to %q, dropped %d; want the last line and a count of dropped lines", lastLine, dropped)
	}
}

// An init container's output is kept too: `tend logs NAME` shows what it printed,
// stdout and stderr, while the instance runs and after a reload.
func TestLogsOfInitContainers(t *testing.T) {
	specText := `
init_containers:
  - name: migrate
    command: ["sh", "-c", "echo migrated 3 tables; echo one was empty >&2"]
containers:
  - name: web
    command: ["sleep", "600"]
`
	tp := start(t, specText)
	doc := tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	pid := *containerStatus(doc, "web").Pid
	check := func(when string) {
		t.Helper()
		out, errOut, code := runCLI(t, tp.dir, "logs", "--listen", "unix:"+tp.sock, "--json", "migrate")
		if code != 0 || !strings.Contains(out, `"container":"migrate","stream":"stdout","line":"migrated 3 tables"`) ||
			!strings.Contains(out, `"container":"migrate","stream":"stderr","line":"one was empty"`) {
			t.Errorf("%s: tend logs migrate: exit %d, stdout:\n%s\nstderr: %s", when, code, out, errOut)
		}
	}
	check("after start")
	writeSpec(t, tp, strings.Replace(specText, `"sleep", "600"`, `"sleep", "601"`, 1))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: %d", code)
	}
	tp.waitStatus(10*time.Second, "web replaced", func(d status.Document) bool {
		c := containerStatus(d, "web")
		return c.State == status.Running && c.Pid != nil && *c.Pid != pid
	})
	check("after a reload")
}
