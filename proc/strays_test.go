package proc

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Descendants finds children and grandchildren through the children files, as the
// scan of every process's parent does.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 600 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := Descendants(os.Getpid())
		if slices.Contains(got, cmd.Process.Pid) && slices.Contains(got, grandchild) {
			scanned := scanDescendants(os.Getpid())
			slices.Sort(got)
			slices.Sort(scanned)
			if !slices.Equal(got, scanned) {
				t.Errorf("children files found %v, the scan %v", got, scanned)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("descendants %v, want %d and %d among them", got, cmd.Process.Pid, grandchild)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hasChildren sees a running child, and nothing in a process that never had one (this
// test binary run again: the tests here share one process and start children in
// parallel).
func TestHasChildren(t *testing.T) {
	if os.Getenv("TEND_TEST_NO_CHILDREN") == "1" {
		if hasChildren() {
			os.Exit(3)
		}
		os.Exit(0)
	}
	p := start(t, sh("sleep 600"))
	if !hasChildren() {
		t.Errorf("hasChildren() = false with pid %d running", p.Pid())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHasChildren$")
	cmd.Env = append(os.Environ(), "TEND_TEST_NO_CHILDREN=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("in a process without children: %v %s", err, out)
	}
}
