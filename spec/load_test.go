package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func i64(v int64) Opt[int64] { return Some(v) }

func TestDefaults(t *testing.T) {
	s := mustLoad(t, `
instance: {port: 8080}
resources: [{name: r, urls: ["http://h/r"]}]
dynamic_resources: [{name: d, revision: 1, urls: ["http://h/d"], storage_dir: st, destination: dst, verify: {http_get: {}}}]
init_containers: [{name: i, command: x}]
containers:
  - name: a
    command: x
    init: [{command: y}]
    liveness_probe: {http_get: {}}
    readiness_probe: {tcp_socket: {}}
    startup_probe: {notify: {}}
    destroy_policy: {exec: {command: z}}
    notify_actions: [{http_get: {path: /n}}]
    log: {file: a.log}
`, nil)
	if s.Instance.Name != "host1" || !filepath.IsAbs(s.Instance.Dir) || filepath.Dir(s.Path()) != s.Instance.Dir || s.Instance.InitTimeoutMs.Get() != 0 {
		t.Errorf("instance = %+v, want name host1, dir of the spec file, init_timeout_ms 0", s.Instance)
	}
	if r := s.Resources[0]; r.Checksum != "EMPTY:" || r.CheckPeriod != "0d0h0m" {
		t.Errorf("resource = %+v, want checksum EMPTY:, check_period 0d0h0m", r)
	}
	d := s.DynamicResources[0]
	if d.CachedRevisionsCount.Get() != 3 || d.Checksum != "EMPTY:" || d.Verify.MaxTries.Get() != 1 || d.Verify.HTTPGet.Port != "8080" {
		t.Errorf("dynamic resource = %+v, want cached_revisions_count 3, verify defaulted", d)
	}
	c := s.Containers[0]
	if !c.AffectsReadiness.IsSet() || !c.AffectsReadiness.Get() {
		t.Errorf("affects_readiness = %+v, want true (set)", c.AffectsReadiness)
	}
	wantRP := RestartPolicy{MinPeriodMs: i64(1000), MaxPeriodMs: i64(60000), Backoff: Some(2.0), MaxJitterMs: i64(1000), StableAfterMs: i64(60000), Mode: "always", MaxFailures: Some(0), OnGiveUp: "stop"}
	if !reflect.DeepEqual(*c.RestartPolicy, wantRP) {
		t.Errorf("restart policy = %s, want %s", show(*c.RestartPolicy), show(wantRP))
	}
	probe := timeLimit(5000, 5000, 60000, 1000)
	initTL := timeLimit(0, 1000, 60000, 0)
	handler := timeLimit(0, 1000, 60000, 10000)
	tls := []struct {
		what string
		got  *TimeLimit
		want TimeLimit
	}{
		{"init container", s.InitContainers[0].TimeLimit, initTL},
		{"init command", c.Init[0].TimeLimit, initTL},
		{"liveness", c.LivenessProbe.TimeLimit, probe},
		{"readiness", c.ReadinessProbe.TimeLimit, probe},
		{"startup", c.StartupProbe.TimeLimit, probe},
		{"stop", c.StopPolicy.TimeLimit, handler},
		{"destroy", c.DestroyPolicy.TimeLimit, handler},
		{"notify", c.NotifyActions[0].TimeLimit, handler},
		{"verify", d.Verify.TimeLimit, handler},
	}
	for _, tl := range tls {
		if tl.got == nil || !reflect.DeepEqual(*tl.got, tl.want) {
			t.Errorf("%s time_limit = %s, want %s", tl.what, show(tl.got), show(tl.want))
		}
	}
	if g := c.LivenessProbe.HTTPGet; g.Scheme != "http" || g.Host != "localhost" || g.Path != "/" || g.Port != "8080" {
		t.Errorf("http_get = %+v, want http://localhost:8080/", g)
	}
	if c.NotifyActions[0].HTTPGet.Scheme != "http" || d.Verify.HTTPGet.Scheme != "http" {
		t.Error("http_get scheme of a notify action or verify not defaulted to http")
	}
	if c.MaxRunMs.Get() != 0 || c.StartupProbe.FailureThreshold.Get() != 1 || c.StartupProbe.SuccessThreshold.Get() != 1 {
		t.Errorf("max_run_ms %d, startup thresholds %d/%d; want 0, 1/1", c.MaxRunMs.Get(), c.StartupProbe.FailureThreshold.Get(), c.StartupProbe.SuccessThreshold.Get())
	}
	if tcp := c.ReadinessProbe.TCPSocket; tcp.Host != "::1" || tcp.Port != "8080" {
		t.Errorf("tcp_socket = %+v, want [::1]:8080", tcp)
	}
	if c.LivenessProbe.FailureThreshold.Get() != 1 || c.LivenessProbe.SuccessThreshold.Get() != 1 {
		t.Error("probe thresholds not 1/1")
	}
	sp := c.StopPolicy
	if sp.HTTPGet != nil || sp.Exec != nil || sp.UnixSignal != nil || sp.MaxTries.Get() != 1 || sp.WaitAfterMs.Get() != 0 || sp.TermTimeoutMs.Get() != 30000 {
		t.Errorf("stop policy = %s, want no handler, max_tries 1, wait_after 0, term_timeout 30000", show(sp))
	}
	if c.DestroyPolicy.MaxTries.Get() != 1 || c.NotifyActions[0].MaxTries.Get() != 1 || c.NotifyActions[0].HTTPGet.Port != "8080" {
		t.Error("destroy/notify max_tries or port not defaulted")
	}
	if c.TermBarrier != "IGNORE" || c.TargetState != "active" || c.Log.MaxSizeMb.Get() != 100 || c.Log.MaxFiles.Get() != 5 {
		t.Errorf("container = barrier %q, target %q, log %s", c.TermBarrier, c.TargetState, show(c.Log))
	}
}

