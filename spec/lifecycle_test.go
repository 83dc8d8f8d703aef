package spec

import (
	"reflect"
	"strings"
	"testing"
)

// TestLifecycleValidation: every field of depends_on, notify probes and restart limits refuses bad input with
// its path, each case on its own.
func TestLifecycleValidation(t *testing.T) {
	const always = `{name: db, command: x}`
	tests := []struct {
		name, containers, want string
	}{
		// depends_on
		{"unknown dependency", `[{name: api, command: x, depends_on: {dbb: ready}}, ` + always + `]`,
			`containers[0].depends_on.dbb: unknown container "dbb" (did you mean db?)`},
		{"unknown dependency, no guess", `[{name: api, command: x, depends_on: {cache: started}}]`,
			`containers[0].depends_on.cache: unknown container "cache"`},
		{"init container dependency", `[{name: api, command: x, depends_on: {setup: succeeded}}]`,
			`containers[0].depends_on.setup: "setup" is an init container: every init container has finished before any container starts`},
		{"self", `[{name: api, command: x, depends_on: {api: started}}]`,
			`containers[0].depends_on.api: a container cannot depend on itself`},
		{"succeeded on always", `[{name: api, command: x, depends_on: {db: succeeded}}, ` + always + `]`,
			`containers[0].depends_on.db: succeeded on an always container: db never completes`},
		{"completed on always", `[{name: api, command: x, depends_on: {db: completed}}, ` + always + `]`,
			`containers[0].depends_on.db: completed on an always container`},
		{"unknown condition", `[{name: api, command: x, depends_on: {db: up}}, ` + always + `]`,
			`containers[0].depends_on.db: must be started, ready, succeeded or completed, got "up"`},
		{"cycle", `[{name: x, command: x}, {name: y, command: x}, {name: api, command: x, depends_on: {db: ready}}, {name: db, command: x, depends_on: {api: started}}]`,
			`containers[2].depends_on: cycle api -> db -> api`},
		{"list instead of mapping", `[{name: api, command: x, depends_on: [db]}, ` + always + `]`,
			`containers[0].depends_on: must be a mapping, got a list`},
		// restart limits and deadlines
		{"max_failures negative", `[{name: a, command: x, restart_policy: {max_failures: -1}}]`,
			`containers[0].restart_policy.max_failures: must not be negative (0: unlimited), got -1`},
		{"on_give_up unknown", `[{name: a, command: x, restart_policy: {on_give_up: restart}}]`,
			`containers[0].restart_policy.on_give_up: must be stop or shutdown, got "restart"`},
		{"max_run_ms negative", `[{name: a, command: x, max_run_ms: -5}]`,
			`containers[0].max_run_ms: must not be negative, got -5`},
		// probe kinds
		{"notify on liveness", `[{name: a, command: x, liveness_probe: {notify: {}}}]`,
			`containers[0].liveness_probe.notify: notify is only for readiness_probe and startup_probe`},
		{"log_line on liveness", `[{name: a, command: x, liveness_probe: {log_line: ready}}]`,
			`containers[0].liveness_probe.log_line: log_line is only for readiness_probe and startup_probe`},
		{"notify in a stop policy", `[{name: a, command: x, stop_policy: {notify: {}}}]`,
			`containers[0].stop_policy.notify: notify is only for readiness_probe and startup_probe`},
		{"bad regex", `[{name: a, command: x, readiness_probe: {log_line: "ready ("}}]`,
			"containers[0].readiness_probe.log_line: not an RE2 expression: missing closing ): `ready (`"},
		{"Perl regex", `[{name: a, command: x, startup_probe: {log_line: "x(?=y)"}}]`,
			"containers[0].startup_probe.log_line: not an RE2 expression: invalid or unsupported Perl syntax: `(?=`"},
		{"empty regex", `[{name: a, command: x, readiness_probe: {log_line: ""}}]`,
			`containers[0].readiness_probe.log_line: must not be empty (it would match every line)`},
		{"two kinds", `[{name: a, command: x, readiness_probe: {log_line: x, notify: {}}}]`,
			`containers[0].readiness_probe: has both notify and log_line; exactly one of http_get, tcp_socket, exec, notify or log_line`},
		{"startup needs a kind", `[{name: a, command: x, startup_probe: {failure_threshold: 3}}]`,
			`containers[0].startup_probe: needs one of http_get, tcp_socket, exec, notify or log_line`},
		{"startup threshold", `[{name: a, command: x, startup_probe: {exec: {command: x}, failure_threshold: 0}}]`,
			`containers[0].startup_probe.failure_threshold: must be at least 1, got 0`},
		{"watchdog zero", `[{name: a, command: x, readiness_probe: {notify: {watchdog_ms: 0}}}]`,
			`containers[0].readiness_probe.notify.watchdog_ms: must be at least 1, got 0`},
		{"fd stdout", `[{name: a, command: x, readiness_probe: {notify: {fd: 1}}}]`,
			`containers[0].readiness_probe.notify.fd: must be a file descriptor 3-1023 (0-2 are stdin, stdout, stderr), got 1`},
		{"fd and watchdog", `[{name: a, command: x, readiness_probe: {notify: {fd: 3, watchdog_ms: 1000}}}]`,
			`containers[0].readiness_probe.notify: has both fd (s6's protocol) and watchdog_ms (systemd's)`},
		{"notify unknown field", `[{name: a, command: x, readiness_probe: {notify: {watchdogms: 5}}}]`,
			`containers[0].readiness_probe.notify.watchdogms: unknown field (did you mean watchdog_ms?)`},
		// http_get scheme and headers, wherever http_get is accepted
		{"bad scheme", `[{name: a, command: x, liveness_probe: {http_get: {scheme: ftp, port: 1}}}]`,
			`containers[0].liveness_probe.http_get.scheme: must be http or https, got "ftp"`},
		{"scheme case", `[{name: a, command: x, stop_policy: {http_get: {scheme: HTTPS, port: 1}}}]`,
			`containers[0].stop_policy.http_get.scheme: must be http or https, got "HTTPS"`},
		{"bad header name", `[{name: a, command: x, readiness_probe: {http_get: {port: 1, headers: [{name: "X Token", value: v}]}}}]`,
			"containers[0].readiness_probe.http_get.headers[0].name: invalid header name \"X Token\" (letters, digits and !#$%&'*+-.^_`|~)"},
		{"empty header name", `[{name: a, command: x, destroy_policy: {http_get: {port: 1, headers: [{value: v}]}}}]`,
			`containers[0].destroy_policy.http_get.headers[0].name: invalid header name ""`},
		{"framing header", `[{name: a, command: x, notify_actions: [{http_get: {port: 1, headers: [{name: content-length, value: "5"}]}}]}]`,
			`containers[0].notify_actions[0].http_get.headers[0].name: content-length cannot be set: tend frames the request and manages the connection`},
		{"header value newline", `[{name: a, command: x, startup_probe: {http_get: {port: 1, headers: [{name: X-A, value: "a\r\nX-B: b"}]}}}]`,
			`containers[0].startup_probe.http_get.headers[0].value: must not contain CR, LF or NUL`},
		{"header value variable", `[{name: a, command: x, liveness_probe: {http_get: {port: 1, headers: [{name: X-A, value: "{nope}"}]}}}]`,
			`containers[0].liveness_probe.http_get.headers[0].value: unknown variable {nope}`},
		{"header unknown field", `[{name: a, command: x, liveness_probe: {http_get: {port: 1, headers: [{name: X-A, valu: v}]}}}]`,
			`containers[0].liveness_probe.http_get.headers[0].valu: unknown field (did you mean value?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := "init_containers: [{name: setup, command: x}]\ncontainers: " + tt.containers + "\n"
			got := loadErrors(t, body, nil)
			for _, line := range got {
				if strings.HasPrefix(line, tt.want) {
					if len(got) != 1 {
						t.Errorf("want only %q, got:\n%s", tt.want, strings.Join(got, "\n"))
					}
					return
				}
			}
			t.Errorf("errors:\n%s\nwant one starting with %q", strings.Join(got, "\n"), tt.want)
		})
	}
	// A bad condition on a bad container: both are said, neither hides the other.
	got := loadErrors(t, "init_containers: [{name: setup, command: x}]\ncontainers: [{name: api, command: x, depends_on: {setup: finished}}]\n", nil)
	if len(got) != 2 || !strings.Contains(got[0]+got[1], `must be started, ready, succeeded or completed, got "finished"`) ||
		!strings.Contains(got[0]+got[1], `"setup" is an init container`) {
		t.Errorf("a bad condition on an init container: %q, want both errors", got)
	}
	// A verify policy takes http_get too.
	got = loadErrors(t, `{dynamic_resources: [{name: d, revision: 1, urls: ["http://h/d"], storage_dir: s, destination: d,
		verify: {http_get: {port: 1, scheme: ws}}}], containers: []}`, nil)
	if len(got) != 1 || got[0] != `dynamic_resources[0].verify.http_get.scheme: must be http or https, got "ws"` {
		t.Errorf("verify scheme: %q", got)
	}
}

// TestDependencyCycles: each cycle once, at its first container in spec order, as the
// shortest way round from it.
func TestDependencyCycles(t *testing.T) {
	body := `containers:
  - {name: web, command: x, depends_on: {api: ready}}
  - {name: api, command: x, depends_on: {db: ready, cache: ready}}
  - {name: db, command: x, depends_on: {api: started}}
  - {name: cache, command: x, depends_on: {queue: started}}
  - {name: queue, command: x, depends_on: {api: started, log: started}}
  - {name: log, command: x}
  - {name: a, command: x, depends_on: {b: started}}
  - {name: b, command: x, depends_on: {c: started}}
  - {name: c, command: x, depends_on: {a: started}}
`
	want := []string{
		// api, db, cache and queue are one knot; the shortest cycle through api is reported.
		`containers[1].depends_on: cycle api -> db -> api`,
		`containers[6].depends_on: cycle a -> b -> c -> a`,
	}
	if got := loadErrors(t, body, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLifecycleAllAtOnce: one spec with one of each new mistake reports them all, in
// document order.
func TestLifecycleAllAtOnce(t *testing.T) {
	body := `containers:
  - name: api
    command: x
    depends_on: {dbx: ready, db: ready, job: succeeded}
    restart_policy: {max_failures: -2, on_give_up: restart}
    liveness_probe: {notify: {}}
    readiness_probe: {log_line: "("}
    startup_probe: {http_get: {port: 1, scheme: gopher, headers: [{name: "a:b", value: v}]}}
  - name: db
    command: x
    depends_on: {api: started}
  - name: job
    command: x
`
	want := []string{
		`containers[0].depends_on.dbx: unknown container "dbx" (did you mean db?)`,
		`containers[0].depends_on.job: succeeded on an always container: job never completes (its restart_policy.mode is always; use never or on_failure, or started/ready)`,
		`containers[0].depends_on: cycle api -> db -> api`, // at the line of depends_on
		`containers[0].restart_policy.max_failures: must not be negative (0: unlimited), got -2`,
		`containers[0].restart_policy.on_give_up: must be stop or shutdown, got "restart"`,
		`containers[0].liveness_probe.notify: notify is only for readiness_probe and startup_probe`,
		"containers[0].readiness_probe.log_line: not an RE2 expression: missing closing ): `(`",
		`containers[0].startup_probe.http_get.scheme: must be http or https, got "gopher"`,
		"containers[0].startup_probe.http_get.headers[0].name: invalid header name \"a:b\" (letters, digits and !#$%&'*+-.^_`|~)",
	}
	if got := loadErrors(t, body, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLifecycleValid(t *testing.T) {
	s := mustLoad(t, `
instance: {port: 8443, vars: {token: s3cret}}
containers:
  - name: db
    command: x
    readiness_probe: {log_line: 'database system is ready\b'}
  - name: migrate
    command: x
    restart_policy: {mode: on_failure, max_failures: 3, on_give_up: shutdown}
    max_run_ms: 60000
  - name: api
    command: x
    depends_on: {migrate: succeeded, db: ready, cache: started}
    startup_probe: {notify: {watchdog_ms: 5000}, failure_threshold: 30}
    readiness_probe: {notify: {fd: 3}}
    liveness_probe:
      http_get: {scheme: https, path: /healthz, headers: [{name: Authorization, value: "Bearer {token}"}, {name: X-Empty, value: ""}]}
    stop_policy: {http_get: {path: /quit, headers: [{name: Host, value: api.local}]}}
  - name: cache
    command: x
    restart_policy: {mode: never}
`, nil)
	db, migrate, api := &s.Containers[0], &s.Containers[1], &s.Containers[2]
	if db.ReadinessProbe.logLine == nil {
		t.Error("log_line was not compiled by Load")
	}
	if re := db.ReadinessProbe.LogLineRegexp(); re == nil || !re.MatchString("LOG:  database system is ready to accept connections") {
		t.Errorf("log_line regexp = %v, want one matching the postgres line", re)
	}
	if rp := migrate.RestartPolicy; rp.MaxFailures.Get() != 3 || rp.OnGiveUp != GiveUpShutdown || migrate.MaxRunMs.Get() != 60000 {
		t.Errorf("migrate: max_failures %d, on_give_up %q, max_run_ms %d", rp.MaxFailures.Get(), rp.OnGiveUp, migrate.MaxRunMs.Get())
	}
	wantDeps := []Dependency{{"cache", CondStarted}, {"db", CondReady}, {"migrate", CondSucceeded}}
	if got := api.Dependencies(); !reflect.DeepEqual(got, wantDeps) {
		t.Errorf("Dependencies = %v, want %v", got, wantDeps)
	}
	if got := wantDeps[1].String(); got != "db: ready" {
		t.Errorf("Dependency.String = %q", got)
	}
	if n := api.StartupProbe.Notify; n == nil || n.WatchdogMs.Get() != 5000 || n.FD.IsSet() {
		t.Errorf("startup notify = %+v", n)
	}
	if n := api.ReadinessProbe.Notify; n == nil || n.FD.Get() != 3 || n.WatchdogMs.IsSet() {
		t.Errorf("readiness notify = %+v", n)
	}
	g := api.LivenessProbe.HTTPGet
	if g.Scheme != "https" || g.Port != "8443" || len(g.Headers) != 2 || g.Headers[0] != (HTTPHeader{"Authorization", "Bearer s3cret"}) {
		t.Errorf("liveness http_get = %+v", g)
	}
	if g := api.StopPolicy.HTTPGet; g.Scheme != "http" || g.Headers[0] != (HTTPHeader{"Host", "api.local"}) {
		t.Errorf("stop http_get = %+v", g)
	}
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scheme: https", "value: Bearer s3cret", "depends_on:\n      cache: started\n      db: ready\n      migrate: succeeded",
		"max_failures: 3", "on_give_up: shutdown", "max_run_ms: 60000", "on_give_up: stop", "max_run_ms: 0",
		"startup_probe:\n      notify:\n        watchdog_ms: 5000", "log_line: database system is ready\\b"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
}

// TestDependencyHelpers pins the helpers the runtime orders starts, shutdowns and the
// TERM barrier by.
func TestDependencyHelpers(t *testing.T) {
	s := mustLoad(t, `containers:
  - {name: web, command: x, depends_on: {api: ready}}
  - {name: log, command: x}
  - {name: api, command: x, depends_on: {db: ready, migrate: succeeded}}
  - {name: db, command: x}
  - {name: migrate, command: x, depends_on: {db: ready}, restart_policy: {mode: never}}
  - {name: metrics, command: x, depends_on: {db: started}}
`, nil)
	if got, want := s.DependencyOrder(), []string{"log", "db", "migrate", "api", "web", "metrics"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DependencyOrder = %v, want %v", got, want)
	}
	for name, want := range map[string][]string{
		"db": {"api", "migrate", "metrics"}, "api": {"web"}, "web": nil, "log": nil, "nobody": nil,
	} {
		if got := s.Dependents(name); !reflect.DeepEqual(got, want) {
			t.Errorf("Dependents(%s) = %v, want %v", name, got, want)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"web", "api", true}, {"web", "db", true}, {"web", "migrate", true}, {"api", "db", true},
		{"db", "web", false}, {"api", "web", false}, {"log", "db", false}, {"web", "log", false},
		{"web", "web", false}, {"metrics", "migrate", false}, {"nobody", "db", false},
	} {
		if got := s.DependsOn(tc.a, tc.b); got != tc.want {
			t.Errorf("DependsOn(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	// No depends_on at all: spec order.
	plain := mustLoad(t, `containers: [{name: c, command: x}, {name: a, command: x}, {name: b, command: x}]`, nil)
	if got, want := plain.DependencyOrder(), []string{"c", "a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DependencyOrder without depends_on = %v, want %v", got, want)
	}
	// A spec that did not go through Load may hold a cycle: the helpers still end.
	cyclic := &Spec{Containers: []Container{
		{Name: "a", DependsOn: map[string]string{"b": CondStarted}},
		{Name: "b", DependsOn: map[string]string{"a": CondStarted}},
		{Name: "c"},
	}}
	if got, want := cyclic.DependencyOrder(), []string{"c", "a", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DependencyOrder with a cycle = %v, want %v", got, want)
	}
	if !cyclic.DependsOn("a", "a") || cyclic.DependsOn("c", "a") {
		t.Error("DependsOn on a cycle: a reaches itself, c reaches nothing")
	}
}
