package proc

import (
	"os"
	"os/signal"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The reaper is the only caller of wait4 in the process. Start registers a child while
// it holds reapMu for reading, in the same critical section as the fork, and the
// reaper holds reapMu for writing around its wait4 loop, so a child can never be
// reaped before its Process is registered. Holding reapMu (either way) also pins a
// registered pid: while it is held, the child is alive or a zombie, so its pid (and
// process group id) cannot be reused.
//
// A read lock, not a mutex, so that starts do not wait for each other: a fork holds
// it until its child has exec'd (ForkExec returns then), which with a thousand
// containers' pipes open is a few hundred microseconds of the kernel closing them in
// the child; a mutex made every other start, and the reaper, queue behind that.
var (
	reaperOnce sync.Once
	reapMu     sync.RWMutex
	runningMu  sync.Mutex           // guards running among the starts holding reapMu for reading
	running    = map[int]*Process{} // registered children not yet reaped, by pid
	orphans    atomic.Uint64
)

// OrphansReaped is how many exited processes the reaper collected that were not started
// by Start: orphans reparented to this process (as subreaper or PID 1).
func OrphansReaped() uint64 { return orphans.Load() }

// startReaper installs the SIGCHLD handler and the reaping goroutine, once. It must run
// before the first fork so that no SIGCHLD can be missed.
func startReaper() {
	reaperOnce.Do(func() {
		openChildren() // before the first exit's scan for marks needs it
		sigchld := make(chan os.Signal, 1)
		signal.Notify(sigchld, unix.SIGCHLD)
		go func() {
			// Children that exited before the handler was installed sent their
			// SIGCHLD to nobody; collect them now.
			reap()
			for range sigchld {
				reap()
			}
		}()
	})
}

// reap collects every child that has exited. SIGCHLD coalesces (one signal for many
// exits) and the channel holds one pending signal, so it loops until wait4 reports that
// no exited child is left; an exit after the last wait4 raises a new SIGCHLD.
//
// The exit callbacks (OnExit) run after, on the reaper's goroutine, once reapMu is
// released: they may signal (SignalGroup takes it for reading).
func reap() {
	for _, f := range reapExited() {
		f()
	}
}

// reapExited reaps every exited child and returns the exit callbacks to run.
func reapExited() (callbacks []func()) {
	reapMu.Lock()
	defer reapMu.Unlock()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 { // ECHILD: no children; 0: none exited yet
			return callbacks
		}
		p, ok := running[pid]
		if !ok {
			orphans.Add(1)
			continue
		}
		delete(running, pid)
		p.exit = exitOf(ws)
		p.reaped = true
		close(p.done)
		if p.onExit != nil {
			callbacks = append(callbacks, p.onExit)
		}
	}
}

func exitOf(ws unix.WaitStatus) Exit {
	if ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal()}
	}
	return Exit{Code: ws.ExitStatus()}
}
