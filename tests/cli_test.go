package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs tend with args and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(tendBin, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func TestCLIValidateRenderVersion(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(filepath.Join(dir, "token"), []byte("hunter2\n"), 0o600)
	os.WriteFile(good, []byte(`
instance: {port: 8080}
env: [{name: TOKEN, value_from: {file: token}}]
containers:
  - name: web
    command: ./server --port {BSCONFIG_IPORT_PLUS_1}
`), 0o644)
	out, errOut, code := runCLI(t, dir, "validate", good)
	if code != 0 || out != good+": ok\n" || errOut != "" {
		t.Errorf("validate good: code %d, stdout %q, stderr %q (want ok and a silent stderr)", code, out, errOut)
	}
	out, _, code = runCLI(t, dir, "render", good)
	if code != 0 || !strings.Contains(out, "--port 8081") || strings.Contains(out, "hunter2") || !strings.Contains(out, "<redacted>") {
		t.Errorf("render: code %d\n%s", code, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`
containers:
  - name: a
    command: "sh -c $(id)"
    bogus: 1
  - name: a
    command: ./x {BSCONFIG_IPORT}
`), 0o644)
	_, errOut, code = runCLI(t, dir, "validate", bad)
	if code != 2 {
		t.Errorf("validate bad: exit %d, want 2", code)
	}
	for _, want := range []string{"containers[0].command: command substitution is not supported", "containers[0].bogus", "containers[1].name", "unknown variable {BSCONFIG_IPORT} (instance.port is not set)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("validate bad: stderr lacks %q:\n%s", want, errOut)
		}
	}
	// run refuses an invalid spec with exit 2 and starts nothing.
	_, errOut, code = runCLI(t, dir, "run", bad)
	if code != 2 || !strings.Contains(errOut, "bogus") {
		t.Errorf("run bad: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := runCLI(t, dir, "run"); code != 2 {
		t.Errorf("run without SPEC: exit %d, want 2", code)
	}
	if _, _, code := runCLI(t, dir, "run", "--no-such-flag", good); code != 2 {
		t.Errorf("run with an unknown flag: exit %d, want 2", code)
	}
	if out, _, code := runCLI(t, dir, "version"); code != 0 || !strings.HasPrefix(out, "tend ") {
		t.Errorf("version: %d %q", code, out)
	}
}

// Over init_timeout_ms, tend fails with exit 1 and a clear message.
func TestInitTimeoutExits1(t *testing.T) {
	tp := start(t, `
instance: {init_timeout_ms: 300}
init_containers:
  - name: forever
    command: ["sleep", "600"]
containers:
  - name: app
    command: ["touch", "{DIR}/app-started"]
`)
	if code := tp.wait(10e9); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if !strings.Contains(tp.stderr.String(), "init_timeout_ms") {
		t.Errorf("stderr does not explain the init timeout:\n%s", tail(tp.stderr.String(), 2000))
	}
	if _, err := os.Stat(filepath.Join(tp.dir, "app-started")); err == nil {
		t.Errorf("a container started although preparing failed")
	}
}

// SIGTERM while an init container runs stops it and exits 0.
func TestSignalWhilePreparing(t *testing.T) {
	tp := start(t, `
init_containers:
  - name: slow
    command: ["sh", "-c", "touch {DIR}/init-up; exec sleep 600"]
containers:
  - name: app
    command: ["sleep", "600"]
`)
	waitFile(t, 10e9, filepath.Join(tp.dir, "init-up"))
	termAndWait(t, tp, 10e9)
}

// An address tend cannot listen on is a runtime failure: exit 1 naming the address,
// whatever had started meanwhile is stopped.
func TestCannotListenExits1(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tp := start(t, `
containers:
  - name: app
    command: ["sleep", "600"]
`, runOpts{args: []string{"--listen", ln.Addr().String()}})
	if code := tp.wait(10e9); code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if !strings.Contains(tp.stderr.String(), "listen on "+ln.Addr().String()) {
		t.Errorf("stderr does not name the address:\n%s", tail(tp.stderr.String(), 2000))
	}
}
