package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tend-sh/tend/status"
)

// While an init container fails, the containers that wait for it say so in NOTE
// instead of an empty "-".
func TestPrintStatusWaitingForInit(t *testing.T) {
	doc := status.Document{
		Instance: "x",
		State:    status.InstancePreparing,
		InitContainers: []status.InitContainer{
			{Name: "schema", State: status.Succeeded, Attempts: 1},
			{Name: "migrate", State: status.Backoff, Attempts: 4, LastExit: &status.Exit{Reason: "exit code 3"}},
		},
		Containers: []status.Container{
			{Name: "web", State: status.Waiting, AffectsReadiness: true},
			{Name: "worker", State: status.Waiting, WaitingFor: []string{"web: ready"}, AffectsReadiness: true},
		},
	}
	var out bytes.Buffer
	printStatus(&out, doc)
	lines := strings.Split(out.String(), "\n")
	want := map[string]string{"web ": "waiting for init container migrate", "worker ": "waiting for web: ready"}
	for prefix, note := range want {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				found = true
				if !strings.HasSuffix(strings.TrimSpace(l), note) {
					t.Errorf("row %q: want NOTE %q", l, note)
				}
			}
		}
		if !found {
			t.Errorf("no row for %q in\n%s", prefix, out.String())
		}
	}
	doc.State = status.InstanceRunning
	out.Reset()
	printStatus(&out, doc)
	if strings.Contains(out.String(), "waiting for init container") {
		t.Errorf("a running instance's rows still wait for an init container:\n%s", out.String())
	}
}

// A stopped container's READY is "-": its ready condition is True only so that it
// does not hold the instance back.
func TestPrintStatusStoppedReady(t *testing.T) {
	doc := status.Document{Instance: "x", State: status.InstanceRunning, Containers: []status.Container{
		{Name: "web", State: status.Stopped, StoppedByRequest: true, Ready: status.Condition{Status: "True", Reason: status.ReasonStoppedByRequest}, Alive: status.Condition{Status: "False"}, AffectsReadiness: true},
		{Name: "api", State: status.Running, Ready: status.Condition{Status: "True"}, Alive: status.Condition{Status: "True"}, AffectsReadiness: true},
	}}
	var out bytes.Buffer
	printStatus(&out, doc)
	ready := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			ready[f[0]] = f[4]
		}
	}
	if ready["web"] != "-" || ready["api"] != "True" {
		t.Errorf("READY web %q, api %q; want - and True:\n%s", ready["web"], ready["api"], out.String())
	}
}
