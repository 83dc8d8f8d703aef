package convert

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tend-sh/tend/spec"
)

func names(s *spec.Spec) []string {
	var out []string
	for _, c := range s.Containers {
		out = append(out, c.Name)
	}
	return out
}

func container(t *testing.T, s *spec.Spec, name string) spec.Container {
	t.Helper()
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %s in %v", name, names(s))
	return spec.Container{}
}

// i64 is the field's value, -1 when unset (so that a test tells an absent field from 0).
func i64(o spec.Opt[int64]) int64 {
	if !o.IsSet() {
		return -1
	}
	return o.Get()
}

func TestSupervisordMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "supervisord.conf"), "supervisord.conf", Auto).Spec
	if got, want := names(s), []string{"php-fpm", "nginx-0", "nginx-1", "cron"}; !reflect.DeepEqual(got, want) {
		t.Errorf("containers %v, want %v (priority order, numprocs expanded)", got, want)
	}
	nginx := container(t, s, "nginx-1")
	if !strings.Contains(nginx.Command.String, "worker 1 started") || nginx.RestartPolicy.Mode != spec.ModeAlways {
		t.Errorf("nginx-1: %+v", nginx)
	}
	sp := nginx.StopPolicy
	if sp.UnixSignal == nil || sp.UnixSignal.Signal != "SIGQUIT" || sp.MaxTries.Get() != 1 || i64(sp.TimeLimit.MinRestartPeriodMs) != 5000 || sp.TermTimeoutMs.IsSet() {
		t.Errorf("nginx stop policy %+v: want SIGQUIT once, SIGKILL 5 s later", sp)
	}
	php := container(t, s, "php-fpm")
	if i64(php.StopPolicy.TermTimeoutMs) != 5000 || php.StopPolicy.UnixSignal != nil || i64(php.RestartPolicy.StableAfterMs) != 2000 {
		t.Errorf("php-fpm: stop %+v restart %+v", php.StopPolicy, php.RestartPolicy)
	}
	if want := []spec.EnvVar{{Name: "PHP_MEMORY_LIMIT", Value: "256M"}, {Name: "APP_ENV", Value: "production"}}; !reflect.DeepEqual(php.Env, want) {
		t.Errorf("php-fpm env %+v", php.Env)
	}
	cron := container(t, s, "cron")
	if cron.TargetState != spec.TargetRemoved || cron.RestartPolicy.Mode != spec.ModeOnFailure {
		t.Errorf("cron: autostart=false and the default autorestart: %+v", cron)
	}
	// supervisord gives up after the first start and startretries retries (default 3).
	if got := php.RestartPolicy.MaxFailures.Get(); got != 4 {
		t.Errorf("php-fpm startretries=3: max_failures %d, want 4", got)
	}
	if got := nginx.RestartPolicy.MaxFailures.Get(); got != 4 {
		t.Errorf("nginx, default startretries: max_failures %d, want 4", got)
	}
	res := mustConvert(t, []byte("[program:a]\ncommand=x\nstartretries=0\nuser=nobody\n"), "x.conf", Auto)
	if got := res.Spec.Containers[0].RestartPolicy.MaxFailures.Get(); got != 1 {
		t.Errorf("startretries=0: max_failures %d, want 1 (the first start only)", got)
	}
	if u := res.Spec.Containers[0].User; u != "nobody" {
		t.Errorf("user=nobody: user %q", u)
	}
	for _, want := range []string{
		"[program:a].startretries: max_failures 1: supervisord gives up after the first start and 0 retries",
	} {
		if !strings.Contains(warningText(res), want) {
			t.Errorf("warnings lack %q:\n%s", want, warningText(res))
		}
	}

	conf := "[program:app]\ncommand=./app --dir %(here)s --host %(host_node_name)s --home %(ENV_HOME)s {x}\nprocess_name=%(program_name)s_%(process_num)02d\nnumprocs=2\nnumprocs_start=1\nautorestart=unexpected\nstdout_logfile=logs/%(program_name)s_%(process_num)d.log\nstdout_logfile_maxbytes=50MB\nstdout_logfile_backups=3\n"
	s = mustConvert(t, []byte(conf), "x.conf", Auto).Spec
	if got := names(s); !reflect.DeepEqual(got, []string{"app_01", "app_02"}) {
		t.Errorf("names %v", got)
	}
	app := s.Containers[0]
	if want := "./app --dir {BSCONFIG_IDIR} --host {BSCONFIG_IHOST} --home /home/test {{x}}"; app.Command.String != want {
		t.Errorf("command %q, want %q", app.Command.String, want)
	}
	if app.Log == nil || app.Log.File != "logs/app_1.log" || app.Log.MaxSizeMb.Get() != 50 || app.Log.MaxFiles.Get() != 3 {
		t.Errorf("log %+v", app.Log)
	}
}

func TestProcessComposeMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "process-compose.yaml"), "process-compose.yaml", Auto).Spec
	if got := names(s); !reflect.DeepEqual(got, []string{"db", "migrate", "api", "worker"}) {
		t.Errorf("containers %v: want the order of the file", got)
	}
	api := container(t, s, "api")
	if want := []string{"bash", "-c", `while :; do echo "api: serving on $PORT"; sleep 1; done`}; !reflect.DeepEqual(api.Command.List, want) {
		t.Errorf("api command %q", api.Command.List)
	}
	rp := api.RestartPolicy
	if rp.Mode != spec.ModeOnFailure || i64(rp.MinPeriodMs) != 2000 || i64(rp.MaxPeriodMs) != 2000 || rp.Backoff.Get() != 1 {
		t.Errorf("api restart %+v: want on_failure every 2 s", rp)
	}
	if sp := api.StopPolicy; sp.UnixSignal == nil || sp.UnixSignal.Signal != "SIGINT" || i64(sp.TimeLimit.MinRestartPeriodMs) != 5000 {
		t.Errorf("api stop %+v: want SIGINT, SIGKILL 5 s later", sp)
	}
	if lp := api.LivenessProbe; lp.Exec == nil || i64(lp.TimeLimit.MinRestartPeriodMs) != 2000 || i64(lp.TimeLimit.InitialDelayMs) != 0 || lp.FailureThreshold.Get() != 3 {
		t.Errorf("api liveness %+v", lp)
	}
	if !reflect.DeepEqual(s.Env, []spec.EnvVar{{Name: "APP_ENV", Value: "dev"}}) || !reflect.DeepEqual(api.Env, []spec.EnvVar{{Name: "PORT", Value: "8080"}}) {
		t.Errorf("env %+v / %+v", s.Env, api.Env)
	}
	if m := container(t, s, "migrate"); m.RestartPolicy.Mode != spec.ModeNever || i64(m.StopPolicy.TermTimeoutMs) != 10000 {
		t.Errorf("migrate: process-compose's defaults (restart no, 10 s shutdown): %+v %+v", m.RestartPolicy, m.StopPolicy)
	}
	if w := container(t, s, "worker"); w.StopPolicy.Exec == nil || i64(w.StopPolicy.WaitAfterMs) != 3000 {
		t.Errorf("worker stop %+v", w.StopPolicy)
	}
	deps := map[string]map[string]string{}
	for _, c := range s.Containers {
		deps[c.Name] = c.DependsOn
	}
	if want := map[string]map[string]string{
		"db": nil, "migrate": {"db": "ready"}, "api": {"db": "ready", "migrate": "succeeded"}, "worker": {"api": "ready"},
	}; !reflect.DeepEqual(deps, want) {
		t.Errorf("depends_on %v, want %v", deps, want)
	}
	if rp := api.ReadinessProbe; rp == nil || !rp.LogLine.IsSet() || rp.LogLine.Get() != "api: serving on" {
		t.Errorf("api readiness (ready_log_line) %+v", rp)
	}
	// max_restarts 5: the first run and 5 restarts, none forgotten after a long run.
	if rp.MaxFailures.Get() != 6 || i64(rp.StableAfterMs) != pcNeverStableMs {
		t.Errorf("api max_restarts 5: max_failures %d, stable_after_ms %d", rp.MaxFailures.Get(), i64(rp.StableAfterMs))
	}

	yml := "shell: {shell_command: bash, shell_argument: -lc}\nprocesses:\n  a:\n    command: echo {}\n    disabled: true\n    availability: {restart: exit_on_failure, max_restarts: 3}\n    readiness_probe:\n      http_get: {port: 8080, path: /ok, scheme: https, headers: {X-Token: [\"a{b}\", c], Accept: text/plain}}\n"
	res := mustConvert(t, []byte(yml), "pc.yaml", Auto)
	a := res.Spec.Containers[0]
	if !reflect.DeepEqual(a.Command.List, []string{"bash", "-lc", "echo {{}}"}) || a.TargetState != spec.TargetRemoved {
		t.Errorf("a: %+v", a)
	}
	// exit_on_failure: no restart, and the first non-zero exit however long the run
	// shuts the instance down.
	if rp := a.RestartPolicy; rp.Mode != spec.ModeOnFailure || rp.MaxFailures.Get() != 1 || rp.OnGiveUp != spec.GiveUpShutdown || i64(rp.StableAfterMs) != pcNeverStableMs {
		t.Errorf("exit_on_failure: restart policy %+v", rp)
	}
	h := a.ReadinessProbe.HTTPGet
	if h.Host != "127.0.0.1" || h.Port != "8080" || h.Path != "/ok" || h.Scheme != spec.SchemeHTTPS {
		t.Errorf("http_get %+v", h)
	}
	if want := []spec.HTTPHeader{{Name: "X-Token", Value: "a{{b}}"}, {Name: "X-Token", Value: "c"}, {Name: "Accept", Value: "text/plain"}}; !reflect.DeepEqual(h.Headers, want) {
		t.Errorf("headers %+v, want %+v", h.Headers, want)
	}
	for _, want := range []string{
		"processes.a.availability.restart: on_failure with max_failures 1 and on_give_up shutdown",
		"processes.a.availability.max_restarts: dropped (process-compose counts restarts only with restart always or on_failure)",
	} {
		if !strings.Contains(warningText(res), want) {
			t.Errorf("warnings lack %q:\n%s", want, warningText(res))
		}
	}
	if strings.Contains(warningText(res), "not supported yet") {
		t.Errorf("warnings:\n%s", warningText(res))
	}
}

