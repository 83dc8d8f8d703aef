package cli

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/output"
)

// openPTY returns the terminal side of a new pseudo-terminal.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// Colour only on a terminal, and not with NO_COLOR.
func TestConsoleOutputColor(t *testing.T) {
	tty := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	colored := func(f *os.File) bool {
		var b strings.Builder
		out := output.NewStyledConsole(&b, consoleStyle(f, false))
		output.NewLineWriter("web", out, nil).Write([]byte("x\n"))
		return strings.Contains(b.String(), "\x1b[")
	}
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm")
	if !colored(tty) || colored(w) {
		t.Fatalf("terminal coloured %v, pipe coloured %v; want true, false", colored(tty), colored(w))
	}
	t.Setenv("NO_COLOR", "1")
	if colored(tty) {
		t.Fatal("coloured with NO_COLOR")
	}
}

// overlapWriter fails the test when two writes are in it at once.
type overlapWriter struct {
	inside  atomic.Int32
	overlap atomic.Bool
	lines   atomic.Int64
}

func (o *overlapWriter) Write(p []byte) (int, error) {
	if o.inside.Add(1) > 1 {
		o.overlap.Store(true)
	}
	time.Sleep(10 * time.Microsecond) // widen the window a concurrent write would use
	o.lines.Add(int64(strings.Count(string(p), "\n")))
	o.inside.Add(-1)
	return len(p), nil
}

// tend's own log and the children's stderr lines go through one lock, so a JSON log
// line never lands inside a child's line.
func TestLoggerSharesTheChildrensLock(t *testing.T) {
	var under overlapWriter
	stderr := output.NewStyledConsole(&under, output.Style{})
	log, err := newLogger(stderr, false, "json", "info")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				log.Info().Int("n", i).Msg("a log line")
			}
		}()
		go func() {
			defer wg.Done()
			lw := output.NewLineWriter("web", stderr, nil)
			for range 200 {
				lw.Write([]byte("a child line\n"))
			}
		}()
	}
	wg.Wait()
	if under.overlap.Load() || under.lines.Load() != 1600 {
		t.Fatalf("overlapping writes %v, %d lines (want none, 1600)", under.overlap.Load(), under.lines.Load())
	}
}
