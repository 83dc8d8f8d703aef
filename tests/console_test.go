package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// timeRE is the time tend puts before child lines: RFC 3339 with milliseconds.
const timeRE = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`

// Child lines on the console: into a pipe exactly "NAME | line" (no padding, no
// escape codes; the terminal's are TestConsoleAlignedOnATerminal), the time first with TEND_TIMESTAMPS;
// on stderr tend's JSON log lines and the children's lines each keep lines of their
// own. log.file lines always carry the time and the stream.
func TestConsoleLinesTimestamped(t *testing.T) {
	tp := start(t, `
init_containers:
  - name: prep
    command: ["sh", "-c", "echo prepared"]
containers:
  - name: a
    command: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo out $i; echo err $i >&2; done; touch {DIR}/a.done; exec sleep 600"]
    log: {file: a.log}
  - name: longer-name
    init: [{command: "echo from init"}]
    command: ["sh", "-c", "echo hello; touch {DIR}/b.done; exec sleep 600"]
`, runOpts{env: []string{"TEND_TIMESTAMPS=true"}})
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "a.done"))
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "b.done"))
	waitFor(t, 5*time.Second, "the last lines of a and longer-name", func() (bool, string) {
		out := tp.stdout.String()
		return strings.Contains(out, " a | out 10\n") && strings.Contains(out, " longer-name | hello\n") &&
			strings.Contains(tp.stderr.String(), " a | err 10\n"), out
	})
	termAndWait(t, tp, 20*time.Second)

	out := tp.stdout.String()
	if strings.Contains(out, "\x1b") || strings.Contains(tp.stderr.String(), "\x1b") {
		t.Errorf("escape codes into a pipe:\n%q", out)
	}
	child := regexp.MustCompile(`^` + timeRE + ` (prep|a|longer-name|longer-name/init\[0\]) \| `)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !child.MatchString(l) {
			t.Errorf("stdout line %q is not a timestamped child line", l)
		}
	}
	for _, want := range []string{" prep | prepared\n", " longer-name/init[0] | from init\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	// stderr: every line is a whole JSON log line or a whole child line.
	errLines := 0
	for _, l := range strings.Split(strings.TrimSuffix(tp.stderr.String(), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "{") && json.Valid([]byte(l)):
		case child.MatchString(l):
			errLines++
		default:
			t.Errorf("stderr line %q is neither a JSON log line nor a child line", l)
		}
	}
	if errLines != 10 {
		t.Errorf("%d child lines on stderr, want 10", errLines)
	}
	// log.file: TIME STREAM NAME | line, whatever the console shows.
	fileLine := regexp.MustCompile(`^` + timeRE + ` (stdout a \| out|stderr a \| err) \d+$`)
	got := lines(t, filepath.Join(tp.dir, "a.log"))
	for _, l := range got {
		if !fileLine.MatchString(l) {
			t.Errorf("log.file line %q is not TIME STREAM NAME | line", l)
		}
	}
	if len(got) != 20 {
		t.Errorf("%d lines in log.file, want 20", len(got))
	}
}

// On a terminal the names are padded to the longest container or init container
// name and coloured, one colour per name (TERM set, NO_COLOR unset).
func TestConsoleAlignedOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) to give tend a terminal")
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`
init_containers:
  - name: prep
    command: ["echo", "prepared"]
containers:
  - name: a
    command: ["echo", "hello"]
    restart_policy: {mode: never}
  - name: longer-name
    command: ["echo", "hi"]
    restart_policy: {mode: never}
`), 0o644)
	cmd := exec.Command("script", "-qec", tendBin+" run --log-level warn --listen unix:"+filepath.Join(dir, "tend.sock")+" "+spec, "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=xterm", "NO_COLOR=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tend on a terminal: %v\n%s", err, out)
	}
	text := strings.ReplaceAll(string(out), "\r\n", "\n")
	if !strings.Contains(text, "\x1b[") {
		t.Errorf("no colour on a terminal:\n%q", text)
	}
	plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(text, "")
	for _, want := range []string{"prep        | prepared\n", "a           | hello\n", "longer-name | hi\n"} {
		if !strings.Contains(plain, want) {
			t.Errorf("terminal output lacks %q:\n%s", want, plain)
		}
	}
}

// Without --timestamps the console lines have no time; the log.file's still have.
func TestConsoleNoTimestampsByDefault(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sh", "-c", "echo hi; touch {DIR}/done; exec sleep 600"]
    log: {file: web.log}
`)
	waitFile(t, 10*time.Second, filepath.Join(tp.dir, "done"))
	waitFor(t, 5*time.Second, "the line", func() (bool, string) {
		return strings.Contains(tp.stdout.String(), "web | hi\n"), tp.stdout.String()
	})
	termAndWait(t, tp, 20*time.Second)
	if out := tp.stdout.String(); out != "web | hi\n" {
		t.Errorf("stdout %q, want the line alone", out)
	}
	b, _ := os.ReadFile(filepath.Join(tp.dir, "web.log"))
	if !regexp.MustCompile(`^` + timeRE + ` stdout web \| hi\n$`).Match(b) {
		t.Errorf("log.file %q", b)
	}
}

// paddedName is a child line's name and the padding after it.
var paddedName = regexp.MustCompile(`(?m)^(\S+) +\| `)

// unpadded is output with the names of child lines not padded: "web | line".
func unpadded(out string) string { return paddedName.ReplaceAllString(out, "$1 | ") }

// tend run with stdout and stderr into a FIFO that nobody reads (it is open for
// reading, so the open does not block, and never read): supervision goes on. A
// container that floods its output and fails its liveness probe is still killed and
// restarted, `tend restart` answers, the dropped console lines are counted in status,
// and SIGTERM ends tend within seconds.
func TestConsoleNobodyReads(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	fifo := filepath.Join(t.TempDir(), "console")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tp := start(t, `
containers:
  - name: noisy
    command: ["sh", "-c", "while :; do seq 100000 104000; sleep 0.05; done"]
    liveness_probe:
      exec: {command: "false"}
      time_limit: {initial_delay_ms: 300, min_restart_period_ms: 100, max_restart_period_ms: 100}
      failure_threshold: 1
    restart_policy: {min_period_ms: 0, max_jitter_ms: 0}
`, runOpts{wrap: []string{"sh", "-c", `exec "$@" >` + fifo + ` 2>&1`, "sh"}})
	tp.waitStatus(20*time.Second, "console lines dropped", func(d status.Document) bool {
		return d.ConsoleDroppedLines > 0
	})
	doc, _ := tp.status()
	before := containerStatus(doc, "noisy").Restarts
	tp.waitStatus(20*time.Second, "two more liveness restarts", func(d status.Document) bool {
		return containerStatus(d, "noisy").Restarts >= before+2
	})
	if _, errOut, code := runCLITimeout(t, tp.dir, 10*time.Second, "restart", "noisy"); code != 0 {
		t.Errorf("tend restart: exit %d, %s", code, errOut)
	}
	sent, exited := termAndWait(t, tp, 15*time.Second)
	if took := exited.Sub(sent); took > 10*time.Second {
		t.Errorf("SIGTERM took %v", took)
	}
}
