package container

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/tend-sh/tend/internal/stall"
	"github.com/tend-sh/tend/output"
	"github.com/tend-sh/tend/probes"
	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/spec"
	"github.com/tend-sh/tend/status"
)

// A process's health has three parts (docs/reference.md "Probes"): the startup probe, which
// holds the other two until it passes; liveness; and readiness. Polled probes
// (http_get, tcp_socket, exec) run in package probes; the other kinds are signals of
// the process itself: READY=1 on the notify socket, a newline on its notification
// descriptor, or an output line that matches log_line. All of them reach the loop as
// events tagged with the run they are about. This file starts and stops what watches
// a run (probes, signals, the watchdog and the deadline); events.go takes what they
// report.

// readySignal is a readiness signal of a run, and where it came from.
type readySignal struct {
	run     uint64
	startup bool   // for the startup probe (else the readiness probe)
	what    string // for the log: "READY=1", "a line matching ...", "fd 3"
}

// runHealth is the health state of one run of the process.
type runHealth struct {
	startupPassed bool
	readyPending  bool // the readiness signal came before the startup probe passed
	startupCancel context.CancelFunc
	notifyFD      *os.File      // the read end of s6's notification pipe
	notify        *notifySocket // NOTIFY_SOCKET when a probe uses systemd's protocol
	// failing is the last failure event recorded of each probe kind in the current
	// streak of failures, "" while it passes (recordProbe).
	failing [3]string
}

// processEnv is the environment of the container's processes: the configured one,
// and NOTIFY_SOCKET and WATCHDOG_USEC when a probe uses systemd's protocol.
func (l *loop) processEnv() []string {
	if l.health.notify == nil {
		return l.cfg.Env
	}
	env := append(append([]string(nil), l.cfg.Env...), "NOTIFY_SOCKET="+l.health.notify.addr)
	if ms := l.watchdogMs(); ms > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(ms*1000, 10))
	}
	return env
}

// notifyProbe returns the probe that uses systemd's protocol (fd unset), if any.
func notifyProbe(sc *spec.Container) *spec.Probe {
	for _, p := range []*spec.Probe{sc.StartupProbe, sc.ReadinessProbe} {
		if p != nil && p.Notify != nil && !p.Notify.FD.IsSet() {
			return p
		}
	}
	return nil
}

func (l *loop) watchdogMs() int64 {
	if p := notifyProbe(l.sc); p != nil && p.Notify.WatchdogMs.IsSet() {
		return p.Notify.WatchdogMs.Get()
	}
	return 0
}

// startHooks is what a run needs before it starts: the log_line matchers, s6's
// notification pipe and systemd's notify socket. The returned files go to the child.
func (l *loop) startHooks() ([]*output.LineMatch, map[int]*os.File, error) {
	var ms []*output.LineMatch
	var files map[int]*os.File
	run := l.runID + 1 // the id the run about to start gets
	if err := l.openNotify(run); err != nil {
		return nil, nil, err
	}
	for _, p := range []*spec.Probe{l.sc.StartupProbe, l.sc.ReadinessProbe} {
		if p == nil {
			continue
		}
		sig := readySignal{run: run, startup: p == l.sc.StartupProbe}
		switch {
		case p.LogLine.IsSet():
			ready, done := l.readyChan(), l.c.done
			sig.what = "a line matching " + strconv.Quote(p.LogLine.Get())
			ms = append(ms, output.NewLineMatch(p.LogLineRegexp(), func() { sendSignal(ready, done, sig) }))
		case p.Notify != nil && p.Notify.FD.IsSet():
			r, w, err := os.Pipe()
			if err != nil {
				return nil, nil, fmt.Errorf("notification pipe: %w", err)
			}
			l.health.notifyFD = r
			files = map[int]*os.File{p.Notify.FD.Get(): w}
			sig.what = fmt.Sprintf("a newline on fd %d", p.Notify.FD.Get())
			go readNotifyFD(r, l.readyChan(), l.c.done, sig)
		}
	}
	return ms, files, nil
}

// openNotify opens the notify socket of run, when a probe uses systemd's protocol.
// Each run gets a socket of its own, closed when it ends (stopHealth): a datagram an
// earlier run sent just before it exited (READY=1, then exit) dies with that run's
// socket, in the kernel, instead of being read once the next run has started. A
// drain of one kept socket at each start would race with the goroutine reading it.
func (l *loop) openNotify(run uint64) error {
	if notifyProbe(l.sc) == nil {
		return nil
	}
	s, err := openNotifySocket(l.sc.Name)
	if err != nil {
		return err
	}
	l.health.notify = s
	go s.serve(l.notifyChan(), l.c.done, run)
	return nil
}

// sendSignal hands a readiness signal to the loop without blocking the output path:
// a log_line match runs on proc's output poller, which reads every container's
// output, and the loop may be waiting for that output to end (DrainOutput). With the
// buffer full (runs' signals not taken yet) a goroutine of its own delivers it.
func sendSignal(ready chan<- readySignal, done <-chan struct{}, sig readySignal) {
	select {
	case ready <- sig:
	case <-done:
	default:
		go func() {
			select {
			case ready <- sig:
			case <-done:
			}
		}()
	}
}

// readNotifyFD waits for the first newline on s6's notification pipe.
func readNotifyFD(r *os.File, ready chan<- readySignal, done <-chan struct{}, sig readySignal) {
	if _, err := bufio.NewReader(r).ReadString('\n'); err == nil {
		sendSignal(ready, done, sig)
	}
}

