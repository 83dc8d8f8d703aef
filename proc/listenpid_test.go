package proc

import (
	"context"
	"os"
	"strings"
	"testing"
)

// An empty LISTEN_PID is the started process's own pid by the time its program runs
// (the exec shim sets it, keeping its pid across the execve); other variables and
// the working directory arrive as they would without the shim.
func TestListenPIDIsTheProcessOwnPid(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	c := sh(`echo "$LISTEN_PID $$ $LISTEN_FDS $(pwd)"`)
	c.Env = append(c.Env, "LISTEN_FDS=1", listenPIDUnset)
	c.Dir = dir
	c.Stdout = &out
	p := start(t, c)
	if e := waitDone(t, p); !e.Success() {
		t.Fatalf("exit %v", e)
	}
	p.DrainOutput()
	f := strings.Fields(out.String())
	if len(f) != 4 || f[0] != f[1] || f[2] != "1" || f[3] != dir {
		t.Fatalf("output %q: want LISTEN_PID equal to $$, LISTEN_FDS 1 and %s", out.String(), dir)
	}
	if f[0] == "" || f[0] == "0" {
		t.Fatalf("LISTEN_PID unset: %q", out.String())
	}
}

// The cost of the shim: a start to exit of /bin/true directly, and through the shim
// for LISTEN_PID (docs/design.md "Performance" has the figures).
func BenchmarkStartDirect(b *testing.B) { benchStart(b, os.Environ()) }

func BenchmarkStartListenPID(b *testing.B) {
	benchStart(b, append(os.Environ(), listenPIDUnset))
}

func benchStart(b *testing.B, env []string) {
	for b.Loop() {
		if e := Run(context.Background(), Cmd{Argv: []string{"/bin/true"}, Env: env}, 0); !e.Success() {
			b.Fatal(e)
		}
	}
}