// depends_on conditions, process-compose's default condition, and ready_log_line as
// a log_line readiness probe that matches its text literally.
func TestProcessComposeDependsOnAndLogLine(t *testing.T) {
	yml := `processes:
  a: {command: x, ready_log_line: "ready (v1.2) *"}
  b: {command: x}
  c:
    command: x
    availability: {restart: always, max_restarts: 0}
    depends_on:
      a: {condition: process_log_ready}
      b: {condition: process_healthy}
      d: {condition: process_completed}
      e: {condition: process_completed_successfully}
      f: {condition: process_started}
      g: {}
`
	res := convertOnly(t, []byte(yml), "pc.yaml", "it depends on containers it does not define")
	c := container(t, res.Spec, "c")
	want := map[string]string{"a": "ready", "b": "ready", "d": "completed", "e": "succeeded", "f": "started", "g": "started"}
	if !reflect.DeepEqual(c.DependsOn, want) {
		t.Errorf("depends_on %v, want %v", c.DependsOn, want)
	}
	if c.RestartPolicy.MaxFailures.IsSet() {
		t.Errorf("max_restarts 0 (unlimited): max_failures %d, want none", c.RestartPolicy.MaxFailures.Get())
	}
	re := container(t, res.Spec, "a").ReadinessProbe.LogLineRegexp()
	if re == nil || !re.MatchString("server ready (v1.2) * at :80") || re.MatchString("ready (v1x2) *") {
		t.Errorf("ready_log_line as %v: want its text matched literally anywhere in a line", re)
	}
	if w := warningText(res); w != "" && strings.Contains(w, "depends_on") {
		t.Errorf("warnings:\n%s", w)
	}

	// tend always stops dependents first: process-compose's ordered_shutdown: true.
	for ordered, want := range map[string]string{"true": "", "false": "ordered_shutdown: dropped (tend always stops a container before the ones it depends on"} {
		res := mustConvert(t, []byte("ordered_shutdown: "+ordered+"\nprocesses:\n  a: {command: x}\n"), "pc.yaml", Auto)
		if got := warningText(res); (want == "" && strings.Contains(got, "ordered_shutdown")) || !strings.Contains(got, want) {
			t.Errorf("ordered_shutdown: %s: warnings %q, want %q", ordered, got, want)
		}
	}

	for _, tc := range []struct{ yml, want string }{
		{"processes:\n  a: {command: x, depends_on: {b: {condition: process_ready}}}\n  b: {command: x}\n", `processes.a.depends_on.b.condition: unknown condition "process_ready"`},
		{"processes:\n  a:\n    command: x\n    ready_log_line: up\n    readiness_probe: {exec: {command: x}}\n", "processes.a.ready_log_line: ready_log_line and readiness_probe exclude each other"},
		{"processes:\n  a: {command: x, availability: {restart: always, max_restarts: -1}}\n", "processes.a.availability.max_restarts: must not be negative"},
	} {
		_, err := Convert([]byte(tc.yml), "pc.yaml", Auto, testEnviron)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yml, err, tc.want)
		}
	}
}

