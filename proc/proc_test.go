package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/tend-sh/tend/internal/testutil"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testTimeout bounds every wait in these tests; nothing should take nearly as long.
const testTimeout = 10 * time.Second

func TestMain(m *testing.M) {
	// Orphans of the tests' children come to this process and are reaped by the
	// reaper, so nothing is left behind in the machine and zombies can be counted.
	if err := BecomeSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func sh(script string) Cmd {
	return Cmd{Argv: []string{"sh", "-c", script}, Env: os.Environ()}
}

// start starts c and kills its process group when the test ends.
func start(t *testing.T, c Cmd) *Process {
	t.Helper()
	p, err := Start(c)
	if err != nil {
		t.Fatalf("start %q: %v", c.Argv, err)
	}
	t.Cleanup(func() { p.SignalGroup(syscall.SIGKILL) })
	return p
}

func waitDone(t *testing.T, p *Process) Exit {
	t.Helper()
	select {
	case <-p.Done():
		return p.Exit()
	case <-time.After(testTimeout):
		t.Fatalf("pid %d did not exit within %s", p.Pid(), testTimeout)
		return Exit{}
	}
}

// waitFor waits until cond holds, failing with what it last saw after testTimeout.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last saw %s", what, testTimeout, saw)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readPidFile waits for a child to write its readiness file holding a pid.
func readPidFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, "pid file "+path, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err.Error()
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil, fmt.Sprintf("%q", b)
	})
	return pid
}

// procState is the state letter of pid from /proc, "" when there is no such process.
func procState(pid int) (state string, ppid int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid
}

// waitGone waits until pid no longer exists (killed and, as we are its subreaper, reaped).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("pid %d gone", pid), func() (bool, string) {
		state, _ := procState(pid)
		return state == "", "state " + state
	})
}

// ourZombies lists the zombie children of this test process.
func ourZombies() []int {
	entries, _ := os.ReadDir("/proc")
	var zombies []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, ppid := procState(pid); state == "Z" && ppid == os.Getpid() {
			zombies = append(zombies, pid)
		}
	}
	return zombies
}

func TestExitCodesAndSignals(t *testing.T) {
	tests := []struct {
		script string
		want   Exit
		status int
		str    string
	}{
		{"exit 0", Exit{Code: 0}, 0, "exit code 0"},
		{"exit 3", Exit{Code: 3}, 3, "exit code 3"},
		{"kill -TERM $$", Exit{Code: -1, Signal: syscall.SIGTERM}, 143, "killed by SIGTERM"},
		{"kill -KILL $$", Exit{Code: -1, Signal: syscall.SIGKILL}, 137, "killed by SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			got := Run(context.Background(), sh(tt.script), testTimeout)
			if got != tt.want {
				t.Fatalf("Run: got %+v, want %+v", got, tt.want)
			}
			if got.Status() != tt.status || got.String() != tt.str || got.Success() != (tt.status == 0) {
				t.Errorf("got status %d %q success %v, want %d %q", got.Status(), got.String(), got.Success(), tt.status, tt.str)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		cmd    Cmd
		status int
		str    string
	}{
		{"not in PATH", Cmd{Argv: []string{"tend-no-such-command"}, Env: os.Environ()}, 127,
			`cannot start: exec: "tend-no-such-command": not found`},
		{"missing path", Cmd{Argv: []string{"/nonexistent/cmd"}}, 127,
			"cannot start: fork/exec /nonexistent/cmd: no such file or directory"},
		{"not executable", Cmd{Argv: []string{script}}, 126,
			"cannot start: fork/exec " + script + ": permission denied"},
		{"not executable in PATH", Cmd{Argv: []string{"not-executable"}, Env: []string{"PATH=/nonexistent:" + dir}}, 126,
			"cannot start: exec " + script + ": permission denied"},
		{"bad dir", Cmd{Argv: []string{"/bin/true"}, Dir: filepath.Join(dir, "missing")}, 126,
			"cannot start: working directory " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{"dir is a file", Cmd{Argv: []string{"/bin/true"}, Dir: script}, 126,
			"cannot start: working directory " + script + ": not a directory"},
		{"empty", Cmd{}, 126, "cannot start: empty command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := Start(tt.cmd); err == nil {
				p.SignalGroup(syscall.SIGKILL)
				t.Fatalf("Start: started pid %d, want an error", p.Pid())
			}
			got := Run(context.Background(), tt.cmd, testTimeout)
			if got.StartErr == nil || got.Code != -1 {
				t.Fatalf("Run: got %+v, want a start error", got)
			}
			if got.Status() != tt.status || got.String() != tt.str {
				t.Errorf("got status %d %q, want %d %q", got.Status(), got.String(), tt.status, tt.str)
			}
		})
	}
}

func TestPathLookupUsesCmdEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tend-test-cmd"), []byte("#!/bin/sh\nexit 5\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH=/nonexistent:"+dir) // the last PATH wins
	if got := Run(context.Background(), Cmd{Argv: []string{"tend-test-cmd"}, Env: env}, testTimeout); got.Code != 5 {
		t.Fatalf("got %v, want exit code 5", got)
	}
	// The same name is not found with tend's own PATH.
	if got := Run(context.Background(), Cmd{Argv: []string{"tend-test-cmd"}, Env: os.Environ()}, testTimeout); got.Status() != 127 {
		t.Fatalf("got %v, want not found", got)
	}
}

func TestDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	c := sh(`echo "$TEND_TEST_VAR $(pwd)"`)
	c.Env = append(c.Env, "TEND_TEST_VAR=hello")
	c.Dir = dir
	c.Stdout = &out
	if got := Run(context.Background(), c, testTimeout); !got.Success() {
		t.Fatalf("got %v", got)
	}
	if want := "hello " + dir + "\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

func TestOwnProcessGroup(t *testing.T) {
	p := start(t, sh("sleep 1000"))
	pgid, err := unix.Getpgid(p.Pid())
	if err != nil || pgid != p.Pid() {
		t.Fatalf("pgid of %d: %d, %v; want its own group", p.Pid(), pgid, err)
	}
	p.SignalGroup(syscall.SIGKILL)
	waitDone(t, p)
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	began := time.Now()
	got := Run(context.Background(), sh(`sleep 1000 & echo $! > `+pidFile+`; wait`), 500*time.Millisecond)
	if !got.TimedOut || got.Signal != syscall.SIGKILL || got.String() != "timed out after 500ms" || got.Success() {
		t.Fatalf("got %+v (%v), want timed out and killed", got, got)
	}
	if elapsed := time.Since(began); elapsed > testTimeout {
		t.Fatalf("Run took %s", elapsed)
	}
	waitGone(t, readPidFile(t, pidFile))
}

func TestRunKillsLeftoversAfterExit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	got := Run(context.Background(), sh(`sleep 1000 & echo $! > `+pidFile+`; exit 0`), testTimeout)
	if !got.Success() || got.TimedOut {
		t.Fatalf("got %+v, want exit code 0", got)
	}
	waitGone(t, readPidFile(t, pidFile))
}

func TestRunContextCancel(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan Exit, 1)
	go func() { result <- Run(ctx, sh(`echo $$ > `+ready+`; sleep 1000`), 0) }()
	readPidFile(t, ready)
	cancel()
	select {
	case got := <-result:
		if got.Signal != syscall.SIGKILL || got.TimedOut {
			t.Fatalf("got %+v, want killed by SIGKILL", got)
		}
	case <-time.After(testTimeout):
		t.Fatal("Run did not return after cancel")
	}
}

func TestSignal(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	// The shell waits in the interruptible builtin wait, so the trap runs at once.
	p := start(t, sh(`trap 'exit 42' TERM; sleep 1000 & echo $! > `+ready+`; wait`))
	sleeper := readPidFile(t, ready)
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, p); got.Code != 42 {
		t.Fatalf("got %v, want exit code 42", got)
	}
	// Only the root got it: the sleeper is still there.
	if state, _ := procState(sleeper); state == "" || state == "Z" {
		t.Fatalf("sleeper %d: state %q, want alive", sleeper, state)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("Signal after exit: %v", err)
	}
	if err := p.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, sleeper)
	if err := p.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatalf("SignalGroup of an empty group: %v", err)
	}
}

