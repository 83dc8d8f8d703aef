package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// secondTend runs `tend run` of tp's spec a second time (extra flags before the
// spec), in a cgroup and a PID namespace of its own where there are, so that
// whatever it wrongly starts dies with it (else its process group is killed), and
// returns its exit code and output. One that runs for 20 s fails the test.
func secondTend(t *testing.T, tp *tend, extra ...string) (int, string) {
	t.Helper()
	args := append(append([]string{tendBin, "run"}, extra...), filepath.Join(tp.dir, "spec.yaml"))
	args = append(newTestCgroup(t).wrap(), args...)
	if noPIDNamespace == "" {
		args = append([]string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = tp.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("second tend %v did not exit; output:\n%s", extra, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// The instance lock cannot be switched off from inside a container: a container
// whose user owns instance.dir (root here) replaces the lock file there was with a
// symlink, and a second tend of the instance, told to listen
// elsewhere, still exits 1 saying another tend runs it. It used to run beside the
// first, both "running without" the lock.
func TestInstanceLockHoldsAgainstTheContainer(t *testing.T) {
	tp := start(t, `
containers:
  - name: app
    command: ["sh", "-c", "rm -rf .tend.lock; ln -s /nonexistent/x .tend.lock && echo planted > planted; exec sleep 600"]
    working_dir: .
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "planted"))
	tp.waitStatus(10*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == status.Running
	})
	code, out := secondTend(t, tp, "--listen", "unix:"+filepath.Join(tp.dir, "other.sock"))
	if code != 1 || !strings.Contains(out, "is already run by another tend") {
		t.Errorf("second tend: exit %d, want 1 saying another tend runs the instance; output:\n%s", code, out)
	}
	if strings.Contains(tp.stderr.String(), "without") {
		t.Errorf("the first tend ran without the lock:\n%s", tp.stderr.String())
	}
	if _, ok := tp.status(); !ok {
		t.Error("the first tend stopped answering on its socket")
	}
}
