package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// vmHWM is the peak resident set size of pid in KiB.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// A flood of output (an endless line with no newline, and a torrent of short lines)
// does not grow tend's memory past a fixed bound, and does not block another
// container's output.
func TestOutputFloodHasBoundedMemory(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, `
containers:
  - name: calm
    command: ["sh", "-c", "while [ ! -e {DIR}/go ]; do sleep 0.01; done; while true; do echo calm; date +%s%N >> {DIR}/calm; sleep 0.05; done"]
  - name: endless
    command: ["sh", "-c", "while [ ! -e {DIR}/go ]; do sleep 0.01; done; head -c 100000000 /dev/zero | tr '\\0' a; touch {DIR}/endless.done; exec sleep 600"]
  - name: lines
    command: ["sh", "-c", "while [ ! -e {DIR}/go ]; do sleep 0.01; done; yes 'a short line of output' | head -c 100000000; touch {DIR}/lines.done; exec sleep 600"]
`, runOpts{discard: true})
	pid := tp.pid()
	tp.waitStatus(10*time.Second, "running", func(d status.Document) bool { return d.State == status.InstanceRunning })
	before := vmHWM(t, pid)
	if err := os.WriteFile(filepath.Join(tp.dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFile(t, 60*time.Second, filepath.Join(tp.dir, "endless.done"))
	waitFile(t, 60*time.Second, filepath.Join(tp.dir, "lines.done"))
	after := vmHWM(t, pid)
	// The race detector's shadow memory inflates tend's own heap several times; the
	// bound is still far below the 200 MB that went through.
	t.Logf("peak RSS before the flood %d KiB, after %d KiB", before, after)
	if grew := after - before; grew > 64*1024 {
		t.Errorf("tend's peak RSS grew by %d KiB while 200 MB of output went through (from %d to %d KiB)", grew, before, after)
	}
	if n := len(lines(t, filepath.Join(tp.dir, "calm"))); n < 3 {
		t.Errorf("the calm container wrote %d lines during the flood", n)
	}
	termAndWait(t, tp, 20*time.Second)
}

// log.file (relative to instance.dir, whatever the working_dir) gets the same
// prefixed lines as tend's stdout.
func TestLogFile(t *testing.T) {
	tp := start(t, `
containers:
  - name: talker
    working_dir: sub
    command: ["sh", "-c", "echo one; echo two >&2; touch {DIR}/done; exec sleep 600"]
    log: {file: logs/talker.log}
init_containers:
  - name: mkdir
    command: ["mkdir", "-p", "{DIR}/sub"]
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "done"))
	waitFor(t, 5*time.Second, "both lines in the log file", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(tp.dir, "logs", "talker.log"))
		return strings.Contains(string(b), "talker | one\n") && strings.Contains(string(b), "talker | two\n"), string(b)
	})
}