// TestPresentZeroStays: a field that is present keeps its value, 0 included.
func TestPresentZeroStays(t *testing.T) {
	s := mustLoad(t, `
instance: {init_timeout_ms: 0}
containers:
  - name: a
    command: x
    restart_policy: {min_period_ms: 0, max_period_ms: 0, max_jitter_ms: 0, stable_after_ms: 0, backoff: 1}
    liveness_probe:
      exec: {command: check}
      failure_threshold: 3
      time_limit: {initial_delay_ms: 0, min_restart_period_ms: 0, max_restart_period_ms: 0, max_execution_time_ms: 0, restart_period_scale_ms: 7, restart_period_back_off: 1.5}
    stop_policy: {term_timeout_ms: 0, wait_after_ms: 0, max_tries: 2, time_limit: {max_execution_time_ms: 0}}
`, nil)
	c := s.Containers[0]
	rp := c.RestartPolicy
	if rp.MinPeriodMs.Get() != 0 || rp.MaxPeriodMs.Get() != 0 || rp.MaxJitterMs.Get() != 0 || rp.StableAfterMs.Get() != 0 || rp.Backoff.Get() != 1 {
		t.Errorf("restart policy = %s, want the zeros kept", show(rp))
	}
	if got, want := *c.LivenessProbe.TimeLimit, (TimeLimit{i64(0), i64(0), i64(0), i64(7), Some(1.5), i64(0)}); !reflect.DeepEqual(got, want) {
		t.Errorf("probe time_limit = %s, want %s", show(got), show(want))
	}
	if c.LivenessProbe.FailureThreshold.Get() != 3 || c.LivenessProbe.SuccessThreshold.Get() != 1 {
		t.Error("thresholds: a given one kept, the other defaulted")
	}
	sp := c.StopPolicy
	if sp.TermTimeoutMs.Get() != 0 || sp.MaxTries.Get() != 2 || sp.TimeLimit.MaxExecutionTimeMs.Get() != 0 || sp.TimeLimit.MinRestartPeriodMs.Get() != 1000 {
		t.Errorf("stop policy = %s", show(sp))
	}
}

