package proc

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestRunMarks(t *testing.T) {
	tests := []struct{ mark, instance string }{
		{"/srv/app/web/3", "/srv/app"},
		{"/srv/app/web/x/3", "/srv/app/web"},
		{"web/3", ""},
		{"3", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := markInstance(tt.mark); got != tt.instance {
			t.Errorf("markInstance(%q) = %q, want %q", tt.mark, got, tt.instance)
		}
	}
	a, b := NewRunMark("/srv/app", "web"), NewRunMark("/srv/app", "web")
	if a == b || !strings.HasPrefix(a, "/srv/app/web/") || markInstance(a) != "/srv/app" {
		t.Errorf("NewRunMark = %q, %q; want two marks of /srv/app/web", a, b)
	}
	env := WithRunMark([]string{"A=1", "TEND_RUN=/outer/x/1", "B=2"}, a)
	if strings.Join(env, " ") != "A=1 B=2 TEND_RUN="+a {
		t.Errorf("WithRunMark = %q, want the outer mark replaced", env)
	}
}

// KillMarked kills a marked process that left its process group, not an unmarked one
// nor one with another run's mark.
func TestKillMarked(t *testing.T) {
	mark, other := NewRunMark("/srv/app", "web"), NewRunMark("/srv/app", "web")
	dir := t.TempDir()
	c := sh(`setsid sh -c 'echo $$ > ` + dir + `/gc.new && mv ` + dir + `/gc.new ` + dir + `/gc.pid; exec sleep 600' & exec sleep 600`)
	c.Env = WithRunMark(os.Environ(), mark)
	keep := sh(`exec sleep 600`)
	keep.Env = WithRunMark(os.Environ(), other)
	p := start(t, c)
	kept := start(t, keep)
	gc := readPidFile(t, dir+"/gc.pid")
	t.Cleanup(func() { syscall.Kill(gc, syscall.SIGKILL) })
	// Once the setsid child runs sleep, its mv has exited: two processes carry the mark
	// (a scan while mv was still exiting counted three).
	waitFor(t, "the setsid child running sleep", func() (bool, string) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", gc))
		return strings.TrimSpace(string(b)) == "sleep", string(b)
	})
	if n := KillMarked(mark, 5*time.Second); n != 2 {
		t.Errorf("KillMarked = %d, want 2 (the command and its setsid child)", n)
	}
	waitDone(t, p)
	waitGone(t, gc)
	if s, _ := procState(kept.Pid()); s == "" || s == "Z" {
		t.Error("a process of another run was killed")
	}
}

// Runs that end together share the scans: ten kills asked for while a scan is under
// way are served by the next scan and one that finds none, not by two scans each
// (a stop with N containers read every process N times).
func TestKillMarkedSharesScans(t *testing.T) {
	const n = 10
	var marks []string
	for i := 0; i < n; i++ {
		marks = append(marks, NewRunMark("/srv/app", fmt.Sprintf("c%d", i)))
		// sleep itself, not sh exec'ing it: a process in the middle of an exec shows
		// an empty environment, and the scan would not see its mark.
		c := Cmd{Argv: []string{"sleep", "600"}, Env: WithRunMark(os.Environ(), marks[i])}
		start(t, c)
	}
	keep := sh(`exec sleep 600`)
	keep.Env = WithRunMark(os.Environ(), NewRunMark("/srv/app", "other"))
	kept := start(t, keep)

	var scans atomic.Int32
	first, release := make(chan struct{}), make(chan struct{})
	sweepScanned = func() {
		if scans.Add(1) == 1 {
			close(first)
			<-release
		}
	}
	t.Cleanup(func() { sweepScanned = func() {} })
	killed := make(chan int, n)
	kill := func(mark string) { killed <- KillMarked(mark, 10*time.Second) }
	go kill(marks[0])
	<-first // the first scan is under way: the others wait for the next
	for _, m := range marks[1:] {
		go kill(m)
	}
	waitFor(t, "nine kills waiting", func() (bool, string) {
		sweep.mu.Lock()
		defer sweep.mu.Unlock()
		return len(sweep.pending) == n-1, fmt.Sprintf("%d waiting", len(sweep.pending))
	})
	close(release)
	for i := 0; i < n; i++ {
		if k := <-killed; k != 1 {
			t.Errorf("KillMarked = %d, want 1", k)
		}
	}
	// 1: the first mark's process; 2: the nine others' (the first finds none);
	// 3: none of the nine.
	if s := scans.Load(); s != 3 {
		t.Errorf("%d scans for %d runs ending together, want 3", s, n)
	}
	if s, _ := procState(kept.Pid()); s == "" || s == "Z" {
		t.Error("a process of another run was killed")
	}
}

