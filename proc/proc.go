// Package proc starts processes in their own process groups and owns wait4: one
// reaper collects every exit, hands the statuses of processes started here to their
// waiters and discards those of orphans, so no exit status is ever stolen.
package proc

import (
	"context"
	"io"
	"syscall"
	"time"
)

// Cmd is a process to start in a new process group (pgid = pid).
type Cmd struct {
	Argv []string // Argv[0] is looked up in PATH of Env when it has no slash
	Env  []string
	Dir  string
	// Stdout and Stderr receive the output. nil discards it; an *os.File is given to
	// the child directly; any other writer is fed through a pipe by a goroutine that
	// copies in fixed-size chunks.
	Stdout io.Writer
	Stderr io.Writer
}

// Exit is how a process ended, or why it never started.
type Exit struct {
	Code     int            // exit code; -1 when killed by a signal or never started
	Signal   syscall.Signal // the signal that killed it, else 0
	StartErr error          // non-nil when it could not start (missing executable, bad dir, ...)
	TimedOut bool           // Run killed it at its time limit
}

// Status is the shell-style exit status: Code, 128+Signal, or 127/126 when the
// command could not start (not found / any other start error).
func (e Exit) Status() int { panic("TODO") }

// Success reports a normal exit with code 0.
func (e Exit) Success() bool { panic("TODO") }

// String describes the exit for logs and status reasons: "exit code 1",
// "killed by SIGKILL", "timed out after 1s", "cannot start: exec: \"x\": not found".
func (e Exit) String() string { panic("TODO") }

// Process is a started process.
type Process struct{}

// Start starts c in its own process group and registers it with the reaper before
// anyone can reap it. An error means nothing was started.
func Start(c Cmd) (*Process, error) { panic("TODO") }

// Pid is the process id, which is also its process group id.
func (p *Process) Pid() int { panic("TODO") }

// Done is closed once the process has exited and been reaped (not when its output
// ends: a grandchild holding the pipe does not keep it alive).
func (p *Process) Done() <-chan struct{} { panic("TODO") }

// Exit is valid after Done is closed.
func (p *Process) Exit() Exit { panic("TODO") }

// Signal sends sig to the root process only. Signalling an exited process is not an error.
func (p *Process) Signal(sig syscall.Signal) error { panic("TODO") }

// SignalGroup sends sig to the whole process group. A group with no members left is not an error.
func (p *Process) SignalGroup(sig syscall.Signal) error { panic("TODO") }

// Run starts c, waits for it to exit, SIGKILLs its group when timeout (0: none)
// passes or ctx is done, and once it has exited SIGKILLs whatever it left behind in
// its process group. A start failure is reported in Exit.StartErr, not as error.
func Run(ctx context.Context, c Cmd, timeout time.Duration) Exit { panic("TODO") }

// BecomeSubreaper makes this process a child subreaper (PR_SET_CHILD_SUBREAPER), so
// orphans of its descendants are reparented to it and reaped here.
func BecomeSubreaper() error { panic("TODO") }