func TestInstanceDir(t *testing.T) {
	s := mustLoad(t, "instance: {dir: sub}\ncontainers: [{name: a, command: x, working_dir: w}, {name: b, command: x, working_dir: /abs/./w}, {name: c, command: x}]\n", nil)
	base := filepath.Dir(s.Path())
	if s.Instance.Dir != filepath.Join(base, "sub") {
		t.Errorf("instance.dir = %q, want %q", s.Instance.Dir, filepath.Join(base, "sub"))
	}
	for i, want := range []string{filepath.Join(base, "sub", "w"), "/abs/w", filepath.Join(base, "sub")} {
		if got := s.WorkDir(s.Containers[i].WorkingDir); got != want {
			t.Errorf("WorkDir(containers[%d]) = %q, want %q", i, got, want)
		}
	}
	if got := s.Vars()["BSCONFIG_IDIR"]; got != s.Instance.Dir {
		t.Errorf("BSCONFIG_IDIR = %q, want %q", got, s.Instance.Dir)
	}
}

// TestEnvOrder: tend's environment, variables, limits, env_files, env, own env; later wins.
func TestEnvOrder(t *testing.T) {
	files := map[string]string{
		"a.env": "# comment\n\nFROM_FILE=a\nexport EXPANDED=${HOME}:$FROM_FILE:${BSCONFIG_IPORT}\nSHARED=file-a\nMEM_LIMIT=from-file\n" +
			"QUOTED='$HOME'\nDQUOTED=\"x $FROM_FILE\"\nESCAPED=\\$HOME\nTOP=file\n",
		"dir/b.env":     "FROM_FILE=b\nCHAINED=${FROM_FILE}-${EXPANDED}\n",
		"secrets/token": "s3cr3t\n",
		"secrets/own":   "own-secret",
	}
	s := mustLoad(t, `
instance: {port: 8080, vars: {dc: sas}}
env_files: [a.env, dir/b.env]
env:
  - {name: TOP, value: "top-{dc}"}
  - {name: TOKEN, value_from: {file: secrets/token}}
  - {name: OVERRIDE, value: top}
containers:
  - name: a
    command: x
    env: [{name: OVERRIDE, value: own}, {name: OWN_SECRET, value_from: {file: secrets/own}}, {name: HOME, value: /own}]
`, files)
	env := s.ProcessEnv(s.Containers[0].Env)
	got := map[string]string{}
	var keys []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("duplicate key %s in %q", k, env)
		}
		got[k] = v
		keys = append(keys, k)
	}
	want := map[string]string{
		"PATH": "/usr/bin:/bin", "HOME": "/own", "SHARED": "file-a",
		"BSCONFIG_IPORT": "8080", "BSCONFIG_INAME": "host1", "dc": "sas",
		"CPU_LIMIT": "1.5c", "MEM_LIMIT": "from-file",
		"EXPANDED": "/home/u:a:8080", "QUOTED": "$HOME", "DQUOTED": "x a", "ESCAPED": "$HOME",
		"FROM_FILE": "b", "CHAINED": "b-/home/u:a:8080",
		"TOP": "top-sas", "TOKEN": "s3cr3t", "OVERRIDE": "own", "OWN_SECRET": "own-secret",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
	// Keys keep the place they first appeared: tend's environment first.
	if keys[0] != "HOME" || keys[1] != "PATH" || keys[2] != "SHARED" {
		t.Errorf("env starts with %q, want tend's environment first", keys[:3])
	}
	// The same spec env for an init container without own env.
	base := s.ProcessEnv(nil)
	if slicesIndex(base, "OVERRIDE=top") < 0 || slicesIndex(base, "HOME=/home/u") < 0 {
		t.Errorf("base env = %q, want OVERRIDE=top and HOME=/home/u", base)
	}
	// Argv expands from the assembled env.
	argv, err := Argv(Command{String: `show $TOKEN "$CHAINED" ${OVERRIDE}`}, env)
	if err != nil || !reflect.DeepEqual(argv, []string{"show", "s3cr3t", "b-/home/u:a:8080", "own"}) {
		t.Errorf("Argv = %q, %v", argv, err)
	}
}

// An env file may be a secret: its errors name the file and the line, never the
// line's text (reload_error is served to anyone who reaches a listener).
func TestEnvFileErrors(t *testing.T) {
	tests := []struct{ content, want string }{
		{"NOEQUALS-s3cr3t\n", `a.env:1: want KEY=VALUE`},
		{"# c\n\nexport  s3cr3t\n", `a.env:3: want KEY=VALUE`},
		{"# c\n1X-s3cr3t=y\n", `a.env:2: invalid variable name`},
		{"A=1\ns3cr3t KEY=value\n", `a.env:2: invalid variable name`},
	}
	for _, tt := range tests {
		got := loadErrors(t, "env_files: [a.env]\ncontainers: []\n", map[string]string{"a.env": tt.content})
		if len(got) != 1 || !strings.HasPrefix(got[0], "env_files[0]: ") || !strings.HasSuffix(got[0], tt.want) || strings.Contains(got[0], "s3cr3t") {
			t.Errorf("errors = %q, want env_files[0]: ...%s, without the text", got, tt.want)
		}
	}
}

