package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// thePoller starts the output poller, as the first pipe does, and returns it.
func thePoller(t *testing.T) *poller {
	t.Helper()
	pl, err := outputPoller()
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// registered counts the descriptors in the poller's epoll instance (its eventfd included).
func registered(t *testing.T, pl *poller) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pl.epfd))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\ntfd:")
}

func openFds(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// waitPipesGone waits until no more pipes are registered with pl and no more
// descriptors are open than before (regs, fds). Other tests' processes may still be
// ending (their pipes, a scan's pidfds): the counts are waited for to come back, and
// a leak of the test's own pipes would not.
func waitPipesGone(t *testing.T, pl *poller, regs, fds int) {
	t.Helper()
	waitFor(t, "pipes unregistered", func() (bool, string) {
		got := registered(t, pl)
		return got <= regs, fmt.Sprintf("%d registered, %d before", got, regs)
	})
	waitFor(t, "descriptors closed", func() (bool, string) {
		got := openFds(t)
		return got <= fds, fmt.Sprintf("%d open, %d before", got, fds)
	})
}

func waitOutput(t *testing.T, p *Process, what string) {
	t.Helper()
	select {
	case <-p.OutputDone():
	case <-time.After(testTimeout):
		t.Fatalf("%s: output did not end within %s", what, testTimeout)
	}
}

// slowWriter takes a while over each write, like a log file on a slow disk, and
// counts the bytes.
type slowWriter struct{ n atomic.Int64 }

func (w *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// TestFloodDoesNotStarveOthers: a process that writes without pause, to a writer
// slower than it, still leaves the poller time for the others' output.
func TestFloodDoesNotStarveOthers(t *testing.T) {
	var flooded slowWriter
	flood := start(t, Cmd{Argv: []string{"yes"}, Stdout: &flooded})
	var out syncBuffer
	c := sh(`for i in 1 2 3 4 5; do echo $i; sleep 0.02; done`)
	c.Stdout = &out
	quiet := start(t, c)
	waitDone(t, quiet)
	waitOutput(t, quiet, "the quiet process")
	if out.String() != "1\n2\n3\n4\n5\n" {
		t.Fatalf("quiet process's output %q", out.String())
	}
	select {
	case <-flood.Done():
		t.Fatal("the flood ended early")
	default:
	}
	if flooded.n.Load() == 0 {
		t.Fatal("nothing of the flood was read")
	}
	flood.SignalGroup(syscall.SIGKILL)
	waitOutput(t, flood, "the flood")
}

// TestCloseOutputWithPendingData: CloseOutput ends the output of a process that never
// stops writing, and its read end is closed and unregistered.
func TestCloseOutputWithPendingData(t *testing.T) {
	pl := thePoller(t)
	fds, regs := openFds(t), registered(t, pl)
	var w slowWriter
	p := start(t, Cmd{Argv: []string{"yes"}, Stdout: &w})
	waitFor(t, "output", func() (bool, string) { return w.n.Load() > 0, "nothing read" })
	p.CloseOutput()
	waitOutput(t, p, "after CloseOutput")
	// yes writes to a pipe without a reader now: SIGPIPE.
	if got := waitDone(t, p); got.Signal != syscall.SIGPIPE {
		t.Errorf("yes ended with %v, want SIGPIPE", got)
	}
	p.CloseOutput() // again: nothing left to do
	waitPipesGone(t, pl, regs, fds)
}

// failingWriter fails every write and must never be flushed.
type failingWriter struct{ flushed atomic.Bool }

func (w *failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken") }
func (w *failingWriter) Flush() error              { w.flushed.Store(true); return nil }

// TestWriteErrorKeepsDraining: after the writer fails, the pipe is still read (and
// dropped), so the child does not block on a full pipe.
func TestWriteErrorKeepsDraining(t *testing.T) {
	var w failingWriter
	c := sh(`head -c 1000000 /dev/zero`)
	c.Stdout = &w
	p := start(t, c)
	if got := waitDone(t, p); !got.Success() {
		t.Fatalf("got %v", got)
	}
	waitOutput(t, p, "after the write error")
	if w.flushed.Load() {
		t.Error("a failed writer was flushed")
	}
}

// TestManyProcessesLeaveNothingBehind: running processes cost no goroutine each, and
// once they have exited no descriptor stays open or registered and no goroutine is left.
func TestManyProcessesLeaveNothingBehind(t *testing.T) {
	const n = 200
	pl := thePoller(t)
	// What the first start of tend's life opens for good (the reaper's children file,
	// oom_score_adj) is not left behind: open it before counting, whatever ran first.
	first := start(t, Cmd{Argv: []string{"true"}, Stdout: &syncBuffer{}})
	waitDone(t, first)
	first.DrainOutput()
	goroutines, fds, regs := runtime.NumGoroutine(), openFds(t), registered(t, pl)
	procs := make([]*Process, n)
	for i := range procs {
		procs[i] = start(t, Cmd{Argv: []string{"sleep", "1000"}, Stdout: &syncBuffer{}, Stderr: &syncBuffer{}})
	}
	waitFor(t, "pipes registered", func() (bool, string) {
		got := registered(t, pl)
		return got == regs+2*n, strconv.Itoa(got - regs)
	})
	if more := runtime.NumGoroutine() - goroutines; more > n/10 {
		t.Errorf("%d more goroutines for %d running processes", more, n)
	}
	for _, p := range procs {
		p.SignalGroup(syscall.SIGKILL)
	}
	for _, p := range procs {
		waitDone(t, p)
		p.DrainOutput()
	}
	waitPipesGone(t, pl, regs, fds)
	waitFor(t, "goroutines gone", func() (bool, string) {
		got := runtime.NumGoroutine()
		return got <= goroutines, strconv.Itoa(got - goroutines)
	})
}
