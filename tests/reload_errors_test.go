package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A reload of an invalid spec names each error's file and line, as `tend validate`
// does, in the answer of `tend reload`, in reload_error and in tend's console log,
// where each error is a line of its own, in document order.
func TestReloadErrorsCarryFileAndLine(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "600"]
`, runOpts{args: []string{"--log-format", "console"}})
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == "running"
	})
	path := filepath.Join(tp.dir, "spec.yaml")
	bad := `containers:
  - name: web
    command: sh -c 'echo ${HOME}'
    restart_policy: {mode: sometimes}
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	want := path + ":3: containers[0].command: unknown variable {HOME} (write ${{HOME}} for a literal ${HOME}, or $HOME)\n" +
		path + ":4: containers[0].restart_policy.mode: "
	_, errOut, code := runCLI(t, tp.dir, "reload")
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("tend reload: exit %d, %q; want 1 and %q", code, errOut, want)
	}
	doc, _ := tp.status()
	if !strings.HasPrefix(doc.ReloadError, want) {
		t.Errorf("reload_error %q, want %q...", doc.ReloadError, want)
	}
	if out, _, _ := runCLI(t, tp.dir, "status"); !strings.Contains(out, "  reload error: "+strings.ReplaceAll(want, "\n", "\n    ")) {
		t.Errorf("status table:\n%s", out)
	}
	waitFor(t, 5*time.Second, "the errors as lines of the console log", func() (bool, string) {
		log := tp.stderr.String()
		return strings.Contains(log, "\n    "+strings.ReplaceAll(want, "\n", "\n    ")), log
	})
	termAndWait(t, tp, 20*time.Second)
}

// A FIFO renamed over the spec (nobody writes it) makes a reload fail with an error
// naming the file, by SIGHUP and by `tend reload`; tend goes on answering reloads and
// stops on SIGTERM. `tend validate` of a FIFO fails at once with exit 2.
func TestReloadSpecFIFO(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "600"]
`)
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == "running"
	})
	path, fifo := filepath.Join(tp.dir, "spec.yaml"), filepath.Join(tp.dir, "f")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	want := path + ": not a regular file (named pipe)"
	tp.signal(syscall.SIGHUP)
	tp.waitStatus(10*time.Second, "reload_error naming the FIFO", func(d status.Document) bool {
		return strings.HasPrefix(d.ReloadError, want)
	})
	for range 2 {
		_, errOut, code := runCLITimeout(t, tp.dir, 10*time.Second, "reload")
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("tend reload: exit %d, %q; want 1 and %q", code, errOut, want)
		}
	}
	start := time.Now()
	_, errOut, code := runCLITimeout(t, tp.dir, 10*time.Second, "validate", path)
	if code != 2 || !strings.Contains(errOut, want) || time.Since(start) > 5*time.Second {
		t.Errorf("tend validate FIFO: exit %d after %v, %q; want 2 at once and %q", code, time.Since(start), errOut, want)
	}
	termAndWait(t, tp, 20*time.Second)
}

// runCLITimeout is runCLI with a deadline: a command that blocks is killed and the
// test fails.
func runCLITimeout(t *testing.T, dir string, timeout time.Duration, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tendBin, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tend %v did not end within %v", args, timeout)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}
