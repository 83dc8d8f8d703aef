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
	if n := strings.Count(tp.stderr.String(), "writing the log file works again"); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
}
