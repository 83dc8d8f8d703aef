package tests

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// What a user sees of an ordinary restart and stop: one log line per start of a
// process without probes, a requested restart's exit a Normal event, and a stopped
// container's READY shown as "-" (its ready condition is True only so that it does not
// hold the instance back).
func TestRequestedStopsAreQuiet(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "600"]
  - name: other
    command: ["sleep", "600"]
`)
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	if _, errOut, code := runCLI(t, tp.dir, "restart", "web"); code != 0 {
		t.Fatalf("restart web: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, tp.dir, "stop", "web"); code != 0 {
		t.Fatalf("stop web: exit %d, %s", code, errOut)
	}

	// The log: a line for each start (two), none for alive or ready at start.
	var messages []string
	for _, line := range strings.Split(tp.stderr.String(), "\n") {
		var ev struct{ Container, Message string }
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Container == "web" {
			messages = append(messages, ev.Message)
		}
	}
	count := map[string]int{}
	for _, m := range messages {
		count[m]++
	}
	if count["started"] != 2 || count["alive"] != 0 || count["ready"] != 0 || count["not alive"] != 0 {
		t.Errorf("web's log lines %q: want 2 started, no alive, ready or not alive", messages)
	}

	// The events: the exits of the requested restart and stop are Normal.
	out, errOut, code := runCLI(t, tp.dir, "describe", "--json", "web")
	if code != 0 {
		t.Fatalf("describe web: exit %d, %s", code, errOut)
	}
	var detail status.ContainerDetail
	if err := json.Unmarshal([]byte(out), &detail); err != nil {
		t.Fatalf("describe --json: %v: %.300s", err, out)
	}
	exits := 0
	for _, ev := range detail.Events {
		if ev.Reason == status.ReasonExited {
			exits++
			if ev.Type != status.Normal {
				t.Errorf("event %s %s %q after a requested restart or stop, want Normal", ev.Type, ev.Reason, ev.Message)
			}
		}
	}
	if exits != 2 {
		t.Errorf("%d Exited events, want 2 (restart, stop): %+v", exits, detail.Events)
	}

	// The table: READY "-" for the stopped container, True for the running one.
	table, _, _ := runCLI(t, tp.dir, "status")
	ready := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[0] == "web" || f[0] == "other") {
			ready[f[0]] = f[4]
		}
	}
	if ready["web"] != "-" || ready["other"] != "True" {
		t.Errorf("READY web %q, other %q; want - and True:\n%s", ready["web"], ready["other"], table)
	}
	termAndWait(t, tp, 30*time.Second)
}
