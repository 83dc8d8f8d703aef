// Package proc starts processes in their own process groups and owns wait4: one
// reaper collects every exit, hands the statuses of processes started here to their
// waiters and discards those of orphans, so no exit status is ever stolen.
//
// Nothing else in the program may wait for children (os/exec's Wait, os.Process.Wait):
// every child must be started through Start or Run.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/stall"
	"github.com/tend-sh/tend/spec"
)

// Cmd is a process to start in a new process group (pgid = pid).
type Cmd struct {
	// Argv[0] is looked up in PATH of Env when it has no slash (in the standard
	// /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin when Env has no
	// PATH; empty and relative PATH entries are skipped). A path with a slash is used
	// as is; a relative one is relative to Dir.
	Argv []string
	// Env is the complete environment of the process. An entry "LISTEN_PID=" (no
	// value) is set to the process's own pid before its program runs (listenpid.go).
	Env []string
	Dir string // working directory; "" is this process's
	// Stdout and Stderr receive the output. nil discards it; an *os.File is given to
	// the child directly; any other writer is fed through a pipe by the output
	// poller (poller.go), one goroutine for every process's pipes, in pieces of at
	// most 64 KiB, and when the pipe ends (every holder of it closed it) the poller
	// calls the writer's Flush() error method if it has one. Such a writer must not
	// block: while it does, no process's output moves. The writer is never closed.
	// Stdout and Stderr that are the same writer share one pipe. Stdin is /dev/null.
	Stdout io.Writer
	Stderr io.Writer
	// Files are more descriptors of the child: its fd number (3 or more) to one of
	// ours, such as s6's notification descriptor. Other fds are closed in the child.
	Files map[int]*os.File
	// Ident is the user, groups and resource limits to run as (identity.go); nil
	// is tend's own.
	Ident *spec.Identity
	// Cgroup is the cgroup the process is in from its first instruction; nil is
	// tend's own.
	Cgroup *Cgroup
}

// Cgroup says how to place a process in a cgroup as it starts (cgroup.Group's FD and
// ProcsFiles). On cgroup v2 clone3 starts it there (CLONE_INTO_CGROUP); on v1, which
// has no such flag, the exec shim writes its own pid into each v1 hierarchy's
// cgroup.procs before it execs the program, so no fork of the program escapes. A
// hybrid host uses both: clone3 into the cgroup2 group, the shim for the v1 groups
// of the container's limits, if any.
type Cgroup struct {
	FD         int      // v2, hybrid: an open directory of the cgroup; -1 on plain v1
	ProcsFiles []string // v1: the cgroup.procs files to join (none on v2)
}

// Exit is how a process ended, or why it never started.
type Exit struct {
	Code      int            // exit code; -1 when killed by a signal or never started
	Signal    syscall.Signal // the signal that killed it, else 0
	StartErr  error          // non-nil when it could not start (missing executable, bad dir, ...)
	TimedOut  bool           // Run killed it at its time limit
	TimeLimit time.Duration  // the time limit Run enforced when TimedOut
}

// Status is the shell-style exit status: Code, 128+Signal, or 127/126 when the
// command could not start (not found / any other start error).
func (e Exit) Status() int {
	switch {
	case e.StartErr != nil && (errors.Is(e.StartErr, fs.ErrNotExist) || errors.Is(e.StartErr, exec.ErrNotFound)):
		return 127
	case e.StartErr != nil:
		return 126
	case e.Signal != 0:
		return 128 + int(e.Signal)
	}
	return e.Code
}

// Success reports a normal exit with code 0.
func (e Exit) Success() bool {
	return e.StartErr == nil && !e.TimedOut && e.Signal == 0 && e.Code == 0
}

// String describes the exit for logs and status reasons: "exit code 1",
// "killed by SIGKILL", "timed out after 1s", "cannot start: exec: \"x\": not found".
func (e Exit) String() string {
	switch {
	case e.StartErr != nil:
		return "cannot start: " + e.StartErr.Error()
	case e.TimedOut && e.TimeLimit > 0:
		return "timed out after " + e.TimeLimit.String()
	case e.TimedOut:
		return "timed out"
	case e.Signal != 0:
		return "killed by " + spec.SignalName(e.Signal)
	}
	return "exit code " + strconv.Itoa(e.Code)
}