// TestNoStolenStatuses starts processes concurrently while orphans exit and are reaped:
// every process gets its own exit code and no zombie is left.
func TestNoStolenStatuses(t *testing.T) {
	const n = 50
	orphansBefore := OrphansReaped()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	doubleForks := 0
	for i := range n {
		code := rand.IntN(100) + 1
		script := fmt.Sprintf("exit %d", code)
		if i%2 == 0 {
			doubleForks++
			script = fmt.Sprintf("(sleep 0.1; exit 7) & exit %d", code)
		}
		wg.Go(func() {
			p, err := Start(sh(script))
			if err != nil {
				errs <- err
				return
			}
			t.Cleanup(func() { p.SignalGroup(syscall.SIGKILL) })
			select {
			case <-p.Done():
				if got := p.Exit(); got != (Exit{Code: code}) {
					errs <- fmt.Errorf("%q (pid %d): got %+v", script, p.Pid(), got)
				}
			case <-time.After(testTimeout):
				errs <- fmt.Errorf("%q (pid %d) did not exit", script, p.Pid())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitFor(t, "orphans reaped", func() (bool, string) {
		got := OrphansReaped() - orphansBefore
		return got >= uint64(doubleForks), fmt.Sprintf("%d of %d", got, doubleForks)
	})
	waitFor(t, "no zombies", func() (bool, string) {
		z := ourZombies()
		return len(z) == 0, fmt.Sprint("zombies ", z)
	})
}

func TestGrandchildHoldingPipeDoesNotDelayDone(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	var out syncBuffer
	c := sh(`sleep 1000 & echo $! > ` + pidFile + `; echo hello; exit 3`)
	c.Stdout = &out
	p := start(t, c)
	if got := waitDone(t, p); got.Code != 3 {
		t.Fatalf("got %v, want exit code 3", got)
	}
	sleeper := readPidFile(t, pidFile)
	select {
	case <-p.OutputDone():
		t.Fatal("output ended while the grandchild holds the pipe")
	default:
	}
	if err := p.SignalGroup(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.OutputDone():
	case <-time.After(testTimeout):
		t.Fatal("output did not end after the group was killed")
	}
	if out.String() != "hello\n" {
		t.Fatalf("output %q", out.String())
	}
	waitGone(t, sleeper)
}

func TestCloseOutputReleasesCopier(t *testing.T) {
	// The grandchild leaves the process group, so killing the group does not end the pipe.
	pidFile := filepath.Join(t.TempDir(), "escaped")
	c := sh(`setsid sleep 1000 & echo $! > ` + pidFile)
	c.Stdout = &syncBuffer{}
	p := start(t, c)
	waitDone(t, p)
	escaped := readPidFile(t, pidFile)
	t.Cleanup(func() { unix.Kill(escaped, syscall.SIGKILL); waitGone(t, escaped) })
	p.SignalGroup(syscall.SIGKILL)
	p.CloseOutput()
	select {
	case <-p.OutputDone():
	case <-time.After(testTimeout):
		t.Fatal("CloseOutput did not end the copier")
	}
}

// flushCounter records everything written to it and how often it was flushed.
type flushCounter struct {
	syncBuffer
	mu      sync.Mutex // guards flushes
	flushes int
}

func (f *flushCounter) Flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	return nil
}

func TestOutputToWriterArrivesCompletely(t *testing.T) {
	// Both streams into one writer share one pipe, so it is flushed once at its end.
	var out flushCounter
	c := sh(`seq 1 200000; echo err >&2; printf tail`)
	c.Stdout = &out
	c.Stderr = &out
	got := Run(context.Background(), c, testTimeout)
	if !got.Success() {
		t.Fatalf("got %v", got)
	}
	var want strings.Builder
	for i := 1; i <= 200000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("err\ntail")
	if out.String() != want.String() {
		t.Fatalf("output of %d bytes differs from the expected %d", len(out.String()), want.Len())
	}
	if out.flushes != 1 {
		t.Fatalf("flushed %d times, want once", out.flushes)
	}
}

func TestOutputToFileAndSeparateStreams(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stderr syncBuffer
	c := sh(`echo to-file; echo to-buffer >&2`)
	c.Stdout = f
	c.Stderr = &stderr
	if got := Run(context.Background(), c, testTimeout); !got.Success() {
		t.Fatalf("got %v", got)
	}
	b, _ := os.ReadFile(f.Name())
	if string(b) != "to-file\n" || stderr.String() != "to-buffer\n" {
		t.Fatalf("stdout file %q, stderr %q", b, stderr.String())
	}
}

func TestExitStatusOfStartErrors(t *testing.T) {
	notExist := Exit{Code: -1, StartErr: &fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.ENOENT}}
	denied := Exit{Code: -1, StartErr: &fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.EACCES}}
	other := Exit{Code: -1, StartErr: errors.New("boom")}
	if notExist.Status() != 127 || denied.Status() != 126 || other.Status() != 126 {
		t.Fatalf("statuses %d %d %d, want 127 126 126", notExist.Status(), denied.Status(), other.Status())
	}
	if (Exit{TimedOut: true, Code: -1, Signal: syscall.SIGKILL, TimeLimit: 1500 * time.Millisecond}).String() != "timed out after 1.5s" {
		t.Fatal("timed out string")
	}
}

// syncBuffer collects output that is written while the test reads it.
type syncBuffer = testutil.SyncBuffer

// TestChildDescriptorModes checks what the child gets: stdin /dev/null read-only,
// and blocking descriptors (programs expect them), the output pipe's included.
func TestChildDescriptorModes(t *testing.T) {
	for range 2 { // the second start shares /dev/null with the first
		var out syncBuffer
		c := sh(`for fd in 0 1 2; do sed -n "s/^flags:[[:space:]]*/$fd /p" /proc/self/fdinfo/$fd; done; readlink /proc/self/fd/0`)
		c.Stdout = &out
		if got := Run(context.Background(), c, testTimeout); !got.Success() {
			t.Fatalf("got %v", got)
		}
		lines := strings.Fields(out.String())
		if len(lines) != 7 || lines[6] != os.DevNull {
			t.Fatalf("child saw %q", out.String())
		}
		for i := 0; i < 3; i++ {
			flags, err := strconv.ParseUint(lines[2*i+1], 8, 32)
			if err != nil {
				t.Fatalf("fd %d flags %q: %v", i, lines[2*i+1], err)
			}
			if flags&syscall.O_NONBLOCK != 0 {
				t.Errorf("fd %d is non-blocking (flags %o)", i, flags)
			}
			if i == 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
				t.Errorf("stdin is not read-only (flags %o)", flags)
			}
		}
	}
}

