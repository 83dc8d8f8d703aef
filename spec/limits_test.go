package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Every written form of a limit loads to its canonical value, render shows that value
// (cores as a number, bytes as an integer), and the rendered spec loads to the same.
func TestLimitsForms(t *testing.T) {
	tests := []struct {
		field, value string
		want         any    // float64 cores or int64 bytes/count
		rendered     string // the value as render writes it
	}{
		{"cpu", "1.5", 1.5, "1.5"},
		{"cpu", "2", 2.0, "2"},
		{"cpu", ".5", 0.5, "0.5"},
		{"cpu", "1500m", 1.5, "1.5"},
		{"cpu", `"250m"`, 0.25, "0.25"},
		{"cpu", "1.5c", 1.5, "1.5"},
		{"cpu", "2c", 2.0, "2"},
		{"cpu", "0.001", 0.001, "0.001"},
		{"cpu", "1000000", 1e6, "1000000"}, // not 1e+06
		{"memory", "536870912", int64(536870912), "536870912"},
		{"memory", "512Mi", int64(512 << 20), "536870912"},
		{"memory", "2Gi", int64(2 << 30), "2147483648"},
		{"memory", "1Ti", int64(1 << 40), "1099511627776"},
		{"memory", "64Ki", int64(64 << 10), "65536"},
		{"memory", "1G", int64(1e9), "1000000000"},
		{"memory", "1.5M", int64(1.5e6), "1500000"},
		{"memory", "1.1Ki", int64(1127), "1127"}, // a fraction of a byte rounds up
		{"memory", "1e9", int64(1e9), "1000000000"},
		{"memory", `"1K"`, int64(1000), "1000"},
		{"pids", "200", int64(200), "200"},
		{"pids", `"64"`, int64(64), "64"},
		{"memory_restart", "400Mi", int64(400 << 20), "419430400"},
		{"memory_restart", "1000", int64(1000), "1000"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			inst, ctr := limitsDoc(tt.field, tt.value)
			s := mustLoad(t, inst+ctr, nil)
			if got := quantityOf(s.Containers[0], tt.field); got != tt.want {
				t.Errorf("containers[0]: %v, want %v", got, tt.want)
			}
			out, err := s.Render()
			if err != nil {
				t.Fatal(err)
			}
			if line := tt.field + ": " + tt.rendered + "\n"; !strings.Contains(string(out), line) {
				t.Errorf("render lacks %q:\n%s", line, out)
			}
			again := mustLoad(t, string(out), nil)
			if got := quantityOf(again.Containers[0], tt.field); got != tt.want {
				t.Errorf("the rendered spec loads to %v, want %v", got, tt.want)
			}
			if tt.field == "memory_restart" {
				return // a container's field only
			}
			if got := quantityOf(Container{Limits: s.Instance.Limits}, tt.field); got != tt.want {
				t.Errorf("instance.limits: %v, want %v", got, tt.want)
			}
		})
	}
}

// limitsDoc is a spec with value at field in instance.limits (not for memory_restart)
// and in the container, on lines 2 and 6.
func limitsDoc(field, value string) (instance, containers string) {
	instance = "instance:\n  limits: {" + field + ": " + value + "}\n"
	if field == "memory_restart" {
		instance = "instance:\n  cgroups: auto\n"
	}
	containers = "containers:\n  - name: web\n    command: x\n"
	if field == "memory_restart" {
		return instance, containers + "    memory_restart: " + value + "\n"
	}
	return instance, containers + "    limits: {" + field + ": " + value + "}\n"
}

// quantityOf is the field's value through the accessors the wiring uses.
func quantityOf(c Container, field string) any {
	cpu, memory, pids := c.Limits.Values()
	switch field {
	case "cpu":
		return cpu
	case "memory":
		return memory
	case "pids":
		return pids
	}
	return c.MemoryRestart.Get()
}