func TestRenderRedactsSecrets(t *testing.T) {
	s := mustLoad(t, `
instance: {port: 8080}
env: [{name: TOKEN, value_from: {file: token}}, {name: PLAIN, value: "p-{BSCONFIG_IPORT}"}]
containers:
  - name: a
    command: ./srv {BSCONFIG_IPORT}
    env: [{name: OWN, value_from: {file: token}}]
`, map[string]string{"token": "hunter2\n"})
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if strings.Contains(text, "hunter2") {
		t.Fatalf("Render shows the secret:\n%s", text)
	}
	for _, want := range []string{"value: <redacted>", "file: token", "value: p-8080", "command: ./srv 8080",
		"term_timeout_ms: 30000", "min_restart_period_ms: 1000", "term_barrier: IGNORE", "dir: " + s.Instance.Dir} {
		if !strings.Contains(text, want) {
			t.Errorf("Render lacks %q:\n%s", want, text)
		}
	}
	if strings.Count(text, "<redacted>") != 2 {
		t.Errorf("want 2 redacted values:\n%s", text)
	}
	// The secret is still there for the process, and the spec itself is unchanged.
	if env := s.ProcessEnv(s.Containers[0].Env); slicesIndex(env, "OWN=hunter2") < 0 || slicesIndex(env, "TOKEN=hunter2") < 0 {
		t.Errorf("env lacks the secrets: %q", env)
	}
	if s.Env[0].Value != "" {
		t.Errorf("Render changed the spec: %q", s.Env[0].Value)
	}
	// The rendered spec is a spec: without the redacted values it loads again.
	again := strings.ReplaceAll(text, "value: <redacted>", "")
	if _, err := Load(writeSpec(t, again, map[string]string{"token": "x"}), testOptions()); err != nil {
		t.Errorf("rendered spec does not load again: %v\n%s", err, again)
	}
}

func TestSecretErrors(t *testing.T) {
	got := loadErrors(t, "containers: [{name: a, command: x, env: [{name: S, value_from: {file: nope}}]}]\n", nil)
	if len(got) != 1 || !strings.HasPrefix(got[0], "containers[0].env[0].value_from.file: cannot read the secret: open ") ||
		!strings.Contains(got[0], "nope") {
		t.Errorf("errors = %q", got)
	}
}

func TestCommandForms(t *testing.T) {
	s := mustLoad(t, "containers: [{name: a, command: [echo, 'a b', 3]}, {name: b, command: 42}]\n", nil)
	if c := s.Containers[0].Command; !c.IsList || !reflect.DeepEqual(c.List, []string{"echo", "a b", "3"}) {
		t.Errorf("list command = %+v", c)
	}
	if c := s.Containers[1].Command; c.IsList || c.String != "42" {
		t.Errorf("scalar command = %+v", c)
	}
}

func timeLimit(initial, minPeriod, maxPeriod, execution int64) TimeLimit {
	return TimeLimit{i64(initial), i64(minPeriod), i64(maxPeriod), i64(0), Some(1.0), i64(execution)}
}

// show prints a value with its pointers followed, for messages.
func show(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; ")
}

