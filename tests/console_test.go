package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// timeRE is the time tend puts before child lines: RFC 3339 with milliseconds.
const timeRE = `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)`

// Child lines on the console: names padded to the longest container or init
// container name, no escape codes into a pipe, the time first with TEND_TIMESTAMPS;
// on stderr tend's JSON log lines and the children's lines each keep lines of their
// own. log.file lines always carry the time and the stream.
func TestConsoleLinesAlignedAndTimestamped(t *testing.T) {
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
		return strings.Contains(out, "a           | out 10\n") && strings.Contains(out, "longer-name | hello\n") &&
			strings.Contains(tp.stderr.String(), "a           | err 10\n"), out
	})
	termAndWait(t, tp, 20*time.Second)

	out := tp.stdout.String()
	if strings.Contains(out, "\x1b") || strings.Contains(tp.stderr.String(), "\x1b") {
		t.Errorf("escape codes into a pipe:\n%q", out)
	}
	child := regexp.MustCompile(`^` + timeRE + ` (prep {7}|a {10}|longer-name|longer-name/init\[0\]) \| `)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !child.MatchString(l) {
			t.Errorf("stdout line %q is not a timestamped, aligned child line", l)
		}
	}
	for _, want := range []string{"prep        | prepared\n", "longer-name/init[0] | from init\n"} {
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
