// Command benchfloor is the Go floor of bench/run.sh: the least any Go supervisor
// can do. It starts its child (argv[1:]), forwards SIGTERM and SIGINT to it, waits
// for it and exits with its status (128+N for a signal N). Nothing else: no config,
// no logging; run.sh builds it static with `-s -w` as tend is, so that tend's
// figures can be read as "the floor + what tend adds".
//
// With -n N it is the floor of a supervisor of N services: it starts N children one
// after the other, each in a process group of its own (an argument "{}" becomes the
// child's number, 1..N), sends a SIGTERM or SIGINT to every group, reaps every
// child, and exits when all have exited (status 0, or 1 if one failed other than by
// the forwarded signal). That is the start and the stop no Go supervisor of N
// processes can go below on the machine: its fork/execs and the kernel's exits of
// the N processes.
//
// usage: benchfloor CMD [ARG...]
//
//	benchfloor -n N CMD [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	args, n := os.Args[1:], 0
	if len(args) > 2 && args[0] == "-n" {
		var err error
		if n, err = strconv.Atoi(args[1]); err != nil || n < 1 {
			fail(2, "-n wants a positive number, not %q", args[1])
		}
		args = args[2:]
	}
	if len(args) < 1 {
		fail(2, "usage: benchfloor [-n N] CMD [ARG...]")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fail(127, "%v", err)
	}
	// Notify before the fork, so a SIGTERM right after the child started is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if n > 0 {
		os.Exit(many(n, path, args, sigs))
	}
	// syscall.ForkExec rather than os/exec: no goroutines, no pipes, the bare
	// fork/exec that every Go supervisor has to pay for.
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fail(126, "%s: %v", path, err)
	}
	go func() {
		for s := range sigs {
			_ = syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case ws.Exited():
		os.Exit(ws.ExitStatus())
	case ws.Signaled():
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(1)
}

// many starts n children of path, each in its own process group, forwards the
// signals to every group, and returns the exit status once all are reaped.
func many(n int, path string, args []string, sigs <-chan os.Signal) int {
	attr := &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{Setpgid: true}}
	pids := make([]int, 0, n)
	for i := 1; i <= n; i++ {
		argv := make([]string, len(args))
		for j, a := range args {
			argv[j] = strings.ReplaceAll(a, "{}", strconv.Itoa(i))
		}
		pid, err := syscall.ForkExec(path, argv, attr)
		if err != nil {
			for _, p := range pids {
				_ = syscall.Kill(-p, syscall.SIGKILL)
			}
			fail(126, "%s: %v", path, err)
		}
		pids = append(pids, pid)
	}
	go func() {
		for s := range sigs {
			for _, p := range pids {
				_ = syscall.Kill(-p, s.(syscall.Signal))
			}
		}
	}()
	status := 0
	for left := n; left > 0; {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 1
		}
		left--
		if !(ws.Exited() && ws.ExitStatus() == 0) &&
			!(ws.Signaled() && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGINT)) {
			status = 1
		}
	}
	return status
}

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "benchfloor: "+format+"\n", a...)
	os.Exit(code)
}
