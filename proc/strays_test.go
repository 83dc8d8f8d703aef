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