// YAML anchors and merge keys, common in process-compose files, are followed.
func TestProcessComposeMergeKeys(t *testing.T) {
	yml := "x-common: &common\n  availability: {restart: always}\n  environment: [\"A=1\"]\nprocesses:\n  a:\n    <<: *common\n    command: x\n    environment: [\"B=2\"]\n"
	res := mustConvert(t, []byte(yml), "pc.yaml", Auto)
	a := res.Spec.Containers[0]
	if a.RestartPolicy.Mode != spec.ModeAlways || !reflect.DeepEqual(a.Env, []spec.EnvVar{{Name: "B", Value: "2"}}) {
		t.Errorf("merged %+v %+v: want restart from the anchor, environment of the process", a.RestartPolicy, a.Env)
	}
	if !strings.Contains(warningText(res), "x-common: unknown field (ignored)") {
		t.Errorf("warnings:\n%s", warningText(res))
	}
}

func warningText(res *Result) string {
	var b strings.Builder
	for _, w := range res.Warnings {
		b.WriteString(w.String() + "\n")
	}
	return b.String()
}

func TestISSMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "iss.json"), "iss.json", Auto).Spec
	if s.Instance.Name != "18080@localhost" || s.Instance.Port.Get() != 18080 {
		t.Errorf("instance %+v", s.Instance)
	}
	// configurationId names the revision (its '#' becomes '-').
	if s.Instance.Revision != "web-search-1700000000000" {
		t.Errorf("configurationId web-search#1700000000000: instance.revision %q", s.Instance.Revision)
	}
	if want := map[string]string{"a_geo": "sas", "shard_name": "web-000"}; !reflect.DeepEqual(s.Instance.Vars, want) {
		t.Errorf("vars %v", s.Instance.Vars)
	}
	if len(s.Resources) != 2 || !s.Resources[0].Executable || s.Resources[0].Checksum != "MD5:5da98cf10f0f8a2b57a147fcab95f5a3" || s.Resources[0].CheckPeriod != "0d1h0m" {
		t.Errorf("resources %+v", s.Resources)
	}
	// uuid and cached are the resource's own; size 0 is no check, as in ISS.
	if r := s.Resources[0]; r.UUID != "iss_hook_start-1.0" || !r.Cached || r.Size.IsSet() {
		t.Errorf("uuid %q cached %v size %v, want iss_hook_start-1.0, true, unset", r.UUID, r.Cached, r.Size)
	}
	c := container(t, s, "iss_hook_start")
	if c.Command.String != "./iss_hook_start" || c.RestartPolicy.Mode != spec.ModeAlways || i64(c.RestartPolicy.MaxPeriodMs) != 30000 || c.RestartPolicy.Backoff.Get() != 2 {
		t.Errorf("container %+v restart %+v", c, c.RestartPolicy)
	}
	if lp := c.LivenessProbe; lp == nil || lp.Exec.Command.String != "./iss_hook_status" || i64(lp.TimeLimit.MaxExecutionTimeMs) != 1000 || i64(lp.TimeLimit.InitialDelayMs) != 1000 {
		t.Errorf("liveness %+v", lp)
	}
	if i64(c.MaxRunMs) != 0 {
		t.Errorf("maxExecutionTimeMs 0 (no limit): max_run_ms %d", i64(c.MaxRunMs))
	}

	job := `[{"@class": "ru.yandex.iss.Job", "slot": "job@h", "resources": {
	  "iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/start"]},
	  "iss_hook_stop": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/stop"]},
	  "geo": {"@class": "ru.yandex.iss.DynamicResource", "urls": ["http://h/geo.tgz"], "verification": {"checksum": "EMPTY:"}}},
	  "timeLimits": {"iss_hook_stop": {"minRestartPeriodMs": 2000, "maxRestartPeriodMs": 2000, "restartPeriodBackoff": 0},
	    "iss_hook_start": {"maxExecutionTimeMs": 30000}}}]`
	res := mustConvert(t, []byte(job), "job.json", Auto)
	s = res.Spec
	c = s.Containers[0]
	if i64(c.MaxRunMs) != 30000 || !strings.Contains(warningText(res), "[0].timeLimits.iss_hook_start.maxExecutionTimeMs: tend ends a run this long by the stop sequence") {
		t.Errorf("maxExecutionTimeMs of the start hook: max_run_ms %d, warnings:\n%s", i64(c.MaxRunMs), warningText(res))
	}
	if c.RestartPolicy.Mode != spec.ModeOnFailure || c.StopPolicy.Exec.Command.String != "./iss_hook_stop" || c.StopPolicy.TimeLimit.RestartPeriodBackOff.Get() != 1 {
		t.Errorf("job container %+v stop %+v", c, c.StopPolicy)
	}
	if d := s.DynamicResources; len(d) != 1 || d[0].Destination != "geo" || d[0].StorageDir != ".geo.versions" {
		t.Errorf("dynamic %+v", d)
	}

	// size is checked before the download (a warning says ISS reserves it); a
	// dynamic resource's uuid, cached and size are dropped, each saying why.
	sized := `[{"@class": "ru.yandex.iss.Instance", "slot": "s@h", "resources": {
	  "iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/start"], "size": 1048576, "cached": false},
	  "geo": {"@class": "ru.yandex.iss.DynamicResource", "urls": ["http://h/geo"], "uuid": "geo-7", "cached": true, "size": 5}}}]`
	res = mustConvert(t, []byte(sized), "sized.json", Auto)
	if r := res.Spec.Resources[0]; r.Size.Get() != 1048576 || r.Cached {
		t.Errorf("size %v cached %v, want 1048576, false", r.Size, r.Cached)
	}
	text := warningText(res)
	for _, want := range []string{
		"[0].resources.iss_hook_start.size: tend checks that much free space in instance.dir before the download",
		"[0].resources.geo.uuid: dropped (tend knows a version of a dynamic resource by its revision and urls)",
		"[0].resources.geo.cached: dropped (tend keeps cached_revisions_count versions",
		"[0].resources.geo.size: dropped (tend checks the free space only for static resources)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "iss_hook_start.cached") || strings.Contains(text, "reserves no disk space") {
		t.Errorf("a static resource's cached is mapped, not warned about:\n%s", text)
	}
}

func TestPodAgentMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "pod_agent.yaml"), "pod_agent.yaml", Auto).Spec
	c := container(t, s, "server")
	if c.LivenessProbe.Exec.Command.String != "cat healthy" || i64(c.LivenessProbe.TimeLimit.MinRestartPeriodMs) != 1000 {
		t.Errorf("liveness %+v", c.LivenessProbe)
	}
	if sp := c.StopPolicy; sp.UnixSignal.Signal != "SIGINT" || sp.MaxTries.Get() != 2 || i64(sp.TimeLimit.MaxRestartPeriodMs) != 3000 {
		t.Errorf("stop %+v", sp)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "GREETING" || len(c.Init) != 1 || c.DestroyPolicy.Exec == nil {
		t.Errorf("server %+v", c)
	}
	if h := container(t, s, "logs_transmitter").DestroyPolicy.HTTPGet; h.Port != "18089" || !h.Any {
		t.Errorf("http destroy %+v", h)
	}
	// The start command's user and group are the container's, for all its processes.
	res := convertOnly(t, []byte("workloads:\n- id: w\n  start: {command_line: x, user: www, group: staff}\n"), "pod.yaml", "user www need not exist here")
	if w := res.Spec.Containers[0]; w.User != "www" || w.Group != "staff" {
		t.Errorf("user %q group %q, want www staff", w.User, w.Group)
	}
	for _, want := range []string{"workloads[0].start.user: tend runs every process of the container", "workloads[0].start.group: tend runs every process of the container"} {
		if !strings.Contains(warningText(res), want) {
			t.Errorf("warnings lack %q:\n%s", want, warningText(res))
		}
	}
	yml := "workloads:\n- id: w\n  start: {command_line: \"awk '{print $1}' f\"}\n  readiness_check: {tcp_check: {port: 8080}}\n  target_state: removed\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "pod.yaml")
	os.WriteFile(path, []byte(yml), 0o644)
	ls, _, err := Load(path, Auto, loadOpts())
	if err != nil {
		t.Fatal(err)
	}
	w := ls.Containers[0]
	if w.Command.String != "awk '{print $1}' f" || w.ReadinessProbe.TCPSocket.Port != "8080" || w.TargetState != spec.TargetRemoved {
		t.Errorf("braces are literal in pod_agent; got %+v", w)
	}
}

