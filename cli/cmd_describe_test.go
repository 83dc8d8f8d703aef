package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// describe prints every status field of the entry (docs/reference.md "Events"): those a table has no
// room for too, and the ones shown only when they say something.
func TestPrintDetailShowsTheStatusFields(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	pid, old := 42, 41
	d := status.ContainerDetail{Container: status.Container{
		Name: "web", State: status.Running, TargetState: "active", Pid: &pid, OldPid: &old,
		StartedAt: status.Ptr(now.Add(-3 * time.Minute)), Restarts: 2,
		Alive:      status.NewCondition(true, status.ReasonRunning, "", now),
		Ready:      status.NewCondition(false, status.ReasonNotReady, "waiting for READY=1", now),
		WaitingFor: []string{}, StatusText: "warming caches", StoppedByRequest: true,
		Cgroup: "/containers/web", LimitsApplied: true,
		Usage: status.Usage{CPUSeconds: 1.5, MemoryBytes: 12 << 20, Pids: 3, OOMKills: 1, CPUPercent: 2.5},
	}}
	var b strings.Builder
	printDetail(&b, d, now)
	for _, want := range []string{
		"Pid:", "42", "Old pid:", "41 (start first", "Restarts:", "Ready:", "False (NotReady: waiting for READY=1)",
		"Status text:", "warming caches", "Stopped by request:", "yes", "Cgroup:", "/containers/web",
		"Limits applied:", "Usage:", "CPU 1.50 s (2.5% now), memory 12.0Mi, pids 3, OOM kills 1", "Events:", "<none>",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, b.String())
		}
	}
	// A container with cgroups off and no update or stop request.
	d.OldPid, d.StoppedByRequest, d.Cgroup, d.LimitsApplied = nil, false, "", false
	b.Reset()
	printDetail(&b, d, now)
	for _, absent := range []string{"Old pid:", "Stopped by request:"} {
		if strings.Contains(b.String(), absent) {
			t.Errorf("describe shows %q for a container without it:\n%s", absent, b.String())
		}
	}
	if !strings.Contains(b.String(), "Limits applied:  no") || !strings.Contains(b.String(), "Cgroup:") {
		t.Errorf("describe with cgroups off:\n%s", b.String())
	}
}
