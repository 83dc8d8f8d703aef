package probes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/spec"
)

func execHandler(argv ...string) spec.Handler {
	return spec.Handler{Exec: &spec.Exec{Command: spec.Command{List: argv, IsList: true}}}
}

func TestExecCheck(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "marker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	target := Target{Env: append(os.Environ(), "PROBE_VAR=bar"), Dir: dir}
	tests := []struct {
		name   string
		argv   []string
		ok     bool
		detail string
	}{
		{name: "exit 0", argv: []string{"true"}, ok: true},
		{name: "exit 1", argv: []string{"false"}, detail: "exit code 1"},
		{name: "exit 3", argv: []string{"sh", "-c", "exit 3"}, detail: "exit code 3"},
		{name: "env of the container", argv: []string{"sh", "-c", `test "$PROBE_VAR" = bar`}, ok: true},
		{name: "dir of the container", argv: []string{"test", "-f", "marker"}, ok: true},
		{name: "killed", argv: []string{"sh", "-c", "kill -KILL $$"}, detail: "killed by SIGKILL"},
		{name: "output in the reason", argv: []string{"sh", "-c", "echo first; echo 'cat: /tmp/healthy: No such file or directory' >&2; exit 1"},
			detail: "exit code 1: cat: /tmp/healthy: No such file or directory"},
		{name: "output of a success", argv: []string{"echo", "fine"}, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(context.Background(), execHandler(tt.argv...), target, 5*time.Second)
			if got.OK != tt.ok || got.Detail != tt.detail {
				t.Errorf("Check(%q) = {OK: %v, Detail: %q}, want {OK: %v, Detail: %q}", tt.argv, got.OK, got.Detail, tt.ok, tt.detail)
			}
		})
	}
	got := Check(context.Background(), execHandler("/nonexistent/probe"), target, time.Second)
	if got.OK || got.Detail == "" {
		t.Errorf("Check of a missing executable = {OK: %v, Detail: %q}, want a failure with a reason", got.OK, got.Detail)
	}
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	// The grandchild sleeps forever and its parent waits for it: only killing the
	// whole group ends both.
	script := fmt.Sprintf("sleep 1000 & echo $! > %s; wait", pidFile)
	// Never hang the suite: if the time limit is not enforced, kill the group ourselves.
	t.Cleanup(func() { killGroupOf(pidFile) })
	checked := make(chan Result, 1)
	go func() {
		checked <- Check(context.Background(), execHandler("sh", "-c", script), Target{Env: os.Environ()}, 300*time.Millisecond)
	}()
	var got Result
	select {
	case got = <-checked:
	case <-time.After(10 * time.Second):
		t.Fatal("the check did not end 10s after its 300ms time limit")
	}
	if got.OK || got.Detail != "timed out after 300ms" {
		t.Errorf("Check = {OK: %v, Detail: %q}, want a failure \"timed out after 300ms\"", got.OK, got.Detail)
	}
	if got.Duration > 5*time.Second {
		t.Errorf("Duration = %v, want about 300ms", got.Duration)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the probe never started its grandchild: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 5*time.Second)
}

// killGroupOf SIGKILLs the process group of the pid written in pidFile, if any.
func killGroupOf(pidFile string) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return
	}
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// waitGone waits until pid no longer runs (it is gone or a zombie nobody reaped yet).
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var state string
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
			state = string(stat[i+2])
			if state == "Z" || state == "X" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive (state %s) %v after the probe timed out", pid, state, within)
		}
		<-tick.C
	}
}

func TestExecCancelKillsProcess(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "probe.pid")
	script := fmt.Sprintf("echo $$ > %s; exec sleep 1000", pidFile)
	p := probeSpec(execHandler("sh", "-c", script), limits{minPeriod: 10, maxPeriod: 10, backOff: 1}, 1, 1)
	t.Cleanup(func() { killGroupOf(pidFile) })
	events, cancel, done := started(t, Liveness, p, Target{Env: os.Environ()}, 1)
	deadline := time.Now().Add(5 * time.Second)
	var pid int
	for pid == 0 {
		if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec probe never started")
		}
		select {
		case ev := <-events:
			t.Fatalf("unexpected event %+v while the check runs", ev)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("probe goroutine did not exit after cancel")
	}
	waitGone(t, pid, 5*time.Second)
}

func TestTailKeepsTheEnd(t *testing.T) {
	var w tail
	for i := range 1000 {
		fmt.Fprintf(&w, "line %d\n", i)
	}
	if got := w.lastLine(); got != "line 999" {
		t.Errorf("lastLine = %q, want \"line 999\"", got)
	}
	if len(w.buf) > tailSize {
		t.Errorf("kept %d bytes, more than %d", len(w.buf), tailSize)
	}
	w.Write([]byte(strings.Repeat("x", 3*tailSize) + "\n"))
	if got := w.lastLine(); got != strings.Repeat("x", 200)+"..." {
		t.Errorf("lastLine of a long line = %q", got)
	}
}
