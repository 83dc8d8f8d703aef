package proc

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/spec"
)

// TestShimSetsLimitsBeforeExec: the program reads its own limits first thing; the
// shim has set them (this test binary is the shim: its init runs it).
func TestShimSetsLimitsBeforeExec(t *testing.T) {
	var out strings.Builder
	id := &spec.Identity{Rlimits: []spec.Limit{{Resource: unix.RLIMIT_NOFILE, Soft: 321, Hard: 654}}}
	e := Run(context.Background(), Cmd{Argv: []string{"sh", "-c", "ulimit -Sn; ulimit -Hn"}, Stdout: &out, Ident: id}, 0)
	if !e.Success() || out.String() != "321\n654\n" {
		t.Fatalf("exit %v, output %q, want 321 654", e, out.String())
	}
	var own unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &own); err != nil || own.Cur == 321 {
		t.Errorf("this process's own limit changed: %+v %v", own, err)
	}
}

// TestShimStartErrors: a program the shim cannot exec is exit 127 with the reason
// in its output.
func TestShimStartErrors(t *testing.T) {
	var out strings.Builder
	id := &spec.Identity{Rlimits: []spec.Limit{{Resource: unix.RLIMIT_CORE}}}
	e := Run(context.Background(), Cmd{Argv: []string{"/nonexistent/x"}, Stdout: &out, Stderr: &out, Ident: id}, 0)
	if e.Status() != 127 || !strings.Contains(out.String(), "tend: cannot start: exec /nonexistent/x") {
		t.Fatalf("exit %v, output %q", e, out.String())
	}
}

// BenchmarkStart is a start and exit of /bin/true, directly and through the shim
// (docs/reference.md "Identity and limits" quotes the difference).
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		id   *spec.Identity
	}{
		{"direct", nil},
		{"rlimits", &spec.Identity{Rlimits: []spec.Limit{{Resource: unix.RLIMIT_NOFILE, Soft: 1024, Hard: 1024}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if e := Run(context.Background(), Cmd{Argv: []string{"/bin/true"}, Ident: bc.id}, 0); !e.Success() {
					b.Fatal(e)
				}
			}
		})
	}
}
