package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// runHelper is the notify helper's "runs:FILE:N": it appends a line to FILE, and this
// run, the count-th, sends READY=1 and exits at once when count is odd, exits after
// 20 ms without a word when it is even, and from the (N+1)-th run on never notifies
// and stays. exit says whether the helper ends with code.
func runHelper(c *net.UnixConn, arg string) (code int, exit bool) {
	file, n, _ := strings.Cut(arg, ":")
	limit, _ := strconv.Atoi(n)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "notify helper:", err)
		return 1, true
	}
	f.WriteString("run\n")
	f.Close()
	b, _ := os.ReadFile(file)
	count := strings.Count(string(b), "\n")
	switch {
	case count > limit:
		return 0, false // the last run: silent, until killed
	case count%2 == 1:
		c.Write([]byte("READY=1"))
		return 0, true
	}
	time.Sleep(20 * time.Millisecond)
	return 0, true
}

// A READY=1 counts only for the run whose process sent it: runs that send it and exit
// at once, restarted with no delay, alternate with runs that never notify, and none
// of those silent runs may ever be shown ready. A leftover datagram of the run before,
// read once the next had started, made about 1 run in 90 ready.
func TestNotifyReadyOfAnEarlierRunIgnored(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	const runs = 300
	tp := startLifecycle(t, fmt.Sprintf(`
containers:
  - name: flap
    command: ["{SELF}", "runs:{DIR}/runs:%d"]
    readiness_probe: {notify: {}}
    restart_policy: {min_period_ms: 0, max_period_ms: 0, max_jitter_ms: 0}
`, runs))
	// Each run is a start of the race-built helper: about 0.35 s alone, 0.43 s in a full
	// `make test` on a loaded 2-core machine (280 of 301 runs after 120 s).
	waitFor(t, 240*time.Second, fmt.Sprintf("%d runs", runs+1), func() (bool, string) {
		n := len(lines(t, tp.dir+"/runs"))
		return n > runs, fmt.Sprintf("%d runs", n)
	})
	// The last run started; a leftover READY=1 would be read within milliseconds.
	time.Sleep(500 * time.Millisecond)
	doc := tp.waitStatus(10*time.Second, "the last run running", func(d status.Document) bool {
		c := containerStatus(d, "flap")
		return c.State == status.Running && c.Restarts == runs
	})
	if c := containerStatus(doc, "flap"); c.Ready.True() {
		t.Errorf("the last run, which never notifies, is ready: %+v", c.Ready)
	}
	if bad := silentRunsMadeReady(t, tp.stderr.String(), runs); len(bad) > 0 {
		t.Errorf("%d silent runs were made ready by an earlier run's READY=1 (runs %v)", len(bad), bad)
	}
}

// silentRunsMadeReady reads tend's JSON log for the runs of flap (1 for the first)
// that runHelper keeps silent (the even ones, and those after the limit-th) but that
// became ready by READY=1.
func silentRunsMadeReady(t *testing.T, log string, limit int) []int {
	t.Helper()
	var bad []int
	run := 0
	for _, line := range strings.Split(log, "\n") {
		var ev struct {
			Container string `json:"container"`
			Message   string `json:"message"`
			By        string `json:"by"`
			Restarts  int    `json:"restarts"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Container != "flap" {
			continue
		}
		switch {
		case ev.Message == "started":
			run = ev.Restarts + 1
		case ev.Message == "ready" && ev.By == "READY=1" && (run%2 == 0 || run > limit):
			bad = append(bad, run)
		}
	}
	return bad
}