// Heroku runs a Procfile's release line once, before the other processes: an init
// container, with a warning; foreman's ports count the processes that stay up.
func TestProcfileRelease(t *testing.T) {
	res := mustConvert(t, []byte("web: ./server\nrelease: ./migrate --yes\nworker: ./work\n"), "Procfile", Auto)
	s := res.Spec
	if got := names(s); !reflect.DeepEqual(got, []string{"web", "worker"}) {
		t.Fatalf("containers %v, want web and worker", got)
	}
	if len(s.InitContainers) != 1 || s.InitContainers[0].Name != "release" ||
		!reflect.DeepEqual(s.InitContainers[0].Command.List, []string{"sh", "-c", "./migrate --yes"}) {
		t.Fatalf("init containers %+v, want release", s.InitContainers)
	}
	want := "release: an init container: it runs once, before the other processes start (Heroku's release phase)"
	if !strings.Contains(warningText(res), want) {
		t.Errorf("warnings lack %q:\n%s", want, warningText(res))
	}
	if s.Containers[1].Env[0].Value != "5100" {
		t.Errorf("worker's PORT %q, want 5100", s.Containers[1].Env[0].Value)
	}
}

func TestProcfileMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "Procfile"), "Procfile", Auto).Spec
	if got := names(s); !reflect.DeepEqual(got, []string{"web", "worker"}) {
		t.Fatalf("containers %v", got)
	}
	for i, port := range []string{"5000", "5100"} {
		c := s.Containers[i]
		if c.Command.List[0] != "sh" || c.Command.List[1] != "-c" || c.RestartPolicy.Mode != spec.ModeAlways || c.Env[0] != (spec.EnvVar{Name: "PORT", Value: port}) {
			t.Errorf("%s: %+v", c.Name, c)
		}
	}
}