// Process is a started process.
type Process struct {
	pid  int
	done chan struct{}
	// exit is written by the reaper before it closes done.
	exit Exit
	// reaped is written by the reaper, which holds reapMu for writing; read it
	// holding reapMu.
	reaped bool
	// onExit (OnExit) is written holding reapMu for reading and runningMu, and
	// read by the reaper, which holds reapMu for writing.
	onExit func()
	// mark is the TEND_RUN it was started with ("" if none): what is below it is that
	// run's (markCandidates).
	mark string

	outputDone chan struct{}
	output     *procOutput // the output pipes, the poller's; nil when none
}

// Start starts c in its own process group and registers it with the reaper before
// anyone can reap it. An error means nothing was started.
func Start(c Cmd) (*Process, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("empty command")
	}
	startSlots <- struct{}{}
	defer func() { <-startSlots }()
	path, err := lookPath(c.Argv[0], c.Env)
	if err != nil {
		return nil, err
	}
	if c.Dir != "" {
		if err := checkDir(c.Dir); err != nil {
			return nil, err
		}
	}
	out, err := openOutputs(c.Stdout, c.Stderr)
	if err != nil {
		return nil, err
	}
	// The child's ends are ours to close whatever happens; the read ends go to the
	// output poller on success.
	defer out.closeChildEnds()

	startReaper()
	p := &Process{done: make(chan struct{}), outputDone: make(chan struct{}), mark: envMark(c.Env)}
	attr := &syscall.ProcAttr{
		Dir:   c.Dir,
		Env:   c.Env,
		Files: withFiles(out.childFds(), c.Files),
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	}
	execPath, argv := placed(c.Ident, c.Cgroup, path, c.Argv, attr)
	if execPath == shimPath && (c.Ident == nil || !c.Ident.HasUser && len(c.Ident.Rlimits) == 0) {
		// The shim only joins a v1 cgroup: its failed execve would be an exit (127),
		// not the start error naming the program that a direct fork/exec gives. (With
		// a user or rlimits the shim's exit 126/127 is documented, and access(2) as
		// root would not answer for the user.)
		if err := checkExecutable(path, c.Dir); err != nil {
			out.closeReadEnds()
			return nil, err
		}
	}
	reapMu.RLock()
	forkBegin() // the child gets tend's starting oom_score_adj (oom.go)
	pid, err := syscall.ForkExec(execPath, argv, attr)
	forkEnd()
	if err == nil {
		p.pid = pid
		runningMu.Lock()
		running[pid] = p
		runningMu.Unlock()
	}
	reapMu.RUnlock()
	if err != nil {
		out.closeReadEnds()
		return nil, &fs.PathError{Op: "fork/exec", Path: path, Err: err}
	}
	p.output = out.watch(p.outputDone)
	return p, nil
}

// withFiles puts files at their fd numbers after the standard three; the gaps are
// closed in the child (-1).
func withFiles(fds []uintptr, files map[int]*os.File) []uintptr {
	for n, f := range files {
		for len(fds) <= n {
			fds = append(fds, ^uintptr(0))
		}
		fds[n] = f.Fd()
	}
	return fds
}

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Done is closed once the process has exited and been reaped (not when its output
// ends: a grandchild holding the pipe does not keep it alive).
func (p *Process) Done() <-chan struct{} { return p.done }

// OnExit runs f once the process has exited and been reaped, at once if it already
// has: a watcher that, unlike a goroutine waiting on Done, holds no stack while the
// process runs (a hundred idle containers). f runs on the reaper's goroutine (or the
// caller's, if reaped already) and must not block: every exit waits behind it. What
// must wait is f's to hand to a goroutine. At most one f per process.
func (p *Process) OnExit(f func()) {
	reapMu.RLock()
	runningMu.Lock()
	reaped := p.reaped
	if !reaped {
		p.onExit = f
	}
	runningMu.Unlock()
	reapMu.RUnlock()
	if reaped {
		f()
	}
}

// Exit is valid after Done is closed; before, it is Exit{Code: -1}.
func (p *Process) Exit() Exit {
	select {
	case <-p.done:
		return p.exit
	default:
		return Exit{Code: -1}
	}
}

// OutputDone is closed once the output pipes have ended: every holder of them closed
// them (the process and whatever inherited them) or CloseOutput was called, and a
// Flush of the writers was done. It is closed at start when no output goes through a
// pipe.
func (p *Process) OutputDone() <-chan struct{} { return p.outputDone }

// CloseOutput stops copying the output: the output poller closes the read ends of
// the output pipes, so a descendant that escaped the process group and keeps them
// open cannot hold them forever. What it writes afterwards gets EPIPE. OutputDone is
// closed soon after, not necessarily when CloseOutput returns.
func (p *Process) CloseOutput() {
	if p.output == nil {
		return
	}
	select {
	case <-p.outputDone:
		return
	default:
	}
	pl, _ := outputPoller() // made when the pipes were
	pl.request(pollRequest{out: p.output, close: true})
}

// Signal sends sig to the root process only. Signalling an exited process is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	reapMu.RLock()
	defer reapMu.RUnlock()
	if p.reaped {
		return nil
	}
	// Not reaped while we hold reapMu: the pid is still ours (alive or a zombie).
	if err := unix.Kill(p.pid, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("signal %s to pid %d: %w", spec.SignalName(sig), p.pid, err)
	}
	return nil
}

