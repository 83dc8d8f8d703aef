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

func i64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
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
	if sp.UnixSignal == nil || sp.UnixSignal.Signal != "SIGQUIT" || *sp.MaxTries != 1 || i64(sp.TimeLimit.MinRestartPeriodMs) != 5000 || sp.TermTimeoutMs != nil {
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

	conf := "[program:app]\ncommand=./app --dir %(here)s --host %(host_node_name)s --home %(ENV_HOME)s {x}\nprocess_name=%(program_name)s_%(process_num)02d\nnumprocs=2\nnumprocs_start=1\nautorestart=unexpected\nstdout_logfile=logs/%(program_name)s.log\nstdout_logfile_maxbytes=50MB\nstdout_logfile_backups=3\n"
	s = mustConvert(t, []byte(conf), "x.conf", Auto).Spec
	if got := names(s); !reflect.DeepEqual(got, []string{"app_01", "app_02"}) {
		t.Errorf("names %v", got)
	}
	app := s.Containers[0]
	if want := "./app --dir {BSCONFIG_IDIR} --host {BSCONFIG_IHOST} --home ${HOME} {{x}}"; app.Command.String != want {
		t.Errorf("command %q, want %q", app.Command.String, want)
	}
	if app.Log == nil || app.Log.File != "logs/app.log" || *app.Log.MaxSizeMb != 50 || *app.Log.MaxFiles != 3 {
		t.Errorf("log %+v", app.Log)
	}
}

func TestProcessComposeMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "process-compose.yaml"), "process-compose.yaml", Auto).Spec
	if got := names(s); !reflect.DeepEqual(got, []string{"db", "migrate", "api", "worker"}) {
		t.Errorf("containers %v: want the order of the file", got)
	}
	api := container(t, s, "api")
	if want := []string{"sh", "-c", `while :; do echo "api: serving on $PORT"; sleep 1; done`}; !reflect.DeepEqual(api.Command.List, want) {
		t.Errorf("api command %q", api.Command.List)
	}
	rp := api.RestartPolicy
	if rp.Mode != spec.ModeOnFailure || i64(rp.MinPeriodMs) != 2000 || i64(rp.MaxPeriodMs) != 2000 || *rp.Backoff != 1 {
		t.Errorf("api restart %+v: want on_failure every 2 s", rp)
	}
	if sp := api.StopPolicy; sp.UnixSignal == nil || sp.UnixSignal.Signal != "SIGINT" || i64(sp.TimeLimit.MinRestartPeriodMs) != 5000 {
		t.Errorf("api stop %+v: want SIGINT, SIGKILL 5 s later", sp)
	}
	if lp := api.LivenessProbe; lp.Exec == nil || i64(lp.TimeLimit.MinRestartPeriodMs) != 2000 || i64(lp.TimeLimit.InitialDelayMs) != 0 || *lp.FailureThreshold != 3 {
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

	yml := "shell: {shell_command: bash, shell_argument: -lc}\nprocesses:\n  a:\n    command: echo {}\n    disabled: true\n    availability: {restart: exit_on_failure}\n    readiness_probe:\n      http_get: {port: 8080, path: /ok, scheme: https}\n"
	res := mustConvert(t, []byte(yml), "pc.yaml", Auto)
	a := res.Spec.Containers[0]
	if !reflect.DeepEqual(a.Command.List, []string{"bash", "-lc", "echo {{}}"}) || a.TargetState != spec.TargetRemoved || a.RestartPolicy.Mode != spec.ModeOnFailure {
		t.Errorf("a: %+v", a)
	}
	if h := a.ReadinessProbe.HTTPGet; h.Host != "127.0.0.1" || h.Port != "8080" || h.Path != "/ok" {
		t.Errorf("http_get %+v", h)
	}
	if !strings.Contains(warningText(res), "processes.a.readiness_probe.http_get.scheme: not supported yet (ignored)") {
		t.Errorf("warnings:\n%s", warningText(res))
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
	if s.Instance.Name != "18080@localhost" || *s.Instance.Port != 18080 {
		t.Errorf("instance %+v", s.Instance)
	}
	if want := map[string]string{"a_geo": "sas", "shard_name": "web-000"}; !reflect.DeepEqual(s.Instance.Vars, want) {
		t.Errorf("vars %v", s.Instance.Vars)
	}
	if len(s.Resources) != 2 || !s.Resources[0].Executable || s.Resources[0].Checksum != "MD5:5da98cf10f0f8a2b57a147fcab95f5a3" || s.Resources[0].CheckPeriod != "0d1h0m" {
		t.Errorf("resources %+v", s.Resources)
	}
	c := container(t, s, "iss_hook_start")
	if c.Command.String != "./iss_hook_start" || c.RestartPolicy.Mode != spec.ModeAlways || i64(c.RestartPolicy.MaxPeriodMs) != 30000 || *c.RestartPolicy.Backoff != 2 {
		t.Errorf("container %+v restart %+v", c, c.RestartPolicy)
	}
	if lp := c.LivenessProbe; lp == nil || lp.Exec.Command.String != "./iss_hook_status" || i64(lp.TimeLimit.MaxExecutionTimeMs) != 1000 || i64(lp.TimeLimit.InitialDelayMs) != 1000 {
		t.Errorf("liveness %+v", lp)
	}

	job := `[{"@class": "ru.yandex.iss.Job", "slot": "job@h", "resources": {
	  "iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/start"]},
	  "iss_hook_stop": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/stop"]},
	  "geo": {"@class": "ru.yandex.iss.DynamicResource", "urls": ["http://h/geo.tgz"], "verification": {"checksum": "EMPTY:"}}},
	  "timeLimits": {"iss_hook_stop": {"minRestartPeriodMs": 2000, "maxRestartPeriodMs": 2000, "restartPeriodBackoff": 0}}}]`
	s = mustConvert(t, []byte(job), "job.json", Auto).Spec
	c = s.Containers[0]
	if c.RestartPolicy.Mode != spec.ModeOnFailure || c.StopPolicy.Exec.Command.String != "./iss_hook_stop" || *c.StopPolicy.TimeLimit.RestartPeriodBackOff != 1 {
		t.Errorf("job container %+v stop %+v", c, c.StopPolicy)
	}
	if d := s.DynamicResources; len(d) != 1 || d[0].Destination != "geo" || d[0].StorageDir != ".geo.versions" {
		t.Errorf("dynamic %+v", d)
	}
}

func TestPodAgentMapping(t *testing.T) {
	s := mustConvert(t, readExample(t, "pod_agent.yaml"), "pod_agent.yaml", Auto).Spec
	c := container(t, s, "server")
	if c.LivenessProbe.Exec.Command.String != "cat healthy" || i64(c.LivenessProbe.TimeLimit.MinRestartPeriodMs) != 1000 {
		t.Errorf("liveness %+v", c.LivenessProbe)
	}
	if sp := c.StopPolicy; sp.UnixSignal.Signal != "SIGINT" || *sp.MaxTries != 2 || i64(sp.TimeLimit.MaxRestartPeriodMs) != 3000 {
		t.Errorf("stop %+v", sp)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "GREETING" || len(c.Init) != 1 || c.DestroyPolicy.Exec == nil {
		t.Errorf("server %+v", c)
	}
	if h := container(t, s, "logs_transmitter").DestroyPolicy.HTTPGet; h.Port != "18089" || !h.Any {
		t.Errorf("http destroy %+v", h)
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