// ISS's install hook is an init container with its timeLimits as its time_limit;
// a hook tend does not run is a warning of its own.
func TestISSInstallHook(t *testing.T) {
	conf := `[{"@class": "ru.yandex.iss.Instance", "slot": "s@h", "resources": {
	  "iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/start"]},
	  "iss_hook_install": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/install"]},
	  "iss_hook_reopenlogs": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/reopen"]}},
	  "timeLimits": {"iss_hook_install": {"minRestartPeriodMs": 2000, "maxRestartPeriodMs": 4000, "maxExecutionTimeMs": 60000, "restartPeriodBackoff": 0},
	    "iss_hook_reopenlogs": {"maxExecutionTimeMs": 1000}}}]`
	res := mustConvert(t, []byte(conf), "iss.json", Auto)
	s := res.Spec
	if len(s.InitContainers) != 1 {
		t.Fatalf("init containers %+v, want iss_hook_install", s.InitContainers)
	}
	ic := s.InitContainers[0]
	tl := ic.TimeLimit
	if ic.Name != "iss_hook_install" || ic.Command.String != "./iss_hook_install" || tl == nil ||
		i64(tl.MinRestartPeriodMs) != 2000 || i64(tl.MaxRestartPeriodMs) != 4000 || i64(tl.MaxExecutionTimeMs) != 60000 || tl.RestartPeriodBackOff.Get() != 1 {
		t.Errorf("init container %+v time_limit %+v", ic, tl)
	}
	text := warningText(res)
	for _, want := range []string{
		"[0].resources.iss_hook_install: an ISS hook is a downloaded program: tend makes it executable (mode 0755) and runs it as init container iss_hook_install, once, before the start hook",
		"[0].resources.iss_hook_reopenlogs: tend fetches this hook and makes it executable but does not run it",
		"[0].timeLimits.iss_hook_reopenlogs: dropped (no hook iss_hook_reopenlogs that tend runs)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("warnings lack %q:\n%s", want, text)
		}
	}
}

// pod_agent's secret_env is read from <secrets_dir>/<alias>/<id>, instance.vars.secrets_dir
// /run/secrets unless set, with a warning naming the file.
func TestPodAgentSecretEnv(t *testing.T) {
	pod := "workloads:\n- id: w\n  env:\n  - name: RSA_KEY\n    value:\n      secret_env: {id: MyRsaKey, alias: MyKeys}\n  start: {command_line: ./server}\n"
	res := convertOnly(t, []byte(pod), "pod.yaml", "the secret file need not exist here")
	s := res.Spec
	env := s.Containers[0].Env
	if len(env) != 1 || env[0].Name != "RSA_KEY" || env[0].ValueFrom == nil || env[0].ValueFrom.File != "{secrets_dir}/MyKeys/MyRsaKey" {
		t.Errorf("env %+v", env)
	}
	if got := s.Instance.Vars["secrets_dir"]; got != "/run/secrets" {
		t.Errorf("instance.vars.secrets_dir = %q, want /run/secrets", got)
	}
	if want := "workloads[0].env[0].value.secret_env: read from /run/secrets/MyKeys/MyRsaKey"; !strings.Contains(warningText(res), want) {
		t.Errorf("warnings lack %q:\n%s", want, warningText(res))
	}
	for bad, want := range map[string]string{
		"{id: ../x, alias: MyKeys}": `secret_env.id: must be a file name (no /, {, }), got "../x"`,
		"{alias: MyKeys}":           "secret_env needs id",
	} {
		_, err := Convert([]byte(strings.Replace(pod, "{id: MyRsaKey, alias: MyKeys}", bad, 1)), "pod.yaml", Auto, testEnviron)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}
