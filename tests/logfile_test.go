package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A fast writer never takes the log past (max_files+1) × max_size_mb, sampled while it
// writes: rotated files are removed in the rotation itself (lumberjack removed them in
// the background and fell behind: 136 files of 1 MB with max_files 3).
func TestLogRotationBoundsDiskUse(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, `
containers:
  - name: web
    command: ["sh", "-c", "yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -c 40000000; touch {DIR}/written; exec sleep 600"]
    log: {file: logs/web.log, max_size_mb: 1, max_files: 3}
`, runOpts{discard: true})
	logs := filepath.Join(tp.dir, "logs")
	const bound = 4 << 20
	var peakBytes int64
	peakFiles := 0
	written := filepath.Join(tp.dir, "written")
	deadline := time.Now().Add(2 * time.Minute)
	for done := 0; done < 20; { // measures while it writes, and a little after
		entries, _ := os.ReadDir(logs)
		var total int64
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
		}
		peakBytes, peakFiles = max(peakBytes, total), max(peakFiles, len(entries))
		if _, err := os.Stat(written); err == nil {
			done++
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not finish within 2 minutes")
		}
	}
	t.Logf("the log took at most %d bytes in %d files", peakBytes, peakFiles)
	if peakBytes > bound || peakFiles > 4 {
		t.Errorf("the log took up to %d bytes in %d files, want at most %d bytes in 4", peakBytes, peakFiles, bound)
	}
	if peakBytes < 3<<20 {
		t.Errorf("the log took only %d bytes: did it rotate at all?", peakBytes)
	}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, or skips the test.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs for a full file system (needs root and CAP_SYS_ADMIN): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// With log.file on a full file system, the first failing write logs one warning and
// the container's log_error says why; when space is back, one line says it recovered,
// log_error is "" again, and new lines reach the file.
func TestLogWriteErrorsAreReported(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	mnt := mountTmpfs(t, 1<<20)
	logFile := filepath.Join(mnt, "web.log")
	tp := start(t, fmt.Sprintf(`
containers:
  - name: web
    command: ["sh", "-c", "i=0; while :; do i=$((i+1)); echo line $i; sleep 0.02; done"]
    log: {file: %s, max_size_mb: 1, max_files: 1}
`, logFile))
	doc := tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	if c := containerStatus(doc, "web"); c.LogError != "" {
		t.Fatalf("log_error %q before any failure", c.LogError)
	}
	waitFor(t, 10*time.Second, "lines in the log file", func() (bool, string) {
		return len(lines(t, logFile)) > 0, ""
	})

	fill(t, filepath.Join(mnt, "filler"))
	tp.waitStatus(10*time.Second, "log_error says the disk is full", func(d status.Document) bool {
		return strings.Contains(containerStatus(d, "web").LogError, "no space left on device")
	})
	waitFor(t, 10*time.Second, "the warning on stderr", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "cannot write the log file"), ""
	})
	// More lines fail to be written meanwhile; they make no more warnings.
	seen := strings.Count(tp.stdout.String(), "web | line")
	waitFor(t, 10*time.Second, "20 more lines on stdout", func() (bool, string) {
		return strings.Count(tp.stdout.String(), "web | line") >= seen+20, ""
	})
	if n := strings.Count(tp.stderr.String(), "cannot write the log file"); n != 1 {
		t.Errorf("%d warnings about the log file, want 1", n)
	}

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	before := len(lines(t, logFile))
	tp.waitStatus(10*time.Second, "log_error cleared", func(d status.Document) bool {
		return containerStatus(d, "web").LogError == ""
	})
	waitFor(t, 10*time.Second, "new lines in the log file", func() (bool, string) {
		return len(lines(t, logFile)) > before, ""
	})
	// tend's own log reaches its stderr through a queue of its own: the line may come
	// after the status and the file have changed.
	waitFor(t, 10*time.Second, "the recovery line on stderr", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "writing the log file works again"), ""
	})
	if n := strings.Count(tp.stderr.String(), "writing the log file works again"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}

// A container whose user owns its log directory replaces its log file with a symlink
// to a root-only file: the reload that rebuilds it (and so reopens the log) must not
// append to that file. The open is refused, shown as log_error; the container runs.
func TestLogFileSymlinkSwapIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the container runs as nobody and tend writes as root")
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // nobody must reach logs
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logs := filepath.Join(base, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(logs, 65534, 65534); err != nil { // nobody
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	const secretText = "root only\n"
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	specText := func(v string) string {
		return strings.NewReplacer("LOGS", logs, "SECRET", secret, "@RUN@", v).Replace(`
containers:
  - name: app
    user: nobody
    working_dir: /
    env: [{name: RUN, value: "@RUN@"}]
    log: {file: LOGS/app.log}
    command: ["sh", "-c", "echo started @RUN@; if [ @RUN@ = 1 ]; then while [ ! -e LOGS/go ]; do sleep 0.05; done; rm -f LOGS/app.log; ln -s SECRET LOGS/app.log; touch LOGS/swapped; fi; while :; do echo line @RUN@; sleep 0.05; done"]
`)
	}
	// Only the first run swaps: a second run's rm and ln would race tend's next open
	// of the file, which may create it regular in between.
	tp := start(t, specText("1"))
	tp.waitStatus(10*time.Second, "app running", func(d status.Document) bool {
		return containerStatus(d, "app").State == "running"
	})
	if err := os.WriteFile(filepath.Join(logs, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, 10*time.Second, filepath.Join(logs, "swapped"))
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(specText("2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, tp.dir, "reload"); code != 0 {
		t.Fatalf("tend reload: exit %d, %s", code, errOut)
	}
	tp.waitStatus(10*time.Second, "log_error for the symlink", func(d status.Document) bool {
		c := containerStatus(d, "app")
		return c.State == "running" && strings.Contains(c.LogError, "symlink")
	})
	waitFor(t, 10*time.Second, "the new run's lines on stdout", func() (bool, string) {
		out := tp.stdout.String()
		return strings.Contains(out, "app | line 2\n"), tail(out, 500)
	})
	if got, _ := os.ReadFile(secret); string(got) != secretText {
		t.Errorf("the root-only file behind the symlink was written: %q", got)
	}
	termAndWait(t, tp, 20*time.Second)
}