// startHealth starts what watches a new run: the startup probe first, or liveness
// and readiness at once; the watchdog and the deadline.
func (l *loop) startHealth() {
	ctx, cancel := context.WithCancel(context.Background())
	l.probeCancel = cancel
	l.health.startupPassed = l.sc.StartupProbe == nil
	now := time.Now()
	if sp := l.sc.StartupProbe; sp != nil {
		l.st.Ready.Set(false, status.ReasonStartupProbe, "startup probe has not succeeded yet", now)
		if probes.Polled(sp) {
			sctx, scancel := context.WithCancel(ctx)
			l.health.startupCancel = scancel
			probes.Start(sctx, probes.Startup, sp, l.target(), l.runID, l.probeChan(), l.c.history(probes.Startup))
		}
	} else {
		l.startRunProbes(ctx)
	}
	if ms := l.watchdogMs(); ms > 0 {
		l.watchdog = stall.NewTimer(time.Duration(ms) * time.Millisecond)
		l.watchdogC = l.watchdog.C
	}
	if d := spec.Ms(l.sc.MaxRunMs); d > 0 {
		l.deadline = time.NewTimer(d)
		l.deadlineC = l.deadline.C
	}
}

// startRunProbes starts liveness and readiness (once the startup probe passed).
func (l *loop) startRunProbes(ctx context.Context) {
	now := time.Now()
	if lp := l.sc.LivenessProbe; lp != nil {
		probes.Start(ctx, probes.Liveness, lp, l.target(), l.runID, l.probeChan(), l.c.history(probes.Liveness))
	}
	rp := l.sc.ReadinessProbe
	switch {
	case rp == nil:
		l.st.Ready.Set(true, status.ReasonRunning, "", now)
	case probes.Polled(rp):
		l.st.Ready.Set(false, status.ReasonNotProbed, "readiness probe has not succeeded yet", now)
		probes.Start(ctx, probes.Readiness, rp, l.target(), l.runID, l.probeChan(), l.c.history(probes.Readiness))
	case l.health.readyPending:
		l.st.Ready.Set(true, status.ReasonReady, "", now)
	default:
		l.st.Ready.Set(false, status.ReasonNotReady, "waiting for "+waitsFor(rp), now)
	}
}

// waitsFor names the signal a readiness or startup probe waits for.
func waitsFor(p *spec.Probe) string {
	switch {
	case p.LogLine.IsSet():
		return "a line matching " + strconv.Quote(p.LogLine.Get())
	case p.Notify != nil && p.Notify.FD.IsSet():
		return fmt.Sprintf("a newline on fd %d", p.Notify.FD.Get())
	}
	return "READY=1 on NOTIFY_SOCKET"
}

func (l *loop) target() probes.Target {
	return probes.Target{Env: proc.WithRunMark(l.cfg.Env, l.mark), Dir: l.cfg.Dir, Container: l.sc.Name, Ident: l.sc.Identity(), Cgroup: l.c.Placement()}
}

// stopHealth stops everything startHealth started.
func (l *loop) stopHealth() {
	if l.probeCancel != nil {
		l.probeCancel()
		l.probeCancel = nil
	}
	if l.health.notifyFD != nil {
		l.health.notifyFD.Close()
	}
	if l.health.notify != nil {
		l.health.notify.close()
	}
	l.health = runHealth{}
	if l.watchdog != nil {
		l.watchdog.Stop()
	}
	if l.deadline != nil {
		l.deadline.Stop()
	}
	l.watchdog, l.watchdogC, l.deadline, l.deadlineC = nil, nil, nil, nil
}

// startupPassed ends the startup probe: liveness and readiness take over.
func (l *loop) startupPassed(how string) {
	if l.health.startupPassed {
		return
	}
	l.health.startupPassed = true
	if l.health.startupCancel != nil {
		l.health.startupCancel()
	}
	l.log.Info().Str("by", how).Msg("startup probe passed")
	ctx, cancel := context.WithCancel(context.Background())
	prev := l.probeCancel
	l.probeCancel = func() { cancel(); prev() }
	l.startRunProbes(ctx)
	l.publish()
}

// kill SIGKILLs the process group for reason (its last_exit reason); the restart
// policy takes it from there.
func (l *loop) kill(reason string) {
	l.killReason = status.ExitReason(reason)
	l.log.Warn().Str("reason", reason).Msg("killing the process group")
	l.record(status.Warning, status.ReasonKilled, reason)
	l.st.Alive.Set(false, status.ReasonKilled, reason, time.Now())
	_ = l.proc.SignalGroup(syscall.SIGKILL)
	l.publish()
}

// becomeReady makes the container ready by a signal of its readiness probe; one that
// comes before the startup probe passed is kept until then.
func (l *loop) becomeReady(what string) {
	if !l.health.startupPassed {
		l.health.readyPending = true
		return
	}
	if l.st.Ready.Set(true, status.ReasonReady, "", time.Now()) {
		l.log.Info().Str("by", what).Msg("ready")
		l.publish()
	}
}

// believe reports whether a notify message comes from the running process: itself
// (though it left its process group) or a process of its group (docs/reference.md
// "Readiness by notification"). A sender that exited before tend could look up its
// group is not believed: it may as well have been a process of an earlier run, or
// of another container of the same user.
func (l *loop) believe(m notifyMsg) bool {
	switch {
	case m.pid == 0:
		// A sender outside tend's PID namespace: never one of its containers.
	case m.pid == l.proc.Pid(), m.pgrp == l.proc.Pid():
		return true
	}
	l.log.Debug().Int("pid", m.pid).Int("pgrp", m.pgrp).Msg("notify message from outside the container ignored")
	return false
}
