// Command benchfloor is the Go floor of bench/run.sh: the least any Go supervisor
// can do. It starts its one child (argv[1:]), forwards SIGTERM and SIGINT to it,
// waits for it and exits with its status (128+N for a signal N). Nothing else: no
// flags, no config, no logging; run.sh builds it static with `-s -w` as tend is,
// so that tend's figures can be read as "the floor + what tend adds".
//
// usage: benchfloor CMD [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchfloor CMD [ARG...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchfloor: %v\n", err)
		os.Exit(127)
	}
	// Notify before the fork, so a SIGTERM right after the child started is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	// syscall.ForkExec rather than os/exec: no goroutines, no pipes, the bare
	// fork/exec that every Go supervisor has to pay for.
	pid, err := syscall.ForkExec(path, os.Args[1:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchfloor: %s: %v\n", path, err)
		os.Exit(126)
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
