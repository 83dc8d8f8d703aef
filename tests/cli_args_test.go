package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// validate and render take their flags before or after SPEC, `--` ends the flags
// (a SPEC named like a flag), and an extra argument is a usage error naming it.
func TestCLIFlagsAnywhereSpecCommands(t *testing.T) {
	dir := t.TempDir()
	text := "containers:\n  - name: web\n    command: ./server --dc {dc}\n"
	for _, name := range []string{"spec.yaml", "-odd.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"validate", "--var", "dc=sas", "spec.yaml"},
		{"validate", "spec.yaml", "--var", "dc=sas"},
		{"validate", "spec.yaml", "--var=dc=sas"},
		{"validate", "--var", "dc=sas", "--", "-odd.yaml"},
		{"validate", "--", "-odd.yaml", "--var", "dc=sas"}, // after --, "--var" is a file name
	} {
		out, errOut, code := runCLI(t, dir, args...)
		last := args[len(args)-1]
		switch {
		case last == "dc=sas" && args[1] == "--":
			if code != 2 || !strings.Contains(errOut, `unexpected argument "--var"`) {
				t.Errorf("tend %s: exit %d, stderr %q; want 2 naming --var", strings.Join(args, " "), code, errOut)
			}
		case code != 0 || !strings.HasSuffix(out, ".yaml: ok\n"):
			t.Errorf("tend %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	for _, args := range [][]string{
		{"render", "spec.yaml", "--var", "dc=sas"},
		{"render", "--var", "dc=sas", "spec.yaml"},
	} {
		if out, errOut, code := runCLI(t, dir, args...); code != 0 || !strings.Contains(out, "--dc sas") {
			t.Errorf("tend %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errOut)
		}
	}
	for _, c := range []struct{ args []string }{
		{[]string{"validate", "spec.yaml", "extra", "--var", "dc=sas"}},
		{[]string{"render", "--var", "dc=sas", "spec.yaml", "extra"}},
		{[]string{"run", "spec.yaml", "extra", "--var", "dc=sas"}},
		{[]string{"version", "extra"}},
	} {
		_, errOut, code := runCLI(t, dir, c.args...)
		if code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("tend %s: exit %d, stderr %q; want 2 and one line naming \"extra\"", strings.Join(c.args, " "), code, errOut)
		}
	}
}

// `tend run SPEC --listen X --var a=b`: the flags after SPEC count.
func TestCLIRunFlagsAfterSpec(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "touch {DIR}/{greeting}; exec sleep 600"]
`, runOpts{after: []string{"--listen", "unix:{DIR}/api.sock", "--var", "greeting=hello"}})
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "hello"))
	api := "unix:" + filepath.Join(tp.dir, "api.sock")
	waitFor(t, 10*time.Second, "tend status on the --listen socket", func() (bool, string) {
		out, errOut, code := runCLI(t, t.TempDir(), "status", "--listen", api)
		return code == 0 && strings.Contains(out, "app"), errOut
	})
	if out, errOut, code := runCLI(t, t.TempDir(), "shutdown", "--listen", api); code != 0 {
		t.Errorf("tend shutdown: exit %d, %q %q", code, out, errOut)
	}
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code after shutdown = %d, want 0", code)
	}
}

// The control commands take --listen before or after the names, several names
// (each reported, a refused one does not keep the rest from their turn), and no
// stray arguments; over TCP a 403 says to pass --api-token-file.
func TestCLIFlagsAnywhereControlCommands(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tcp := "127.0.0.1:" + itoa(freePort(t))
	tp := start(t, `
containers:
  - name: a
    command: ["sleep", "600"]
  - name: b
    command: ["sleep", "600"]
`, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", tcp, "--api-token-file", tokenFile}})
	running := func(d status.Document) bool {
		return containerStatus(d, "a").State == status.Running && containerStatus(d, "b").State == status.Running
	}
	doc := tp.waitStatus(10*time.Second, "a and b running", running)
	api := "unix:" + tp.sock
	elsewhere := t.TempDir() // no tend.sock here: only --listen can find tend
	cli := func(wantCode int, wantOut string, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, elsewhere, args...)
		if code != wantCode || out != wantOut {
			t.Errorf("tend %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q", strings.Join(args, " "), code, out, errOut, wantCode, wantOut)
		}
		return errOut
	}

	pidA := *containerStatus(doc, "a").Pid
	cli(0, "restart a: ok\n", "restart", "a", "--listen", api)
	doc = tp.waitStatus(10*time.Second, "a restarted", running)
	if *containerStatus(doc, "a").Pid == pidA {
		t.Errorf("restart a --listen X did not restart a")
	}
	cli(0, "restart a: ok\n", "restart", "--listen", api, "a")
	cli(0, "restart a: ok\n", "restart", "--listen="+api, "a")

	cli(0, "stop a: ok\nstop b: ok\n", "stop", "a", "b", "--listen", api)
	tp.waitStatus(10*time.Second, "a and b stopped", func(d status.Document) bool {
		return containerStatus(d, "a").TargetState == "removed" && containerStatus(d, "b").TargetState == "removed"
	})
	cli(0, "start a: ok\nstart b: ok\n", "start", "--listen", api, "a", "b")
	tp.waitStatus(10*time.Second, "a and b started", running)

	// An unknown name in the middle: reported, and b still gets stopped.
	errOut := cli(1, "stop a: ok\nstop b: ok\n", "stop", "a", "nope", "b", "--listen", api)
	if !strings.HasPrefix(errOut, "tend: stop nope: no such container") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stop a nope b: stderr %q, want one line for nope", errOut)
	}
	cli(0, "start a: ok\nstart b: ok\n", "start", "a", "b", "--listen", api)

	// Over TCP a mutating call without the token says how to give it.
	errOut = cli(1, "", "restart", "a", "--listen", tcp)
	if !strings.Contains(errOut, "--api-token-file") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("restart over TCP without a token: stderr %q, want one line naming --api-token-file", errOut)
	}
	cli(0, "restart a: ok\n", "restart", "a", "--listen", tcp, "--api-token-file", tokenFile)

	for _, args := range [][]string{
		{"status", "--listen", api, "extra"},
		{"status", "extra", "--listen", api},
		{"reload", "extra", "--listen", api},
		{"shutdown", "--listen", api, "extra"},
	} {
		errOut := cli(2, "", args...)
		if !strings.Contains(errOut, `unexpected argument "extra"`) {
			t.Errorf("tend %s: stderr %q, want it to name \"extra\"", strings.Join(args, " "), errOut)
		}
	}
	if out, errOut, code := runCLI(t, elsewhere, "status", "--json", "--listen", api); code != 0 || !strings.Contains(out, `"containers"`) {
		t.Errorf("tend status --json --listen X: exit %d, %q %q", code, out, errOut)
	}
	cli(0, "reload: ok\n", "reload", "--listen", api)
	cli(0, "shutdown: ok\n", "shutdown", "--listen", api)
	if code := tp.wait(10 * time.Second); code != 0 {
		t.Errorf("exit code after shutdown = %d, want 0", code)
	}
}

// Usage errors are one line with a hint and exit 2; --version is `tend version`.
func TestCLIUsageErrorsAndVersion(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stats"}, `tend: unknown command "stats"; did you mean "status"? (tend --help lists the commands)`},
		{[]string{"frobnicate", "--listen", "x"}, `tend: unknown command "frobnicate" (tend --help lists the commands)`},
		{[]string{"help", "stats"}, `tend: unknown command "stats"; did you mean "status"?`},
		{[]string{"--bogus"}, `tend: unknown flag --bogus (tend --help lists the flags)`},
		{[]string{"status", "--jsn"}, `tend: status: unknown flag --jsn; did you mean --json? (tend status --help lists the flags)`},
		{[]string{"restart", "web", "--lisen", "unix:x"}, `tend: restart: unknown flag --lisen; did you mean --listen?`},
		{[]string{"status", "--listen"}, `tend: status: flag --listen needs a value`},
		{[]string{"stop"}, `tend: stop: expected one or more container NAMEs`},
	} {
		out, errOut, code := runCLI(t, dir, c.args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("tend %s: exit %d, stdout %q, stderr %q; want exit 2 and one line %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	version, _, code := runCLI(t, dir, "version")
	if code != 0 || !strings.HasPrefix(version, "tend ") || strings.Count(version, "\n") != 1 {
		t.Fatalf("tend version: exit %d, %q", code, version)
	}
	for _, flag := range []string{"--version", "-v"} {
		if out, errOut, code := runCLI(t, dir, flag); code != 0 || out != version {
			t.Errorf("tend %s: exit %d, stdout %q, stderr %q; want %q like tend version", flag, code, out, errOut, version)
		}
	}
}

// Without --listen or TEND_LISTEN and no ./tend.sock, status says where it looked
// and how to point it.
func TestCLIStatusDefaultSocketMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TEND_LISTEN", "") // restored after the test
	os.Unsetenv("TEND_LISTEN")
	_, errOut, code := runCLI(t, dir, "status")
	want := filepath.Join(dir, "tend.sock")
	if code != 1 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "--listen unix:PATH") || !strings.Contains(errOut, "TEND_LISTEN") {
		t.Errorf("tend status without a socket: exit %d, stderr %q; want 1 naming %s, --listen unix:PATH and TEND_LISTEN", code, errOut, want)
	}
	if _, errOut, code := runCLI(t, dir, "stop", "web"); code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("tend stop web without a socket: exit %d, stderr %q; want 1 naming %s", code, errOut, want)
	}
}

// status --watch prints the table again when the status changes, and only then; not
// on a terminal it appends (no ANSI codes). It ends with exit 1 when tend goes away.
func TestCLIStatusWatch(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, `
containers:
  - name: app
    command: ["sleep", "600"]
`)
	tp.waitStatus(10*time.Second, "app running", func(d status.Document) bool { return containerStatus(d, "app").State == status.Running })
	watch := exec.Command(tendBin, "status", "--listen", "unix:"+tp.sock, "--watch")
	var out, errOut syncBuffer
	watch.Stdout, watch.Stderr = &out, &errOut
	watch.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var watchErr error
	go func() { watchErr = watch.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = syscall.Kill(-watch.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	tables := func() int { return strings.Count(out.String(), "instance ") }
	waitFor(t, 10*time.Second, "the first table", func() (bool, string) { return tables() == 1, out.String() })
	// Not synchronisation but an observation window: nothing changes in it, so a
	// watch that printed on every poll (twice a second) would show more tables.
	time.Sleep(1500 * time.Millisecond)
	if n := tables(); n != 1 {
		t.Errorf("%d tables while nothing changed, want 1:\n%s", n, out.String())
	}
	if _, errOut, code := runCLI(t, tp.dir, "stop", "app"); code != 0 {
		t.Fatalf("tend stop app: exit %d, %s", code, errOut)
	}
	waitFor(t, 10*time.Second, "a table with app stopped", func() (bool, string) {
		s := out.String()
		return strings.Contains(s[strings.LastIndex(s, "instance "):], "stopped"), s
	})
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("ANSI codes in the output to a pipe:\n%q", out.String())
	}
	termAndWait(t, tp, 10*time.Second)
	select {
	case <-done:
		if ee, ok := watchErr.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(errOut.String(), "no tend is answering") {
			t.Errorf("watch after tend exited: %v, stderr %q; want exit 1 saying no tend is answering", watchErr, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("status --watch still running 10s after tend exited")
	}
}
