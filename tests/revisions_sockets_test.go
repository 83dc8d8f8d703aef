package tests

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A client connecting without pause to a socket-activated update: start_first
// service sees no refused or reset connection through an update whose new process
// never becomes ready (its startup probe fails, it serves meanwhile) and the
// automatic rollback that follows; the revision is rolled back, naming why.
func TestRevisionRollbackUnderLoad(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	specOf := func(id, extra string) string {
		return `instance: {revision: ` + id + `, rollback_after: 2s}
containers:
  - name: web
    command: ["{SELF}", "{DIR}/env-` + id + `", "notify"]
    env: [{name: V, value: ` + id + `}]
    sockets: [{listen: "{ADDR}"}]
    update: start_first
    readiness_probe: {notify: {}}
` + extra
	}
	tp, addr := startSockets(t, specOf("v1", ""))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	stop := make(chan struct{})
	result := make(chan []error, 1)
	var served int
	go func() {
		n, f := hammer(addr, stop)
		served = n
		result <- f
	}()
	time.Sleep(300 * time.Millisecond) // load before the update
	// v2 serves at once but its startup probe never passes.
	bad := strings.NewReplacer("{SELF}", mustExecutable(t), "{ADDR}", addr).Replace(specOf("v2",
		"    startup_probe: {exec: {command: \"false\"}, period: 100ms, failure_threshold: 5, initial_delay: 0s}\n"))
	out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", bad))
	if code != 1 || !strings.Contains(out, "revision v2 was rolled back") {
		t.Errorf("tend apply v2: exit %d:\n%s\nwant exit 1, rolled back", code, out)
	}
	tp.waitStatus(10*time.Second, "v1 active and ready again", func(d status.Document) bool {
		return d.Revision == "v1" && d.Ready.True() && revisionEntry(d, "v2").Ready.Reason == status.ReasonRolledBack
	})
	// v3's web starts and serves (the old process retires), but another container of
	// it is never ready: rolled back, web is updated start_first back to v1's spec.
	worse := strings.NewReplacer("{SELF}", mustExecutable(t), "{ADDR}", addr).Replace(specOf("v3",
		"  - {name: gate, command: [sleep, \"1000\"], readiness_probe: {exec: {command: \"false\"}, period: 100ms, initial_delay: 0s}}\n"))
	out, code = tendCtl(t, tp, "apply", writeFile(t, tp, "v3.yaml", worse))
	if code != 1 || !strings.Contains(out, "revision v3 was rolled back") {
		t.Errorf("tend apply v3: exit %d:\n%s\nwant exit 1, rolled back", code, out)
	}
	d := tp.waitStatus(10*time.Second, "v1 active and ready again, web running v1's spec", func(d status.Document) bool {
		return d.Revision == "v1" && d.Ready.True() && revisionEntry(d, "v3").Ready.Reason == status.ReasonRolledBack &&
			containerStatus(d, "web").OldPid == nil && containerStatus(d, "gate").Name == ""
	})
	if v3 := revisionEntry(d, "v3"); !strings.Contains(v3.Ready.Message, "gate") {
		t.Errorf("v3 rolled back with %q; want the message naming gate", v3.Ready.Message)
	}
	if got, err := ask(addr); err != nil || strconv.Itoa(got) != serverLine(t, tp, "env-v1")[3] {
		t.Errorf("after the rollbacks: answered by %d (%v), want the v1 process that wrote env-v1 last", got, err)
	}
	time.Sleep(300 * time.Millisecond) // load after the rollback
	close(stop)
	if f := <-result; len(f) > 0 {
		t.Fatalf("%d connections answered, %d failed; first: %v", served, len(f), f[0])
	}
	if served < 100 {
		t.Fatalf("%d connections answered; want hundreds", served)
	}
	t.Logf("%d connections answered through two updates and their rollbacks", served)
}

// mustExecutable is this test binary, the socket server of the socket tests.
func mustExecutable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
