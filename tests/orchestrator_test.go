package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tend-sh/tend/status"
)

// TestStatusReady: `tend status --ready` prints nothing and exits 0 ready, 1 not
// ready, 2 when no tend answers.
func TestStatusReady(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: sleep 1000
    readiness_probe:
      exec: {command: test -e {DIR}/ready}
      time_limit: {initial_delay_ms: 0, min_restart_period_ms: 100, max_restart_period_ms: 100}
`)
	sock := "unix:" + tp.sock
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == status.Running
	})
	if out, errOut, code := runCLI(t, tp.dir, "status", "--ready", "--listen", sock); code != 1 || out != "" || errOut != "" {
		t.Errorf("not ready: exit %d, stdout %q, stderr %q; want 1 and no output", code, out, errOut)
	}
	os.WriteFile(filepath.Join(tp.dir, "ready"), nil, 0o644)
	tp.waitStatus(10*time.Second, "instance ready", func(d status.Document) bool { return d.Ready.True() })
	// The default address is ./tend.sock, the run's default in the spec's directory.
	if out, errOut, code := runCLI(t, tp.dir, "status", "--ready"); code != 0 || out != "" || errOut != "" {
		t.Errorf("ready: exit %d, stdout %q, stderr %q; want 0 and no output", code, out, errOut)
	}
	termAndWait(t, tp, 20*time.Second)
	if out, errOut, code := runCLI(t, tp.dir, "status", "--ready", "--listen", sock); code != 2 || out != "" || errOut != "" {
		t.Errorf("unreachable: exit %d, stdout %q, stderr %q; want 2 and no output", code, out, errOut)
	}
}

// TestRenderGrace: `tend render --grace` prints only the grace period in seconds.
func TestRenderGrace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	// web: GET /shutdown, 2 tries of up to 2 s (longer than the 1 s period, so back
	// to back: 4 s), wait_after 5 s, then TERM and 10 s: 19 s. shipper waits for
	// web's TERM (9 s), 5 s of TERM, then its destroy policy: 1 s delay and 3 tries
	// of up to 30 s (2 s apart, so back to back): 9+5+1+90 = 105 s.
	os.WriteFile(path, []byte(`
instance: {port: 8080}
containers:
  - name: web
    command: ./server
    stop_policy:
      http_get: {path: /shutdown}
      max_tries: 2
      time_limit: {min_restart_period_ms: 1000, max_restart_period_ms: 1000, max_execution_time_ms: 2000}
      wait_after_ms: 5000
      term_timeout_ms: 10000
  - name: shipper
    command: ./ship
    term_barrier: WAIT
    stop_policy: {term_timeout_ms: 5000}
    destroy_policy:
      exec: {command: ./upload}
      max_tries: 3
      time_limit: {initial_delay_ms: 1000, min_restart_period_ms: 2000, max_restart_period_ms: 2000, max_execution_time_ms: 30000}
`), 0o644)
	out, errOut, code := runCLI(t, dir, "render", "--grace", path)
	if code != 0 || out != "110\n" || errOut != "" {
		t.Errorf("render --grace: exit %d, stdout %q, stderr %q; want 0 and \"110\\n\" (105 s + 5)", code, out, errOut)
	}
	// Every example names a bounded shutdown.
	examples, _ := filepath.Glob("../examples/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	for _, ex := range examples {
		ex, _ = filepath.Abs(ex)
		if out, errOut, code := runCLI(t, dir, "render", "--grace", ex); code != 0 || strings.TrimSpace(out) == "" {
			t.Errorf("render --grace %s: exit %d, stdout %q, stderr %q", ex, code, out, errOut)
		}
	}
	unbounded := filepath.Join(dir, "unbounded.yaml")
	os.WriteFile(unbounded, []byte(`
containers:
  - {name: a, command: x, stop_policy: {exec: {command: ./drain}, time_limit: {max_execution_time_ms: 0}}}
`), 0o644)
	out, errOut, code = runCLI(t, dir, "render", "--grace", unbounded)
	if code != 1 || out != "" || !strings.Contains(errOut, "containers[0].stop_policy.time_limit.max_execution_time_ms") {
		t.Errorf("render --grace unbounded: exit %d, stdout %q, stderr %q; want 1 naming the field", code, out, errOut)
	}
}

// TestKubernetesExample keeps examples/kubernetes consistent: the ConfigMap carries
// spec.yaml as it is, the spec validates, and the Deployment's grace period is what
// `tend render --grace` prints.
func TestKubernetesExample(t *testing.T) {
	dir, _ := filepath.Abs("../examples/kubernetes")
	specText, err := os.ReadFile(filepath.Join(dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Kind string            `yaml:"kind"`
		Data map[string]string `yaml:"data"`
	}
	readYAML(t, filepath.Join(dir, "configmap.yaml"), &cm)
	if cm.Kind != "ConfigMap" || cm.Data["spec.yaml"] != string(specText) {
		t.Errorf("configmap.yaml: kind %q, data[spec.yaml] differs from spec.yaml:\n%s", cm.Kind, cm.Data["spec.yaml"])
	}
	if out, errOut, code := runCLI(t, dir, "validate", "spec.yaml"); code != 0 {
		t.Fatalf("spec.yaml does not validate: %s%s", out, errOut)
	}
	out, _, _ := runCLI(t, dir, "render", "--grace", "spec.yaml")
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Grace      int `yaml:"terminationGracePeriodSeconds"`
					Containers []struct {
						Args      []string `yaml:"args"`
						Readiness struct {
							HTTPGet struct{ Path string } `yaml:"httpGet"`
						} `yaml:"readinessProbe"`
						Liveness struct {
							HTTPGet struct{ Path string } `yaml:"httpGet"`
						} `yaml:"livenessProbe"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	readYAML(t, filepath.Join(dir, "deployment.yaml"), &dep)
	pod := dep.Spec.Template.Spec
	if got := strconv.Itoa(pod.Grace) + "\n"; got != out {
		t.Errorf("terminationGracePeriodSeconds %d, tend render --grace prints %q", pod.Grace, out)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("deployment.yaml: %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Readiness.HTTPGet.Path != "/v1/ready" || c.Liveness.HTTPGet.Path != "/v1/live" {
		t.Errorf("probes: readiness %q, liveness %q; want /v1/ready and /v1/live", c.Readiness.HTTPGet.Path, c.Liveness.HTTPGet.Path)
	}
	if !slices.Contains(c.Args, "--watch") || !slices.Contains(c.Args, "/etc/tend/spec.yaml") {
		t.Errorf("args %q lack --watch or the mounted spec", c.Args)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
