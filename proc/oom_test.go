package proc

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// tend lowers its own oom_score_adj, and every process it starts — and what that one
// forks at once — has the value tend was started with, also when starts overlap. The
// test runs in a child of its own (it changes its process's adjustment), from 300 down
// to 100: lowering below 0, as -1000 does, needs CAP_SYS_RESOURCE, which a test host
// may not grant.
func TestChildrenStartWithTendsOOMAdj(t *testing.T) {
	if os.Getenv("TEND_OOM_TEST") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildrenStartWithTendsOOMAdj$", "-test.v")
		cmd.Env = append(os.Environ(), "TEND_OOM_TEST=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in a child: %v\n%s", err, out)
		}
		return
	}
	if err := os.WriteFile(oomSelf, []byte("300"), 0); err != nil {
		t.Fatal(err)
	}
	oomProtected = "100"
	if err := ProtectFromOOM(); err != nil {
		t.Fatal(err)
	}
	own := func() string {
		b, _ := os.ReadFile(oomSelf)
		return strings.TrimSpace(string(b))
	}
	if got := own(); got != "100" {
		t.Fatalf("own oom_score_adj = %s after ProtectFromOOM, want 100", got)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out strings.Builder
			var mu sync.Mutex
			w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
			c := sh(`cat /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'`)
			c.Stdout = w
			p, err := Start(c)
			if err != nil {
				t.Error(err)
				return
			}
			<-p.Done()
			<-p.OutputDone()
			mu.Lock()
			defer mu.Unlock()
			if got := strings.Fields(out.String()); len(got) != 2 || got[0] != "300" || got[1] != "300" {
				t.Errorf("the child's and its child's oom_score_adj = %q, want 300 300", got)
			}
		}()
	}
	wg.Wait()
	if got := own(); got != "100" {
		t.Errorf("own oom_score_adj = %s after the starts, want 100", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
