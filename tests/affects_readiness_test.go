package tests

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A log shipper that crash-loops does not make the instance not ready when it says
// affects_readiness: false; it keeps its own ready and alive, and status shows it.
// A reload that makes it count again makes the instance not ready.
func TestAffectsReadinessFalseLeavesTheInstanceReady(t *testing.T) {
	specText := func(affects string) string {
		return `
containers:
  - name: web
    command: [sleep, "600"]
  - name: shipper
    command: [sh, -c, "echo shipping; exit 1"]
    restart_policy: {min_period_ms: 50, max_period_ms: 100, max_jitter_ms: 0}
` + affects
	}
	tp := start(t, specText("    affects_readiness: false\n"))
	doc := tp.waitStatus(15*time.Second, "the instance ready while the crash-looping shipper is not", func(d status.Document) bool {
		shipper := containerStatus(d, "shipper")
		return d.Ready.True() && shipper.Restarts >= 2 && !shipper.Ready.True() && !shipper.Alive.True()
	})
	shipper, web := containerStatus(doc, "shipper"), containerStatus(doc, "web")
	if shipper.AffectsReadiness || !web.AffectsReadiness {
		t.Errorf("affects_readiness: shipper %v (want false), web %v (want true)", shipper.AffectsReadiness, web.AffectsReadiness)
	}
	// The key is in the document as the API serves it.
	resp, err := tp.client().Get("http://tend/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Containers []map[string]any `json:"containers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Containers {
		if v, ok := c["affects_readiness"].(bool); !ok || v != (c["name"] == "web") {
			t.Errorf("container %v: affects_readiness = %v (%T)", c["name"], c["affects_readiness"], c["affects_readiness"])
		}
	}
	if err := exec.Command(tendBin, "status", "--ready", "--listen", "unix:"+tp.sock).Run(); err != nil {
		t.Errorf("tend status --ready: %v, want exit 0", err)
	}
	out, _ := exec.Command(tendBin, "status", "--listen", "unix:"+tp.sock).CombinedOutput()
	if !strings.Contains(string(out), "ready True") || !strings.Contains(string(out), "not counted") {
		t.Errorf("tend status does not show the instance ready and the shipper not counted:\n%s", out)
	}

	// Counted again (the default), the same crash loop makes the instance not ready.
	writeSpec(t, tp, specText(""))
	if code := post(t, tp, "/v1/reload"); code != 200 {
		t.Fatalf("reload: HTTP %d", code)
	}
	doc = tp.waitStatus(15*time.Second, "the instance not ready for the shipper", func(d status.Document) bool {
		return !d.Ready.True() && strings.Contains(d.Ready.Message, "shipper")
	})
	if c := containerStatus(doc, "shipper"); !c.AffectsReadiness {
		t.Errorf("after the reload the shipper's affects_readiness = false: %+v", c)
	}
}
