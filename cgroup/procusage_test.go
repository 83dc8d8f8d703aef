package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// stat builds a /proc/PID/stat line with the fields UsageFromProc reads.
func stat(pid, comm string, pgrp, utime, stime, cutime, cstime, threads, rss int64) string {
	return pid + " (" + comm + ") S 1 " + itoa(pgrp) + " " + itoa(pgrp) + " 0 -1 4194560 100 0 0 0 " +
		itoa(utime) + " " + itoa(stime) + " " + itoa(cutime) + " " + itoa(cstime) + " 20 0 " +
		itoa(threads) + " 0 12345 10485760 " + itoa(rss) + " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
}

func TestUsageFromProcFixture(t *testing.T) {
	root := t.TempDir()
	writeFixture(t, filepath.Join(root, "proc/100/stat"), stat("100", "web", 100, 150, 50, 100, 0, 4, 1000))
	writeFixture(t, filepath.Join(root, "proc/101/stat"), stat("101", "a) (b c", 100, 25, 25, 0, 0, 1, 24))
	writeFixture(t, filepath.Join(root, "proc/200/stat"), stat("200", "other", 200, 999, 999, 0, 0, 9, 9999))
	writeFixture(t, filepath.Join(root, "proc/self/stat"), stat("1", "tend", 100, 999, 999, 0, 0, 9, 9999))
	u, err := UsageFromProc(100, root)
	page := int64(os.Getpagesize())
	want := Usage{CPUSeconds: 3.5, MemoryBytes: 1024 * page, Pids: 5}
	if err != nil || u != want {
		t.Errorf("UsageFromProc = %+v, %v; want %+v", u, err, want)
	}
}

func TestUsageFromProcReal(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 100 & sleep 100 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startCmd(t, cmd)
	waitFor(t, "sh and two sleeps in the process group", func() (bool, string) {
		u, err := UsageFromProc(cmd.Process.Pid, "/")
		return err == nil && u.Pids == 3 && u.MemoryBytes > 0, itoa(u.Pids) + " pids"
	})
}
