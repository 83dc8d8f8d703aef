package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// fakeV2Group is a v2 group "web" on a fixture tree, with every usage file, and its
// directory.
func fakeV2Group(t *testing.T) (*Group, string) {
	t.Helper()
	root, start := fakeV2(t, "cpu memory pids")
	tree, err := Open(root, "auto", 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := tree.Group(KindContainers, "web")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(start, "containers/web")
	writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 2500000\n")
	writeFixture(t, filepath.Join(dir, "memory.current"), "1000\n")
	writeFixture(t, filepath.Join(dir, "memory.stat"), "inactive_file 400\n")
	writeFixture(t, filepath.Join(dir, "pids.current"), "3\n")
	writeFixture(t, filepath.Join(dir, "memory.events"), "oom_kill 1\n")
	writeFixture(t, filepath.Join(dir, "cgroup.procs"), "")
	return g, dir
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// Usage keeps its files open across samples, reads what they hold now, and Remove
// closes them.
func TestUsageKeepsFilesOpen(t *testing.T) {
	g, dir := fakeV2Group(t)
	before := openFDs(t)
	if u, err := g.Usage(); err != nil || u.MemoryBytes != 600 {
		t.Fatalf("Usage = %+v, %v; want 600 bytes", u, err)
	}
	opened := openFDs(t)
	writeFixture(t, filepath.Join(dir, "memory.current"), "5000\n") // same file, rewritten
	for range 5 {
		if u, err := g.Usage(); err != nil || u.MemoryBytes != 4600 {
			t.Fatalf("Usage after a change = %+v, %v; want 4600 bytes (read anew)", u, err)
		}
	}
	if n := openFDs(t); n != opened || opened <= before {
		t.Errorf("open descriptors: %d before, %d after one Usage, %d after six; want files opened once and kept", before, opened, n)
	}
	g.Remove()
	if n := openFDs(t); n >= before {
		t.Errorf("open descriptors after Remove = %d, want fewer than %d (the kept files and the group's fd closed)", n, before)
	}
}

// Usage after Remove is an error: its files are closed, and are not read again (nor
// would a descriptor number reused by another file be read as the group's).
func TestUsageAfterRemoveIsAnError(t *testing.T) {
	g, _ := fakeV2Group(t)
	if _, err := g.Usage(); err != nil {
		t.Fatal(err)
	}
	g.Remove() // the fixture directory holds files, so it stays: only the group is done
	u, err := g.Usage()
	if !errors.Is(err, errRemoved) || u != (Usage{}) {
		t.Errorf("Usage after Remove = %+v, %v; want an error saying it was removed", u, err)
	}
}

// The sampler's Usage runs while the container's exit path kills and removes the
// group: with -race, this fails if they share anything unguarded.
func TestUsageConcurrentWithKillAndRemove(t *testing.T) {
	for range 20 {
		g, _ := fakeV2Group(t)
		var wg sync.WaitGroup
		wg.Add(2)
		for range 2 {
			go func() {
				defer wg.Done()
				for range 50 {
					g.Usage()
				}
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := g.Kill(ctx); err != nil {
			t.Error(err)
		}
		cancel()
		g.Remove()
		wg.Wait()
		if _, err := g.Usage(); !errors.Is(err, errRemoved) {
			t.Errorf("Usage after Remove = %v, want removed", err)
		}
	}
}

// Usage reads the counts that only a running process changes (processes, OOM kills)
// again only once the group's CPU time has moved: while it stands still none of the
// group's processes ran, so none forked, exited or was OOM-killed. Here the files
// change without it, which a real group cannot do, to see which sample read them.
func TestUsageReadsProcessCountsAgainOnlyAfterTheGroupRan(t *testing.T) {
	t.Run("v2", func(t *testing.T) {
		g, dir := fakeV2Group(t)
		if u, err := g.Usage(); err != nil || u.Pids != 3 || u.OOMKills != 1 {
			t.Fatalf("Usage = %+v, %v; want 3 pids, 1 OOM kill", u, err)
		}
		writeFixture(t, filepath.Join(dir, "pids.current"), "5\n")
		writeFixture(t, filepath.Join(dir, "memory.events"), "oom_kill 2\n")
		writeFixture(t, filepath.Join(dir, "memory.current"), "5000\n")
		if u, err := g.Usage(); err != nil || u.Pids != 3 || u.OOMKills != 1 || u.MemoryBytes != 4600 {
			t.Fatalf("Usage at the same CPU time = %+v, %v; want 3 pids and 1 OOM kill as before, memory read anew (4600)", u, err)
		}
		writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 2500001\n")
		if u, err := g.Usage(); err != nil || u.Pids != 5 || u.OOMKills != 2 {
			t.Fatalf("Usage after the group ran = %+v, %v; want 5 pids, 2 OOM kills", u, err)
		}
	})
	t.Run("hybrid", func(t *testing.T) {
		root, _, unified := fakeHybrid(t)
		tree, _ := Open(root, "auto", 1)
		defer tree.Close()
		g, _ := tree.Group(KindContainers, "web")
		dir := filepath.Join(unified, "containers/web")
		sleep := reapedSleep(t)
		writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 1000\n")
		writeFixture(t, filepath.Join(dir, "cgroup.procs"), itoa(int64(sleep.Process.Pid))+"\n")
		if u, err := g.Usage(); err != nil || u.Pids != 1 {
			t.Fatalf("Usage of a sleep = %+v, %v; want 1 pid", u, err)
		}
		writeFixture(t, filepath.Join(dir, "cgroup.procs"), itoa(int64(sleep.Process.Pid))+"\n"+itoa(int64(os.Getpid()))+"\n")
		if u, err := g.Usage(); err != nil || u.Pids != 1 {
			t.Fatalf("Usage at the same CPU time = %+v, %v; want the sleep's 1 pid as before", u, err)
		}
		writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 2000\n")
		if u, err := g.Usage(); err != nil || u.Pids < 2 {
			t.Fatalf("Usage after the group ran = %+v, %v; want the sleep and this process's threads", u, err)
		}
	})
}

// Usage takes a group's CPU time from its last reading while the CPU time of every
// group of its kind (<start>/containers/cpu.stat) reads the same: none of their
// processes ran. As above, the files here change in ways a real tree cannot.
func TestUsageReadsCPUAgainOnlyAfterItsKindRan(t *testing.T) {
	defer func(fresh time.Duration) { kindCPUFresh = fresh }(kindCPUFresh)
	kindCPUFresh = 0 // every Usage reads the kind's CPU time
	g, dir := fakeV2Group(t)
	kind := filepath.Dir(dir)
	writeFixture(t, filepath.Join(kind, "cpu.stat"), "usage_usec 7000000\n")
	if u, err := g.Usage(); err != nil || u.CPUSeconds != 2.5 {
		t.Fatalf("Usage = %+v, %v; want 2.5 s", u, err)
	}
	writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 3500000\n")
	writeFixture(t, filepath.Join(dir, "memory.current"), "5000\n")
	if u, err := g.Usage(); err != nil || u.CPUSeconds != 2.5 || u.MemoryBytes != 4600 {
		t.Fatalf("Usage while the kind's CPU time stands = %+v, %v; want 2.5 s as before, memory read anew (4600)", u, err)
	}
	writeFixture(t, filepath.Join(kind, "cpu.stat"), "usage_usec 8000000\n")
	if u, err := g.Usage(); err != nil || u.CPUSeconds != 3.5 {
		t.Fatalf("Usage after the kind ran = %+v, %v; want 3.5 s", u, err)
	}
	writeFixture(t, filepath.Join(dir, "cpu.stat"), "usage_usec 4500000\n")
	writeFixture(t, filepath.Join(kind, "cpu.stat"), "usage_usec ?\n") // unreadable: nothing is taken from before
	if u, err := g.Usage(); err != nil || u.CPUSeconds != 4.5 {
		t.Fatalf("Usage without the kind's CPU time = %+v, %v; want 4.5 s", u, err)
	}
}
