package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the v1 exec shim (TEND_CGROUP_SHIM: procs files joined by
// ":", then exec of the arguments after "--") and as a program that allocates and touches
// TEND_CGROUP_ALLOC MiB, for the OOM test.
func TestMain(m *testing.M) {
	if files, ok := os.LookupEnv("TEND_CGROUP_SHIM"); ok {
		os.Unsetenv("TEND_CGROUP_SHIM")
		if err := JoinSelf(strings.Split(files, ":")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(120)
		}
		argv := os.Args[len(os.Args)-shimArgc():]
		path, err := exec.LookPath(argv[0])
		if err == nil {
			err = syscall.Exec(path, argv, os.Environ())
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(121)
	}
	if mib, ok := os.LookupEnv("TEND_CGROUP_ALLOC"); ok {
		n, _ := strconv.Atoi(mib)
		b := make([]byte, n<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// shimArgc is how many arguments after "--" the shim execs.
func shimArgc() int {
	for i, a := range os.Args {
		if a == "--" {
			return len(os.Args) - i - 1
		}
	}
	return 0
}

// shimCommand runs argv through the test binary as an exec shim that joins g first, so
// argv's first instruction already runs in the group (as tend's shim will on v1).
func shimCommand(g *Group, argv ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, argv...)...)
	cmd.Env = append(os.Environ(), "TEND_CGROUP_SHIM="+strings.Join(g.ProcsFiles(), ":"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// waitFor polls cond until it holds or 10 s pass, then fails with what it last saw.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, saw := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last saw %s", what, saw)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readString(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func writeFixture(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(path[:strings.LastIndexByte(path, '/')], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