// The exits the reaper hands over together share one scan even on one P: the
// sweeper yields before it scans, so that the other callbacks made ready with the
// first reach its list (it ran next and scanned for each alone: 50 scans in a stop
// of 50 containers).
func TestKillMarkedCallsMadeReadyTogetherShareAScan(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var scans atomic.Int32
	sweepScanned = func() { scans.Add(1) }
	t.Cleanup(func() { sweepScanned = func() {} })
	const n = 10
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() { // as the reaper does: every callback started, then it waits
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				KillMarked(NewRunMark("/srv/app", fmt.Sprintf("gone%d", i)), 10*time.Second)
			}()
		}
		wg.Wait()
		close(done)
	}()
	<-done
	if s := scans.Load(); s > 2 {
		t.Errorf("%d scans for %d kills made ready together, want 1 or 2", s, n)
	}
}

// What a run left when its command exited is an orphan of this process (its
// subreaper): KillMarked finds it among the main thread's children, whichever thread
// forked the command, and kills it; a marked orphan of another run lives on.
func TestKillMarkedOrphans(t *testing.T) {
	dir := t.TempDir()
	mark, other := NewRunMark("/srv/app", "web"), NewRunMark("/srv/app", "web")
	var orphans []int
	for i, m := range []string{mark, mark, other} {
		// Started from goroutines of their own, so that the forks come from several
		// threads of this process.
		done := make(chan *Process)
		go func() {
			c := sh(fmt.Sprintf(`setsid sleep 600 & echo $! > %s/o%d.new && mv %s/o%d.new %s/o%d.pid`, dir, i, dir, i, dir, i))
			c.Env = WithRunMark(os.Environ(), m)
			done <- start(t, c)
		}()
		waitDone(t, <-done)
		o := readPidFile(t, fmt.Sprintf("%s/o%d.pid", dir, i))
		t.Cleanup(func() { syscall.Kill(o, syscall.SIGKILL) })
		waitFor(t, "the orphan running sleep", func() (bool, string) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", o))
			return strings.TrimSpace(string(b)) == "sleep", string(b)
		})
		orphans = append(orphans, o)
	}
	if n := KillMarked(mark, 5*time.Second); n != 2 {
		t.Errorf("KillMarked = %d, want 2 (the run's two orphans)", n)
	}
	waitGone(t, orphans[0])
	waitGone(t, orphans[1])
	if s, _ := procState(orphans[2]); s == "" || s == "Z" {
		t.Error("an orphan of another run was killed")
	}
}

// A process in the middle of an exec shows an empty environment for a moment; the
// scan reads it again and still finds its mark. The process here does nothing but
// exec itself, so a scan often meets it mid-exec (before the fix, about one scan in
// three missed it). A process whose environment really is empty is not killed.
func TestKillMarkedMidExec(t *testing.T) {
	dir := t.TempDir()
	script := dir + "/reexec.sh"
	if err := os.WriteFile(script, []byte("exec /bin/sh \"$0\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := start(t, Cmd{Argv: []string{"env", "-i", "/bin/sleep", "600"}})
	for i := 0; i < 20; i++ {
		mark := NewRunMark("/srv/app", "reexec")
		p := start(t, Cmd{Argv: []string{"/bin/sh", script}, Env: WithRunMark(os.Environ(), mark)})
		if n := KillMarked(mark, 5*time.Second); n != 1 {
			t.Fatalf("scan %d: KillMarked = %d, want 1 (a process exec'ing itself)", i, n)
		}
		waitDone(t, p)
	}
	if s, _ := procState(bare.Pid()); s == "" || s == "Z" {
		t.Error("a process with an empty environment was killed")
	}
}