func slicesIndex(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// FileDigest is the first 12 hex digits of the SHA-256 of the file's bytes. The
// revision id covers those bytes, the --var values and the content of the files the
// spec reads (keyed), so that any change of them is a new revision; instance.revision
// names it instead when set.
func TestRevision(t *testing.T) {
	body := "env_files: [app.env]\ncontainers: [{name: a, command: [sleep, '1'], env: [{name: S, value_from: {file: secret}}]}]\n"
	files := map[string]string{"app.env": "A=1\n", "secret": "s3cret\n"}
	path := writeSpec(t, body, files)
	s, err := Load(path, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if got, want := s.FileDigest(), hex.EncodeToString(sum[:])[:12]; got != want {
		t.Errorf("FileDigest() = %q, want %q", got, want)
	}
	if len(s.Revision()) != 12 {
		t.Errorf("Revision() = %q, want 12 hex digits", s.Revision())
	}
	again, err := Load(path, testOptions())
	if err != nil || again.Revision() != s.Revision() {
		t.Errorf("the same inputs gave revision %q, then %q (%v)", s.Revision(), again.Revision(), err)
	}
	withVar := testOptions()
	withVar.Vars = map[string]string{"X": "1"}
	keyed := testOptions()
	keyed.RevisionKey = func(string) []byte { return []byte("another key") }
	for _, tc := range []struct {
		name  string
		body  string
		files map[string]string
		opts  Options
	}{
		{"a changed file", body + "# changed\n", files, testOptions()},
		{"a --var", body, files, withVar},
		{"a changed env file", body, map[string]string{"app.env": "A=2\n", "secret": "s3cret\n"}, testOptions()},
		{"a changed secret", body, map[string]string{"app.env": "A=1\n", "secret": "other\n"}, testOptions()},
		{"another key", body, files, keyed},
	} {
		other, err := Load(writeSpec(t, tc.body, tc.files), tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if other.Revision() == s.Revision() {
			t.Errorf("%s kept revision %q", tc.name, s.Revision())
		}
	}
	named := mustLoad(t, "instance: {revision: v42}\n"+body, files)
	if named.Revision() != "v42" {
		t.Errorf("instance.revision v42 gave revision %q", named.Revision())
	}
	if plain := mustLoad(t, "containers: []\n", nil); plain.Revision() != plain.FileDigest() {
		t.Errorf("a spec that reads nothing else: revision %q, want its file digest %q", plain.Revision(), plain.FileDigest())
	}
	if (&Spec{}).Revision() != "" {
		t.Errorf("a spec not loaded from a file has a revision")
	}
}

// A container's environment is the instance's with its own assignments on top: an
// own key replaces the instance's in place, a new one goes at the end, and an append
// to one container's environment changes neither another's nor the base.
func TestProcessEnvOverlay(t *testing.T) {
	s := mustLoad(t, `
env: [{name: A, value: a}, {name: B, value: b}]
containers:
  - {name: x, command: x, env: [{name: B, value: own}, {name: NEW, value: "1"}]}
  - {name: y, command: y}
`, nil)
	tail := func(env []string) []string { return env[len(env)-3:] }
	base := s.ProcessEnv(nil)
	if got := strings.Join(base[len(base)-2:], " "); got != "A=a B=b" {
		t.Fatalf("base env ends with %q, want A=a B=b", got)
	}
	before := strings.Join(base, " ")
	x := s.ProcessEnv(s.Containers[0].Env)
	if got := strings.Join(tail(x), " "); got != "A=a B=own NEW=1" {
		t.Errorf("x's env ends with %q, want A=a B=own NEW=1", got)
	}
	y := s.ProcessEnv(s.Containers[1].Env)
	_ = append(y, "EXTRA=1")
	again := s.ProcessEnv(nil)
	if got := strings.Join(again, " "); got != before || slicesIndex(again, "EXTRA=1") >= 0 {
		t.Errorf("base env changed to %q by a container's env", again)
	}
	if got := strings.Join(tail(s.ProcessEnv(s.Containers[0].Env)), " "); got != "A=a B=own NEW=1" {
		t.Errorf("x's env ends with %q after y's changed", got)
	}
}

// value_from.file is substituted like an env value: {secrets_dir}/db/password.
func TestValueFromFileSubstituted(t *testing.T) {
	s := mustLoad(t, `
instance: {vars: {secrets_dir: sec}}
env: [{name: PASSWORD, value_from: {file: "{secrets_dir}/db/password"}}]
containers: []
`, map[string]string{"sec/db/password": "hunter2\n"})
	if got := s.Env[0].ValueFrom.File; got != "sec/db/password" {
		t.Errorf("value_from.file = %q, want sec/db/password", got)
	}
	if v := s.Env[0].value(); v != "hunter2" {
		t.Errorf("secret = %q, want hunter2", v)
	}
}
