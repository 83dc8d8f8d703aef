package tests

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// screen is a command running in a real terminal: a tmux server of its own (a
// private socket in the test's directory, so that nothing of it outlives the test),
// killed when the test ends.
type screen struct {
	t      *testing.T
	socket string
}

// newScreen runs `tend ARGS...` in a width × height terminal (TERM xterm-256color,
// NO_COLOR set, so that screens compare as text). When the command ends the pane
// shows "[exit N]".
func newScreen(t *testing.T, width, height int, args ...string) *screen {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux): the terminal tests of tend top need it")
	}
	s := &screen{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	quoted := []string{"exec", "env", "TERM=xterm-256color", "NO_COLOR=1", shellQuote(tendBin)}
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	// The shell prints how tend ended and keeps the pane (and its last screen) open.
	cmd := fmt.Sprintf("sh -c '%s; echo \"[exit $?]\"; exec sleep 3600'", strings.ReplaceAll("("+strings.Join(quoted, " ")+")", "'", `'\''`))
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	s.tmux("-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), cmd)
	return s
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (s *screen) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// text is what the terminal shows now.
func (s *screen) text() string { return s.tmux("capture-pane", "-p") }

// keys types keys (tmux's names: Enter, Escape, Up, or literal text).
func (s *screen) keys(keys ...string) { s.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...) }

// waitText waits until the screen shows every one of want, and returns it.
func (s *screen) waitText(timeout time.Duration, want ...string) string {
	s.t.Helper()
	var last string
	waitFor(s.t, timeout, fmt.Sprintf("the screen to show %q", want), func() (bool, string) {
		last = s.text()
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false, "\n" + last
			}
		}
		return true, ""
	})
	return last
}

const topSpec = `
instance: {name: top-demo}
containers:
  - name: ticker
    command: sh -c 'i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done'
  - name: sleeper
    command: sleep 1000
`

// TestTopSteersARealTend drives tend top in tmux against a real tend: the table,
// restart by key, describe, logs with a search, stop by key with y, quit with exit 0.
func TestTopSteersARealTend(t *testing.T) {
	tp := start(t, topSpec)
	doc := tp.waitStatus(10*time.Second, "both running", func(d status.Document) bool {
		return containerStatus(d, "ticker").Pid != nil && containerStatus(d, "sleeper").Pid != nil
	})
	s := newScreen(t, 100, 30, "top", "--listen", "unix:"+tp.sock)
	s.waitText(10*time.Second, "top-demo", "ticker", "sleeper", "running", "? help")

	// r restarts the selected (first) container: a new pid, one restart more.
	before := containerStatus(doc, "ticker")
	s.keys("r")
	doc = tp.waitStatus(10*time.Second, "ticker restarted", func(d status.Document) bool {
		c := containerStatus(d, "ticker")
		return c.Restarts == before.Restarts+1 && c.Pid != nil && *c.Pid != *before.Pid
	})
	s.waitText(10*time.Second, "restart ticker: ok", fmt.Sprint(*containerStatus(doc, "ticker").Pid))

	// Enter: the describe view, with its events.
	s.keys("Enter")
	s.waitText(10*time.Second, "describe ticker", "Events:", "RestartedByRequest")
	s.keys("Escape")
	s.waitText(10*time.Second, "RESTARTS")

	// l: the logs, following; / narrows them to the matching lines.
	s.keys("l")
	s.waitText(10*time.Second, "logs of ticker", "tick ")
	s.keys("/", "tick 1")
	got := s.waitText(10*time.Second, "matching /tick 1")
	for _, line := range strings.Split(got, "\n")[1:] {
		if strings.Contains(line, "tick") && !strings.Contains(line, "tick 1") {
			t.Errorf("a line that does not match /tick 1 is shown: %q\n%s", line, got)
		}
	}
	s.keys("Enter", "Escape", "Escape")
	s.waitText(10*time.Second, "RESTARTS")

	// j selects sleeper; s asks, y stops it.
	s.keys("j", "s")
	s.waitText(10*time.Second, "stop sleeper? y/n")
	s.keys("y")
	tp.waitStatus(10*time.Second, "sleeper stopped", func(d status.Document) bool {
		return containerStatus(d, "sleeper").State == status.Stopped
	})
	s.waitText(10*time.Second, "stop sleeper: ok", "stopped")

	s.keys("q")
	s.waitText(10*time.Second, "[exit 0]")
}

// TestTopUnreachableThenUp: a view started before tend says that tend does not
// answer, and shows the instance once it does; it follows a resize of its terminal.
func TestTopUnreachableThenUp(t *testing.T) {
	dir := t.TempDir()
	s := newScreen(t, 80, 24, "top", "--listen", "unix:"+filepath.Join(dir, "tend.sock"), "--interval", "200ms")
	s.waitText(10*time.Second, "tend is unreachable", "retrying every 200ms")
	start(t, topSpec, runOpts{dir: dir})
	s.waitText(20*time.Second, "top-demo", "ticker", "running")

	// A resize redraws the screen at the new size: its last line is the keys' line.
	s.tmux("resize-window", "-t", "0", "-x", "60", "-y", "15")
	waitFor(t, 10*time.Second, "the screen redrawn at 60x15", func() (bool, string) {
		lines := strings.Split(strings.TrimRight(s.text(), "\n"), "\n")
		return len(lines) == 15 && strings.HasPrefix(lines[14], "⏎ describe") && strings.Contains(lines[0], "top-demo"), "\n" + strings.Join(lines, "\n")
	})
	s.keys("q")
	s.waitText(10*time.Second, "[exit 0]")
}

// TestTopRefusedWithoutToken: over TCP without the token an action is refused (403),
// and the status line says why and what to pass, not a crash.
func TestTopRefusedWithoutToken(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tcp := "127.0.0.1:" + itoa(freePort(t))
	start(t, topSpec, runOpts{args: []string{"--listen", "unix:{DIR}/tend.sock", "--listen", tcp, "--api-token-file", tokenFile}})
	s := newScreen(t, 120, 30, "top", "--listen", tcp)
	s.waitText(10*time.Second, "top-demo", "ticker")
	s.keys("r")
	s.waitText(10*time.Second, "restart ticker: missing Authorization: Bearer token", "--api-token-file")
	s.keys("q")
	s.waitText(10*time.Second, "[exit 0]")
}

// TestTopNeedsATerminal: with stdout a pipe, tend top exits 2 pointing at tend
// status --watch.
func TestTopNeedsATerminal(t *testing.T) {
	out, err := exec.Command(tendBin, "top", "--listen", "unix:/nonexistent/tend.sock").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("tend top into a pipe: %v, want exit 2; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "tend status --watch") {
		t.Errorf("the message does not point at tend status --watch:\n%s", out)
	}
}
