package proc

import (
	"os"
	"strings"
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
	if n := KillMarked(mark, 5*time.Second); n != 2 {
		t.Errorf("KillMarked = %d, want 2 (the command and its setsid child)", n)
	}
	waitDone(t, p)
	waitGone(t, gc)
	if s, _ := procState(kept.Pid()); s == "" || s == "Z" {
		t.Error("a process of another run was killed")
	}
}