// OnExit runs its function once the process has been reaped, with the exit known,
// whether it was registered before the exit or after; no goroutine waits for it
// meanwhile, and the function may signal.
func TestOnExit(t *testing.T) {
	p, err := Start(sh("read x; exit 3")) // stdin is /dev/null: exits at once
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	late := make(chan Exit, 1)
	p.OnExit(func() { late <- p.Exit() })
	if got := waitExitValue(t, late); got.Code != 3 {
		t.Errorf("OnExit after the exit: %+v, want code 3", got)
	}

	p, err = Start(sh("sleep 0.5; exit 4"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.SignalGroup(syscall.SIGKILL) })
	before := runtime.NumGoroutine()
	early := make(chan Exit, 1)
	// It may signal: it runs once the reaper has let go of the lock SignalGroup takes.
	p.OnExit(func() { _ = p.SignalGroup(syscall.SIGKILL); early <- p.Exit() })
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("OnExit before the exit started %d goroutines", n-before)
	}
	if got := waitExitValue(t, early); got.Code != 4 {
		t.Errorf("OnExit before the exit: %+v, want code 4", got)
	}
}

func waitExitValue(t *testing.T, c <-chan Exit) Exit {
	t.Helper()
	select {
	case e := <-c:
		return e
	case <-time.After(testTimeout):
		t.Fatal("OnExit's function did not run")
		return Exit{}
	}
}
