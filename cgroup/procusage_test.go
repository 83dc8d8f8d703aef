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

func TestProcSamplerFixture(t *testing.T) {
	root := t.TempDir()
	proc := func(pid string) string { return filepath.Join(root, "proc", pid, "stat") }
	writeFixture(t, proc("100"), stat("100", "web", 100, 150, 50, 0, 0, 1, 10))
	writeFixture(t, proc("200"), stat("200", "other", 200, 999, 999, 0, 0, 9, 9999))
	s := NewProcSampler(root)
	defer s.Close()
	groups := map[int]bool{100: true}
	page := int64(os.Getpagesize())
	read := func(want Usage) {
		t.Helper()
		got, err := s.Read(groups)
		if err != nil || got[100] != want || len(got) != 1 {
			t.Fatalf("Read = %+v, %v; want only 100: %+v", got, err, want)
		}
	}
	read(Usage{CPUSeconds: 2, MemoryBytes: 10 * page, Pids: 1})
	// A process appears in the group; the kept one's counts grow.
	writeFixture(t, proc("101"), stat("101", "worker", 100, 10, 0, 0, 0, 2, 5))
	writeFixture(t, proc("100"), stat("100", "web", 100, 250, 50, 0, 0, 1, 10))
	read(Usage{CPUSeconds: 3.1, MemoryBytes: 15 * page, Pids: 3})
	// One exits; the other leaves the group.
	if err := os.RemoveAll(filepath.Join(root, "proc", "101")); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, proc("100"), stat("100", "web", 300, 250, 50, 0, 0, 1, 10))
	if got, err := s.Read(groups); err != nil || len(got) != 0 {
		t.Fatalf("Read = %+v, %v; want nothing in group 100", got, err)
	}
	if len(s.procs) != 2 || s.kept != 0 {
		t.Errorf("sampler knows %d pids and keeps %d open; want 2 and 0", len(s.procs), s.kept)
	}
}

// A container's first process may be listed between its fork and the setpgid that
// makes its group, while it is still in tend's: it is read again when its group is
// first asked about.
func TestProcSamplerReadsAgainForANewGroup(t *testing.T) {
	root := t.TempDir()
	proc := func(pid string) string { return filepath.Join(root, "proc", pid, "stat") }
	writeFixture(t, proc("100"), stat("100", "web", 100, 150, 50, 0, 0, 1, 10))
	writeFixture(t, proc("300"), stat("300", "tend", 1, 0, 0, 0, 0, 1, 10)) // forked, not yet in its group
	s := NewProcSampler(root)
	defer s.Close()
	if got, err := s.Read(map[int]bool{100: true}); err != nil || len(got) != 1 {
		t.Fatalf("Read = %+v, %v; want group 100 only", got, err)
	}
	writeFixture(t, proc("300"), stat("300", "job", 300, 7, 3, 0, 0, 1, 20)) // setpgid(0, 0), exec
	page := int64(os.Getpagesize())
	got, err := s.Read(map[int]bool{100: true, 300: true})
	want := Usage{CPUSeconds: 0.1, MemoryBytes: 20 * page, Pids: 1}
	if err != nil || got[300] != want {
		t.Fatalf("Read = %+v, %v; want group 300: %+v", got, err, want)
	}
	if s.kept != 2 {
		t.Errorf("%d descriptors kept; want 2 (a process of each group)", s.kept)
	}
}

// The sampler runs every second: garbage it made would have the collector grow tend's
// heap to its goal for nothing (bench/README.md in its git history, "Usage sampling").
func TestProcSamplerAllocatesNothing(t *testing.T) {
	root := t.TempDir()
	for pid := 100; pid < 110; pid++ {
		writeFixture(t, filepath.Join(root, "proc", itoa(int64(pid)), "stat"), stat(itoa(int64(pid)), "p", 100+int64(pid%2), 1, 1, 0, 0, 1, 10))
	}
	writeFixture(t, filepath.Join(root, "proc/meminfo"), "MemTotal: 1 kB\n")
	s := NewProcSampler(root)
	defer s.Close()
	groups := map[int]bool{100: true, 101: true}
	if _, err := s.Read(groups); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, func() { s.Read(groups) }); n != 0 {
		t.Errorf("Read allocates %.1f times a sample; want 0", n)
	}
}

func TestProcSamplerReal(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 0.3 & sleep 100 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startCmd(t, cmd)
	s := NewProcSampler("/")
	defer s.Close()
	groups := map[int]bool{cmd.Process.Pid: true}
	pids := func() int64 {
		u, err := s.Read(groups)
		if err != nil {
			t.Fatal(err)
		}
		return u[cmd.Process.Pid].Pids
	}
	waitFor(t, "sh and two sleeps in the process group", func() (bool, string) {
		n := pids()
		return n == 3, itoa(n) + " pids"
	})
	waitFor(t, "the first sleep gone", func() (bool, string) {
		n := pids()
		return n == 2, itoa(n) + " pids"
	})
	if s.kept != 2 {
		t.Errorf("%d descriptors kept; want 2 (sh and the sleep that runs)", s.kept)
	}
}