// Without limits nothing is set and render writes none; limits on one container are
// not another's.
func TestLimitsAbsent(t *testing.T) {
	s := mustLoad(t, "containers:\n  - name: a\n    command: x\n    limits: {memory: 1Gi}\n  - name: b\n    command: x\n", nil)
	if s.Instance.Limits.IsSet() || s.Containers[1].Limits.IsSet() || s.Containers[0].MemoryRestart.IsSet() {
		t.Errorf("unwritten limits are set: %+v %+v", s.Instance.Limits, s.Containers[1].Limits)
	}
	if cpu, memory, pids := s.Containers[0].Limits.Values(); cpu != 0 || memory != 1<<30 || pids != 0 {
		t.Errorf("Values() = %v, %v, %v", cpu, memory, pids)
	}
	out, _ := s.Render()
	if n := strings.Count(string(out), "limits:"); n != 1 || strings.Contains(string(out), "cpu:") || strings.Contains(string(out), "memory_restart") {
		t.Errorf("render shows unwritten limits:\n%s", out)
	}
	// null is the same as absent, as for every field.
	s = mustLoad(t, "instance: {limits: null}\ncontainers:\n  - name: a\n    command: x\n    limits: {cpu: null}\n    memory_restart: null\n", nil)
	if s.Instance.Limits.IsSet() || s.Containers[0].Limits.IsSet() || s.Containers[0].MemoryRestart.IsSet() {
		t.Errorf("null limits are set")
	}
}

