package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `tend validate` takes every written form of the limits of docs/reference.md "Cgroups and limits", `tend render`
// writes them in canonical units (cores as a number, bytes as an integer) and its
// output validates; an invalid quantity fails validate with SPEC:LINE, the field and
// what is wrong with the value.
func TestLimitsValidateRender(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(`instance:
  cgroups: required
  limits: {memory: 2Gi, pids: "1000"}
containers:
  - name: web
    command: sleep 1
    limits: {cpu: 1500m, memory: 512Mi, pids: 200}
    memory_restart: 400Mi
  - name: worker
    command: sleep 1
    limits: {cpu: 2c, memory: 1G}
`), 0o644)
	if out, errOut, code := runCLI(t, dir, "validate", good); code != 0 || out != good+": ok\n" {
		t.Fatalf("validate: exit %d, %q %q", code, out, errOut)
	}
	out, errOut, code := runCLI(t, dir, "render", good)
	if code != 0 {
		t.Fatalf("render: exit %d, %q", code, errOut)
	}
	for _, want := range []string{
		"  cgroups: required\n  limits:\n    memory: 2147483648\n    pids: 1000\n",
		"    limits:\n      cpu: 1.5\n      memory: 536870912\n      pids: 200\n    memory_restart: 419430400\n",
		"    limits:\n      cpu: 2\n      memory: 1000000000\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks\n%s\nin\n%s", want, out)
		}
	}
	rendered := filepath.Join(dir, "rendered.yaml")
	os.WriteFile(rendered, []byte(out), 0o644)
	if out, errOut, code := runCLI(t, dir, "validate", rendered); code != 0 {
		t.Errorf("validate the rendered spec: exit %d, %q %q", code, out, errOut)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`instance:
  cgroups: Auto
containers:
  - name: web
    command: sleep 1
    limits:
      cpu: 0.0005
      memory: 12X
    memory_limit: 1G
`), 0o644)
	_, errOut, code = runCLI(t, dir, "validate", bad)
	if code != 2 {
		t.Errorf("validate bad: exit %d, want 2", code)
	}
	for _, want := range []string{
		bad + `:2: instance.cgroups: must be auto, required or off, got "Auto"`,
		bad + `:7: containers[0].limits.cpu: "0.0005": finer than 1 millicore (0.001)`,
		bad + `:8: containers[0].limits.memory: "12X": unknown unit "X" (use Ki, Mi, Gi, Ti, K, M, G, T)`,
		bad + `:9: containers[0].memory_limit: unknown field (did you mean limits.memory?)`,
	} {
		if !strings.Contains(errOut, want+"\n") {
			t.Errorf("validate bad: stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// A container's processes get its own limits as CPU_LIMIT and MEM_LIMIT, one without
// limits the instance's.
func TestLimitsInTheEnvironment(t *testing.T) {
	tp := start(t, `
instance: {limits: {cpu: 2, memory: 512Mi}}
containers:
  - name: small
    command: "sh -c 'echo $CPU_LIMIT $MEM_LIMIT > {DIR}/small.tmp && mv {DIR}/small.tmp {DIR}/small.env; exec sleep 600'"
    limits: {memory: 64Mi}
  - name: plain
    command: "sh -c 'echo $CPU_LIMIT $MEM_LIMIT > {DIR}/plain.tmp && mv {DIR}/plain.tmp {DIR}/plain.env; exec sleep 600'"
`)
	for file, want := range map[string]string{"small.env": "2c 67108864", "plain.env": "2c 536870912"} {
		if got := strings.TrimSpace(waitFile(t, 10*time.Second, filepath.Join(tp.dir, file))); got != want {
			t.Errorf("%s: CPU_LIMIT MEM_LIMIT = %q, want %q", file, got, want)
		}
	}
}