// SignalGroup sends sig to the whole process group. A group with no members left is not an error.
func (p *Process) SignalGroup(sig syscall.Signal) error {
	reapMu.RLock()
	defer reapMu.RUnlock()
	if p.reaped {
		// The pid stays allocated while any process still has it as its pgid, so if
		// some process has that pid now, our group is empty and the pid was reused:
		// that is someone else's process (and maybe group).
		if err := unix.Kill(p.pid, 0); err != unix.ESRCH {
			return nil
		}
	}
	if err := unix.Kill(-p.pid, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("signal %s to process group %d: %w", spec.SignalName(sig), p.pid, err)
	}
	return nil
}

// outputGrace is how long DrainOutput waits for the output pipes to end before it
// closes them (a descendant outside the group may hold them forever).
const outputGrace = time.Second

// DrainOutput waits, after the exit, for the rest of the process's output to be
// copied (an unfinished last line included), at most outputGrace, then closes it.
func (p *Process) DrainOutput() {
	grace := time.NewTimer(outputGrace)
	defer grace.Stop()
	select {
	case <-p.OutputDone():
	case <-grace.C:
		p.CloseOutput()
		<-p.OutputDone()
	}
}

// Run starts c, waits for it to exit, SIGKILLs its group when timeout (0: none)
// passes or ctx is done, and once it has exited SIGKILLs whatever it left behind in
// its process group. A start failure is reported in Exit.StartErr, not as error.
// When Run returns, the output has been copied to c.Stdout and c.Stderr.
func Run(ctx context.Context, c Cmd, timeout time.Duration) Exit {
	p, err := Start(c)
	if err != nil {
		return Exit{Code: -1, StartErr: err}
	}
	timedOut := waitExit(ctx, p, timeout)
	// On timeout or cancellation this kills the process; after an exit, whatever it
	// left in its group. A fork racing with the kill fails, so nothing survives it.
	p.SignalGroup(syscall.SIGKILL)
	<-p.Done()
	p.DrainOutput()

	e := p.Exit()
	if timedOut {
		e.TimedOut = true
		e.TimeLimit = timeout
	}
	return e
}

// waitExit waits for p to exit, at most timeout (0: none) and until ctx is done, and
// reports whether the time limit passed first. A limit that fired late
// (stall.Timer) is set again for a fresh timeout: tend was frozen, and a child that
// exited meanwhile is reaped only now.
func waitExit(ctx context.Context, p *Process, timeout time.Duration) (timedOut bool) {
	if timeout <= 0 {
		select {
		case <-p.Done():
		case <-ctx.Done():
		}
		return false
	}
	timer := stall.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case <-p.Done():
			return false
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
		select {
		case <-p.Done(): // exited just as the timer fired: that is not a timeout
			return false
		default:
		}
		if !timer.FiredLate() {
			return true
		}
		timer.Reset(timeout)
	}
}

// BecomeSubreaper makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so
// orphans of its descendants are reparented to it and reaped here. It also starts the
// reaper, so orphans are reaped even before the first Start.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become child subreaper: %w", err)
	}
	subreaper.Store(true)
	startReaper()
	return nil
}
