package spec

import (
	"strings"
	"testing"
)

func TestSubstitute(t *testing.T) {
	v := &variables{
		fixed: map[string]string{"BSCONFIG_IPORT": "8080", "BSCONFIG_INAME": "web-1", "a_dc": "sas1", "empty": ""},
		port:  Some(8080), used: map[string]string{},
	}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"{BSCONFIG_IPORT}", "8080"},
		{"--port={BSCONFIG_IPORT} --dc {a_dc}{a_dc}", "--port=8080 --dc sas1sas1"},
		{"{BSCONFIG_IPORT_PLUS_1}", "8081"},
		{"{BSCONFIG_IPORT_PLUS_100}", "8180"},
		{"x{empty}y", "xy"},
		{"{{}}", "{}"},
		{"{{a_dc}}", "{a_dc}"},
		{"{{{a_dc}}}", "{sas1}"},
		{"${{HOME}}", "${HOME}"},
		{"awk '{{print $1}}'", "awk '{print $1}'"},
	}
	for _, tt := range tests {
		got, err := v.substitute(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("substitute(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if v.used["BSCONFIG_IPORT_PLUS_100"] != "8180" || v.used["BSCONFIG_IPORT_PLUS_1"] != "8081" {
		t.Errorf("used = %v, want the PLUS_N variables that were substituted", v.used)
	}
}

// A BSCONFIG_IPORT_PLUS_N written as $NAME or ${NAME} (expanded from the
// environment) is used, and so exported, like {NAME}; a longer name or a literal
// brace is not.
func TestShellUsesOfPortPlus(t *testing.T) {
	v := &variables{fixed: map[string]string{}, port: Some(8080), used: map[string]string{}}
	for _, s := range []string{"serve --admin $BSCONFIG_IPORT_PLUS_4", "${BSCONFIG_IPORT_PLUS_5}/x",
		"$BSCONFIG_IPORT_PLUS_6x {{BSCONFIG_IPORT_PLUS_7}} BSCONFIG_IPORT_PLUS_8 $BSCONFIG_IPORT_PLUS_09"} {
		if _, err := v.substitute(s); err != nil {
			t.Fatalf("substitute(%q): %v", s, err)
		}
	}
	want := map[string]string{"BSCONFIG_IPORT_PLUS_4": "8084", "BSCONFIG_IPORT_PLUS_5": "8085"}
	if len(v.used) != len(want) || v.used["BSCONFIG_IPORT_PLUS_4"] != "8084" || v.used["BSCONFIG_IPORT_PLUS_5"] != "8085" {
		t.Errorf("used = %v, want %v", v.used, want)
	}
}

func TestSubstituteErrors(t *testing.T) {
	withPort := &variables{fixed: map[string]string{"BSCONFIG_IPORT": "8080", "a_dc": "sas1"}, port: Some(8080), used: map[string]string{}}
	noPort := &variables{fixed: map[string]string{"BSCONFIG_INAME": "web-1", "a_dc": "sas1"}, used: map[string]string{}}
	tests := []struct {
		v        *variables
		in, want string
	}{
		{noPort, "{BSCONFIG_IPORT_PLUS_1}", "unknown variable {BSCONFIG_IPORT_PLUS_1} (instance.port is not set)"},
		{noPort, "{BSCONFIG_IPORT}", "unknown variable {BSCONFIG_IPORT} (instance.port is not set)"},
		{withPort, "{BSCONFIG_IPORT_PLUS_0}", "unknown variable {BSCONFIG_IPORT_PLUS_0} (BSCONFIG_IPORT_PLUS_N takes a whole N >= 1)"},
		{withPort, "{BSCONFIG_IPORT_PLUS_01}", "unknown variable {BSCONFIG_IPORT_PLUS_01} (BSCONFIG_IPORT_PLUS_N takes a whole N >= 1)"},
		{withPort, "{BSCONFIG_IPORT_PLUS_x}", "unknown variable {BSCONFIG_IPORT_PLUS_x} (BSCONFIG_IPORT_PLUS_N takes a whole N >= 1)"},
		{withPort, "{a_ddc}", "unknown variable {a_ddc} (did you mean {a_dc}?)"},
		{withPort, "{A_DC}", "unknown variable {A_DC} (did you mean {a_dc}?)"},
		{withPort, "{BSCONFIG_IPOTR}", "unknown variable {BSCONFIG_IPOTR} (did you mean {BSCONFIG_IPORT}?)"},
		{withPort, "{something_else}", "unknown variable {something_else} (define it in instance.vars or with --var)"},
		{withPort, "{a_dc:>10}", "unknown variable {a_dc:>10}"},
		{withPort, "a { b", "unmatched '{' at offset 2 (write '{{' for a literal brace)"},
		{withPort, "a {b", "unmatched '{' at offset 2"},
		{withPort, "{a{a_dc}}", "unmatched '{' at offset 0"},
		{withPort, "a } b", "single '}' at offset 2 (write '}}' for a literal brace)"},
		{withPort, "{a_dc}}", "single '}' at offset 6"},
		{withPort, "{}", "empty variable name {} at offset 0"},
	}
	for _, tt := range tests {
		_, err := tt.v.substitute(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("substitute(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestPlusN(t *testing.T) {
	tests := []struct {
		name string
		n    int
		ok   bool
	}{
		{"BSCONFIG_IPORT_PLUS_1", 1, true},
		{"BSCONFIG_IPORT_PLUS_65535", 65535, true},
		{"BSCONFIG_IPORT_PLUS_0", 0, false},
		{"BSCONFIG_IPORT_PLUS_", 0, false},
		{"BSCONFIG_IPORT_PLUS_-1", 0, false},
		{"BSCONFIG_IPORT_PLUS_+1", 0, false},
		{"BSCONFIG_IPORT_PLUS_999999", 0, false},
		{"BSCONFIG_IPORT_PLUS_1a", 0, false},
		{"BSCONFIG_IPORT", 0, false},
	}
	for _, tt := range tests {
		n, ok := plusN(tt.name)
		if n != tt.n || ok != tt.ok {
			t.Errorf("plusN(%q) = %d, %v; want %d, %v", tt.name, n, ok, tt.n, tt.ok)
		}
	}
}

// TestSubstitutionPlaces checks every place {VAR} is substituted, end to end.
func TestSubstitutionPlaces(t *testing.T) {
	s := mustLoad(t, `
instance: {port: 9000, vars: {dc: sas}}
env: [{name: TOP, value: "top-{dc}"}]
init_containers:
  - {name: prep, command: "prep {dc}", working_dir: "w/{dc}", env: [{name: I, value: "{BSCONFIG_INAME}"}]}
containers:
  - name: web
    command: [./srv, "--port={BSCONFIG_IPORT}", "{{literal}}"]
    working_dir: "{BSCONFIG_IDIR}/app"
    env: [{name: C, value: "{BSCONFIG_IHOST}:{BSCONFIG_IPORT_PLUS_2}"}]
    init: [{command: "init {dc}"}]
    liveness_probe: {http_get: {port: "{BSCONFIG_IPORT_PLUS_1}", path: "/{dc}/ping"}}
    readiness_probe: {tcp_socket: {port: "{BSCONFIG_IPORT_PLUS_3}"}}
    stop_policy: {exec: {command: "stop {dc}"}}
    destroy_policy: {http_get: {path: "/destroy/{dc}"}}
    notify_actions: [{exec: {command: [notify, "{dc}"]}}]
dynamic_resources:
  - {name: geo, revision: 1, urls: ["http://h/geo"], storage_dir: st, destination: geo, verify: {exec: {command: "verify {dc}"}}}
`, nil)
	c := s.Containers[0]
	dir := s.Instance.Dir
	checks := []struct{ what, got, want string }{
		{"env value", s.Env[0].Value, "top-sas"},
		{"init container command", s.InitContainers[0].Command.String, "prep sas"},
		{"init container working_dir", s.InitContainers[0].WorkingDir, "w/sas"},
		{"init container env", s.InitContainers[0].Env[0].Value, "host1"},
		{"list command", strings.Join(c.Command.List, " "), "./srv --port=9000 {literal}"},
		{"working_dir", c.WorkingDir, dir + "/app"},
		{"container env", c.Env[0].Value, "host1:9002"},
		{"init command", c.Init[0].Command.String, "init sas"},
		{"http port", c.LivenessProbe.HTTPGet.Port, "9001"},
		{"http path", c.LivenessProbe.HTTPGet.Path, "/sas/ping"},
		{"tcp port", c.ReadinessProbe.TCPSocket.Port, "9003"},
		{"stop exec", c.StopPolicy.Exec.Command.String, "stop sas"},
		{"destroy path", c.DestroyPolicy.HTTPGet.Path, "/destroy/sas"},
		{"destroy port (instance.port)", c.DestroyPolicy.HTTPGet.Port, "9000"},
		{"notify", strings.Join(c.NotifyActions[0].Exec.Command.List, " "), "notify sas"},
		{"verify", s.DynamicResources[0].Verify.Exec.Command.String, "verify sas"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.what, ch.got, ch.want)
		}
	}
	if got := c.LivenessProbe.HTTPGet.PortNumber(); got != 9001 {
		t.Errorf("HTTPGet.PortNumber() = %d, want 9001", got)
	}
	if got := c.ReadinessProbe.TCPSocket.PortNumber(); got != 9003 {
		t.Errorf("TCPSocket.PortNumber() = %d, want 9003", got)
	}
	vars := s.Vars()
	for name, want := range map[string]string{
		"BSCONFIG_INAME": "host1", "BSCONFIG_IDIR": dir, "BSCONFIG_IHOST": "host1", "BSCONFIG_IPORT": "9000",
		"BSCONFIG_IPORT_PLUS_1": "9001", "BSCONFIG_IPORT_PLUS_2": "9002", "BSCONFIG_IPORT_PLUS_3": "9003", "dc": "sas",
	} {
		if vars[name] != want {
			t.Errorf("Vars()[%s] = %q, want %q", name, vars[name], want)
		}
	}
}

func TestCLIVarsWin(t *testing.T) {
	path := writeSpec(t, `
instance: {vars: {dc: sas, geo: man}}
containers: [{name: a, command: "run {dc} {geo} {extra}"}]
`, nil)
	opts := testOptions()
	opts.Vars = map[string]string{"dc": "vla", "extra": "x"}
	s, err := Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Containers[0].Command.String; got != "run vla man x" {
		t.Errorf("command = %q, want --var to win over instance.vars", got)
	}
	opts.Vars = map[string]string{"BSCONFIG_IPORT": "1", "bad-name": "x"}
	_, err = Load(path, opts)
	if err == nil || !strings.Contains(err.Error(), "--var BSCONFIG_IPORT: BSCONFIG_IPORT is set from the instance section") ||
		!strings.Contains(err.Error(), `--var bad-name: invalid variable name "bad-name"`) {
		t.Errorf("Load with reserved and bad --var names: %v", err)
	}
}