// An invalid quantity is an error naming the field, its line and what is wrong with
// the value; every one is reported at once.
func TestLimitsErrors(t *testing.T) {
	tests := []struct{ field, value, want string }{
		{"memory", "12X", `"12X": unknown unit "X" (use Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"memory", "512mi", `"512mi": unknown unit "mi" (use Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"memory", "0", "0: must be above 0"},
		{"memory", "-1", "-1: must be above 0"},
		{"memory", `"-1Gi"`, `"-1Gi": must be above 0`},
		{"memory", "Gi", `"Gi": not a byte quantity (use an integer, or a number with Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"memory", "99999999Ti", `"99999999Ti": too large (at most 9223372036854775807 bytes)`},
		{"memory", "true", "true: a number or a string with a unit is needed, got bool"},
		{"memory", "[1]", "must be a number or a string with a unit, got a list"},
		{"memory", "{a: 1}", "must be a number or a string with a unit, got a mapping"},
		{"cpu", "0", "0: must be above 0"},
		{"cpu", "0.0005", `"0.0005": finer than 1 millicore (0.001)`},
		{"cpu", "1.5x", `"1.5x": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{"cpu", "1.5 cores", `"1.5 cores": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{"cpu", "1/2", `"1/2": not a CPU quantity (use cores as a number, "1500m" or "1.5c")`},
		{"pids", "1.5", `"1.5": not a whole number`},
		{"pids", "0", "0: must be above 0"},
		{"pids", "10k", `"10k": not a whole number`},
		{"memory_restart", "400MB", `"400MB": unknown unit "MB" (use Ki, Mi, Gi, Ti, K, M, G, T)`},
		{"memory_restart", "0", "0: must be above 0"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			inst, ctr := limitsDoc(tt.field, tt.value)
			want := []string{
				fmt.Sprintf("line 2: instance.limits.%s: %s", tt.field, tt.want),
				fmt.Sprintf("line 6: containers[0].limits.%s: %s", tt.field, tt.want),
			}
			if tt.field == "memory_restart" {
				want = []string{"line 6: containers[0].memory_restart: " + tt.want}
			}
			if got := lineErrors(t, inst+ctr); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// lineErrors loads an invalid spec and returns its errors as "line N: path: message".
func lineErrors(t *testing.T, body string) []string {
	t.Helper()
	_, err := Load(writeSpec(t, body, nil), testOptions())
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load error = %v, want *Errors", err)
	}
	var out []string
	for _, f := range errs.Fields {
		out = append(out, fmt.Sprintf("line %d: %s", f.Line, f.Error()))
	}
	return out
}

// instance.cgroups defaults to auto and takes auto, required and off, in that case
// only, like every enum of the spec.
func TestCgroupsMode(t *testing.T) {
	const body = "containers:\n  - name: web\n    command: x\n"
	if got := mustLoad(t, body, nil).Instance.Cgroups; got != CgroupsAuto {
		t.Errorf("default cgroups %q, want auto", got)
	}
	for _, mode := range []string{"auto", "required", "off"} {
		s := mustLoad(t, "instance: {cgroups: "+mode+"}\n"+body, nil)
		out, _ := s.Render()
		// go-yaml quotes "off" (a boolean to YAML 1.1 readers).
		if again := mustLoad(t, string(out), nil); s.Instance.Cgroups != mode || again.Instance.Cgroups != mode {
			t.Errorf("cgroups: %s loads as %q, renders\n%s", mode, s.Instance.Cgroups, out)
		}
	}
	for _, bad := range []string{"Auto", "OFF", "on", "yes", "1"} {
		got := lineErrors(t, "instance:\n  cgroups: "+bad+"\n"+body)
		want := fmt.Sprintf("line 2: instance.cgroups: must be auto, required or off, got %q", bad)
		if len(got) != 1 || got[0] != want {
			t.Errorf("cgroups: %s: errors %q, want %q", bad, got, want)
		}
	}
}

// Limits are on containers and the instance only: an init container, a probe or the
// top level has no such field.
func TestLimitsOnlyWhereTheyApply(t *testing.T) {
	got := lineErrors(t, "init_containers:\n  - name: i\n    command: x\n    limits: {memory: 1Gi}\n    memory_restart: 1Gi\ncontainers: []\n")
	const hint = " (limits and memory_restart are a container's; instance.limits covers init containers too)"
	want := []string{"line 4: init_containers[0].limits: unknown field" + hint, "line 5: init_containers[0].memory_restart: unknown field" + hint}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors %q, want %q", got, want)
	}
}

// The names other tools give limits point at tend's fields.
func TestLimitHints(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"containers: [{name: web, command: x, limit: {memory: 1Gi}}]", "containers[0].limit: unknown field (did you mean limits?)"},
		{"containers: [{name: web, command: x, memory_limit: 1Gi}]", "containers[0].memory_limit: unknown field (did you mean limits.memory?)"},
		{"containers: [{name: web, command: x, mem_limit: 1g}]", "containers[0].mem_limit: unknown field (did you mean limits.memory?)"},
		{"containers: [{name: web, command: x, cpus: 1.5}]", "containers[0].cpus: unknown field (did you mean limits.cpu?)"},
		{"containers: [{name: web, command: x, pids_limit: 100}]", "containers[0].pids_limit: unknown field (did you mean limits.pids?)"},
		{"containers: [{name: web, command: x, max_memory_restart: 1G}]", "containers[0].max_memory_restart: unknown field (did you mean memory_restart?)"},
		{"containers: [{name: web, command: x, resources: {limits: {memory: 1Gi}}}]", "containers[0].resources: unknown field (did you mean limits?)"},
		{"instance: {memory: 1Gi}\ncontainers: []", "instance.memory: unknown field (did you mean limits.memory?)"},
		{"instance: {cgroup: off}\ncontainers: []", "instance.cgroup: unknown field (did you mean cgroups?)"},
		{"containers: [{name: web, command: x, limits: {mem: 1Gi}}]", "containers[0].limits.mem: unknown field"},
		// Not where no limits field is: the nearest name, as before.
		{"containers: [{name: web, command: x, log: {file: f, memory: 1}}]", "containers[0].log.memory: unknown field"},
	}
	for _, tt := range tests {
		got := loadErrors(t, tt.doc, nil)
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s: errors %q, want %q", tt.doc, got, tt.want)
		}
	}
}

// JSON takes the written forms and writes the canonical values; null is unset.
func TestLimitsJSON(t *testing.T) {
	var l Limits
	if err := json.Unmarshal([]byte(`{"cpu": "1500m", "memory": "1Gi", "pids": 10}`), &l); err != nil {
		t.Fatal(err)
	}
	if cpu, memory, pids := l.Values(); cpu != 1.5 || memory != 1<<30 || pids != 10 {
		t.Errorf("Values() = %v, %v, %v", cpu, memory, pids)
	}
	out, err := json.Marshal(l)
	if err != nil || string(out) != `{"cpu":1.5,"memory":1073741824,"pids":10}` {
		t.Errorf("json %s, %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"memory": "12X"}`), &l); err == nil {
		t.Errorf("12X decodes")
	}
	var none Limits
	if err := json.Unmarshal([]byte(`{"cpu": null}`), &none); err != nil || none.IsSet() {
		t.Errorf("null: %+v, %v", none, err)
	}
	if out, _ := json.Marshal(Container{Name: "a"}); strings.Contains(string(out), "limits") || strings.Contains(string(out), "memory_restart") {
		t.Errorf("unset limits in JSON: %s", out)
	}
}

// CPU_LIMIT and MEM_LIMIT are a container's own limits where it has them, else the
// instance's, else those of tend's cgroup (Options.Limits); an init container has the
// instance's. An env list or env_files entry that sets one wins, as for any variable.
func TestLimitsInTheEnvironment(t *testing.T) {
	tests := []struct {
		name, spec string
		want       map[string][2]string // process -> CPU_LIMIT, MEM_LIMIT
	}{
		{"instance limits", `
instance: {limits: {cpu: 2, memory: 512Mi}}
init_containers: [{name: setup, command: "true"}]
containers:
  - {name: own, command: "true", limits: {memory: 64Mi}}
  - {name: both, command: "true", limits: {cpu: "250m", memory: 1Gi}}
  - {name: none, command: "true"}
  - {name: set, command: "true", limits: {memory: 64Mi}, env: [{name: MEM_LIMIT, value: "7"}]}
`, map[string][2]string{"setup": {"2c", "536870912"}, "own": {"2c", "67108864"}, "both": {"0.25c", "1073741824"},
			"none": {"2c", "536870912"}, "set": {"2c", "7"}}},
		{"tend's cgroup", `
init_containers: [{name: setup, command: "true"}]
containers:
  - {name: own, command: "true", limits: {cpu: 0.5}}
  - {name: none, command: "true"}
`, map[string][2]string{"setup": {"1.5c", "1073741824"}, "own": {"0.5c", "1073741824"}, "none": {"1.5c", "1073741824"}}},
		{"spec env wins", `
env: [{name: CPU_LIMIT, value: "9c"}]
containers:
  - {name: own, command: "true", limits: {cpu: 0.5, memory: 1Mi}}
`, map[string][2]string{"own": {"9c", "1048576"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustLoad(t, tt.spec, nil)
			got := map[string][2]string{}
			env := func(list []string) [2]string {
				var v [2]string
				for _, kv := range list {
					if x, ok := strings.CutPrefix(kv, "CPU_LIMIT="); ok {
						v[0] = x
					}
					if x, ok := strings.CutPrefix(kv, "MEM_LIMIT="); ok {
						v[1] = x
					}
				}
				return v
			}
			for i := range s.InitContainers {
				got[s.InitContainers[i].Name] = env(s.ProcessEnvAs(s.InitContainers[i].Env, s.InitContainers[i].Identity()))
			}
			for i := range s.Containers {
				got[s.Containers[i].Name] = env(s.ContainerEnv(&s.Containers[i]))
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("%s: CPU_LIMIT, MEM_LIMIT = %q, want %q", name, got[name], want)
				}
			}
		})
	}
}
