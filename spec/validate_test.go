package spec

import (
	"errors"
	"strings"
	"testing"
)

// TestValidationAllAtOnce feeds a spec with many errors and expects every one of them,
// with its exact path, in document order.
func TestValidationAllAtOnce(t *testing.T) {
	body := `instance:
  port: 70000
  vars: {BSCONFIG_INAME: x, "9bad": y}
  init_timeout_ms: -1
env:
  - {name: "1BAD", value: x}
  - {name: TOKEN, value: x, value_from: {file: tok}}
  - {name: TOKEN, value: y}
env_files: [missing.env]
resources:
  - {name: model.bin, urls: ["rbtorrent:abc"], checksum: "MD5:xyz", check_period: 1h}
  - {name: model.bin, urls: ["ftp://h/x"]}
dynamic_resources:
  - {name: geo, revision: -1, urls: [], storage_dir: "", destination: model.bin, cached_revisions_count: 0, verify: {}}
init_containers:
  - {name: web, command: ""}
containers:
  - name: web
    command: echo $(date)
    unknown_field: 1
    restart_policy: {min_period_ms: 10, max_period_ms: 5, backoff: 0.5, max_jitter_ms: -1, mode: sometimes}
    liveness_probe:
      http_get: {port: "{BSCONFIG_IPORT_PLUS_1}", path: ping}
      tcp_socket: {port: 1}
      failure_threshold: 0
      time_limit: {min_restart_period_ms: 100, max_restart_period_ms: 50, initial_delay_ms: -5}
    readiness_probe: {}
    stop_policy: {unix_signal: {signal: SIGFOO}, max_tries: 0, term_timeout_ms: -1}
    term_barrier: wait
    destroy_policy: {tcp_socket: {port: 80}}
    notify_actions: [{exec: {command: []}, http_get: {port: abc}}]
    target_state: gone
    log: {file: logs/web.log, max_size_mb: 0}
  - name: "bad name"
    command: ["", x]
    livenes_probe: {}
    readiness_probe: {tcp_socket: {port: "{nope}"}}
    stop_policy: {http_get: {path: /x}, exec: {command: x}}
    log: {file: logs/web.log}
  - name: tmpl
    command: "a { b"
    working_dir: "{BSCONFIG_IPORT_PLUS_0}"
    env: [{name: A, value: "}"}]
`
	want := []string{
		`instance.port: must be a port number 1-65535, got 70000`,
		`instance.vars.9bad: invalid variable name "9bad" (letters, digits and _, not starting with a digit)`,
		`instance.vars.BSCONFIG_INAME: BSCONFIG_INAME is set from the instance section and cannot be redefined in instance.vars`,
		`instance.init_timeout_ms: must not be negative, got -1`,
		`env[0].name: invalid variable name "1BAD" (letters, digits and _, not starting with a digit)`,
		`env[1]: has both value and value_from; use one`,
		`env[1].value_from.file: cannot read the secret: open `,
		`env[2].name: duplicate variable TOKEN (also env[1])`,
		`env_files[0]: open `,
		`resources[0].urls: no http, https or file URL (rbtorrent: and sbr: URLs are skipped)`,
		`resources[0].checksum: must be EMPTY:, MD5:<32 hex digits> or SHA256:<64 hex digits>, got "MD5:xyz"`,
		`resources[0].check_period: must look like 0d1h0m (<days>d<hours>h<minutes>m), got "1h"`,
		`resources[1].name: duplicate resource name "model.bin" (also resources[0])`,
		`resources[1].urls[0]: unsupported URL scheme "ftp" (http, https, file; rbtorrent and sbr are skipped)`,
		`resources[1].urls: no http, https or file URL`,
		`dynamic_resources[0].revision: must not be negative, got -1`,
		`dynamic_resources[0].urls: must list at least one http, https or file URL`,
		`dynamic_resources[0].storage_dir: must be set`,
		`dynamic_resources[0].destination: `, // is also the target of resources[0].name
		`dynamic_resources[0].cached_revisions_count: must be at least 1, got 0`,
		`dynamic_resources[0].verify: needs one of http_get or exec`,
		`init_containers[0].command: must be set`,
		`containers[0].name: duplicate container name "web" (also init_containers[0])`,
		`containers[0].command: command substitution is not supported`,
		`containers[0].unknown_field: unknown field`,
		`containers[0].restart_policy.max_period_ms: must be at least min_period_ms (10), got 5`,
		`containers[0].restart_policy.backoff: must be a number of at least 1, got 0.5`,
		`containers[0].restart_policy.max_jitter_ms: must not be negative, got -1`,
		`containers[0].restart_policy.mode: must be always, on_failure or never, got "sometimes"`,
		`containers[0].liveness_probe: has both http_get and tcp_socket; exactly one of http_get, tcp_socket or exec`,
		`containers[0].liveness_probe.failure_threshold: must be at least 1, got 0`,
		`containers[0].liveness_probe.time_limit.initial_delay_ms: must not be negative, got -5`,
		`containers[0].liveness_probe.time_limit.max_restart_period_ms: must be at least min_restart_period_ms (100), got 50`,
		`containers[0].readiness_probe: needs one of http_get, tcp_socket, exec, notify or log_line`,
		`containers[0].stop_policy.unix_signal.signal: unknown signal "SIGFOO" (a Linux signal name such as SIGINT or INT)`,
		`containers[0].stop_policy.max_tries: must be at least 1, got 0`,
		`containers[0].stop_policy.term_timeout_ms: must not be negative, got -1`,
		`containers[0].term_barrier: must be WAIT or IGNORE, got "wait"`,
		`containers[0].destroy_policy.tcp_socket: not allowed here (use http_get or exec)`,
		`containers[0].notify_actions[0]: has both http_get and exec; exactly one of http_get or exec`,
		`containers[0].target_state: must be active or removed, got "gone"`,
		`containers[0].log.max_size_mb: must be at least 1, got 0`,
		`containers[1].name: invalid container name "bad name"`,
		`containers[1].command[0]: must not be empty (it is the program to run)`,
		`containers[1].livenes_probe: unknown field (did you mean liveness_probe?)`,
		`containers[1].readiness_probe.tcp_socket.port: unknown variable {nope} (define it in instance.vars or with --var)`,
		`containers[1].stop_policy: has both http_get and exec; at most one of http_get, exec or unix_signal`,
		`containers[1].log.file: `, // is also the log file of containers[0]
		`containers[2].command: unmatched '{' at offset 2 (write '{{' for a literal brace)`,
		`containers[2].working_dir: unknown variable {BSCONFIG_IPORT_PLUS_0} (BSCONFIG_IPORT_PLUS_N takes a whole N >= 1)`,
		`containers[2].env[0].value: single '}' at offset 0 (write '}}' for a literal brace)`,
	}
	got := loadErrors(t, body, nil)
	gi := 0
	for _, w := range want {
		found := false
		for j := gi; j < len(got); j++ {
			if strings.HasPrefix(got[j], w) {
				found, gi = true, j+1
				break
			}
		}
		if !found {
			t.Errorf("missing (or out of document order) error %q", w)
		}
	}
	if t.Failed() || len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

func TestValidationCases(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"port not numeric", `containers: [{name: a, command: x, liveness_probe: {tcp_socket: {port: http}}}]`,
			`containers[0].liveness_probe.tcp_socket.port: must be a port number 1-65535, got "http"`},
		{"port zero", `containers: [{name: a, command: x, liveness_probe: {tcp_socket: {port: 0}}}]`,
			`containers[0].liveness_probe.tcp_socket.port: must be a port number 1-65535, got "0"`},
		{"port plus out of range", `{instance: {port: 65535}, containers: [{name: a, command: x, liveness_probe: {http_get: {port: "{BSCONFIG_IPORT_PLUS_1}"}}}]}`,
			`containers[0].liveness_probe.http_get.port: must be a port number 1-65535, got "65536"`},
		{"no port anywhere", `containers: [{name: a, command: x, liveness_probe: {http_get: {path: /}}}]`,
			`containers[0].liveness_probe.http_get.port: must be set (instance.port is not set)`},
		{"a port variable without instance.port", `containers: [{name: a, command: x, liveness_probe: {http_get: {port: "{BSCONFIG_IPORT_PLUS_1}"}}}]`,
			`containers[0].liveness_probe.http_get.port: unknown variable {BSCONFIG_IPORT_PLUS_1} (instance.port is not set)`},
		{"missing command", `containers: [{name: a}]`, `containers[0].command: must be set`},
		{"empty list command", `containers: [{name: a, command: []}]`, `containers[0].command: must not be empty`},
		{"quoted empty command", `containers: [{name: a, command: "''"}]`, `containers[0].command: the program to run is empty`},
		{"unterminated quote", `containers: [{name: a, command: "sh -c 'x"}]`, `containers[0].command: unterminated single quote at offset 6`},
		{"backticks", "containers: [{name: a, command: 'echo `date`'}]", `containers[0].command: command substitution is not supported`},
		{"exec in probe", `containers: [{name: a, command: x, liveness_probe: {exec: {}}}]`, `containers[0].liveness_probe.exec.command: must be set`},
		{"signal in probe", `containers: [{name: a, command: x, liveness_probe: {unix_signal: {signal: INT}}}]`,
			`containers[0].liveness_probe.unix_signal: not allowed here (use http_get, tcp_socket or exec)`},
		{"tcp in stop", `containers: [{name: a, command: x, stop_policy: {tcp_socket: {port: 1}}}]`,
			`containers[0].stop_policy.tcp_socket: not allowed here (use http_get, exec or unix_signal)`},
		{"wrong type", `containers: [{name: a, command: x, stop_policy: {max_tries: many}}]`,
			`containers[0].stop_policy.max_tries: must be an integer, got "many"`},
		{"float for int", `containers: [{name: a, command: x, stop_policy: {max_tries: 1.5}}]`,
			`containers[0].stop_policy.max_tries: must be an integer, got "1.5"`},
		{"list for mapping", `containers: [{name: a, command: x, restart_policy: [1]}]`,
			`containers[0].restart_policy: must be a mapping, got a list`},
		{"mapping command", `containers: [{name: a, command: {a: b}}]`,
			`containers[0].command: must be a string or a list of strings, got a mapping`},
		{"duplicate key", "containers:\n  - name: a\n    command: x\n    name: b\n",
			`containers[0].name: duplicate key (first at line 2)`},
		{"nan backoff", `containers: [{name: a, command: x, restart_policy: {backoff: .nan}}]`,
			`containers[0].restart_policy.backoff: must be a number of at least 1, got NaN`},
		{"http path", `{instance: {port: 80}, containers: [{name: a, command: x, liveness_probe: {http_get: {path: ping}}}]}`,
			`containers[0].liveness_probe.http_get.path: must start with /, got "ping"`},
		{"sha256", `{resources: [{name: r, urls: ["http://h/r"], checksum: "SHA256:abc"}], containers: []}`,
			`resources[0].checksum: must be EMPTY:, MD5:<32 hex digits> or SHA256:<64 hex digits>, got "SHA256:abc"`},
		{"check period", `{resources: [{name: r, urls: ["http://h/r"], check_period: "0d1h"}], containers: []}`,
			`resources[0].check_period: must look like 0d1h0m`},
		{"same uuid, other checksum", `{resources: [{name: a, urls: ["http://h/a"], uuid: u1, checksum: "MD5:99300b5d1e10ec1d72cb45d023fe86ac"}, {name: b, urls: ["http://h/b"], uuid: u1, checksum: "MD5:00000b5d1e10ec1d72cb45d023fe86ac"}], containers: []}`,
			`resources[1].uuid: "u1" is also the uuid of resources[0] (a), whose checksum MD5:99300b5d1e10ec1d72cb45d023fe86ac differs`},
		{"same uuid, one extracted", `{resources: [{name: a, urls: ["http://h/a"], uuid: u1}, {name: b, urls: ["http://h/b"], uuid: u1, extract: true}], containers: []}`,
			`resources[1].uuid: "u1" is also the uuid of resources[0] (a), which is extracted where this one is not`},
		{"uuid with spaces", `{resources: [{name: a, urls: ["http://h/a"], uuid: " u1"}], containers: []}`,
			`resources[0].uuid: must not have leading or trailing spaces`},
		{"size 0", `{resources: [{name: a, urls: ["http://h/a"], size: 0}], containers: []}`,
			`resources[0].size: 0: must be above 0`},
		{"resource name path", `{resources: [{name: a/b, urls: ["http://h/r"]}], containers: []}`,
			`resources[0].name: invalid resource name "a/b"`},
		{"init timeout type", `{instance: {init_timeout_ms: 1m}, containers: []}`,
			`instance.init_timeout_ms: must be an integer, got "1m"`},
		{"secret both", `{env: [{name: A, value_from: {}}], containers: []}`, `env[0].value_from.file: must be set`},
		{"file outside instance.dir", `{files: [{path: conf/../../etc/passwd, content: x}], containers: []}`,
			`files[0].path: "conf/../../etc/passwd" is outside instance.dir`},
		{"file both sources", `{files: [{path: a, content: x, from_file: b}], containers: []}`,
			`files[0]: has both content and from_file; use one`},
		{"file no source", `{files: [{path: a}], containers: []}`, `files[0]: needs content or from_file`},
		{"file mode", `{files: [{path: a, content: x, mode: "0888"}], containers: []}`,
			`files[0].mode: must be an octal mode of at most 0777`},
		{"file setuid mode", `{files: [{path: a, content: x, mode: "4755"}], containers: []}`,
			`files[0].mode: must be an octal mode of at most 0777`},
		{"file on a resource", `{resources: [{name: a, urls: ["http://h/a"]}], files: [{path: a, content: x}], containers: []}`,
			`files[0].path: `},
		{"file content variable", `{files: [{path: a, content: "{NOPE}"}], containers: []}`,
			`files[0].content: unknown variable {NOPE}`},
		{"revision chars", `{instance: {revision: "v 1"}, containers: []}`,
			`instance.revision: must be 1-64 characters of A-Z a-z 0-9 . _ - (not . or ..), got "v 1"`},
		{"revision dots", `{instance: {revision: ".."}, containers: []}`, `instance.revision: must be 1-64 characters`},
		{"revision too long", `{instance: {revision: "` + strings.Repeat("a", 65) + `"}, containers: []}`, `instance.revision: must be 1-64 characters`},
		{"keep_revisions", `{instance: {keep_revisions: -1}, containers: []}`, `instance.keep_revisions: must be at least 0, got -1`},
		{"activate", `{instance: {activate: later}, containers: []}`, `instance.activate: must be auto or manual, got "later"`},
		{"init at", `{init_containers: [{name: i, command: "true", at: later}], containers: []}`,
			`init_containers[0].at: must be activate or install, got "later"`},
		{"revision dir outside install", `{init_containers: [{name: i, command: "touch {REVISION_DIR}/x"}], containers: []}`,
			`init_containers[0].command: unknown variable {REVISION_DIR} (only in an init container with at: install)`},
		{"revision dir in a container", `{containers: [{name: c, command: "ls {REVISION_DIR}"}]}`,
			`containers[0].command: unknown variable {REVISION_DIR} (only in an init container with at: install)`},
		{"rollback_after", `{instance: {rollback_after: 120}, containers: []}`,
			`instance.rollback_after: must be a duration such as 120s or 2m, got "120"`},
		{"top-level typo", `{containres: [], containers: []}`, `containres: unknown field (did you mean containers?)`},
		{"merge key", "x: &x {name: a, command: b}\ncontainers: [{<<: *x}]\n", `x: unknown field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadErrors(t, tt.body, nil)
			for _, line := range got {
				if strings.HasPrefix(line, tt.want) {
					return
				}
			}
			t.Errorf("errors:\n%s\nwant one starting with %q", strings.Join(got, "\n"), tt.want)
		})
	}
}

// A handler port taken from an invalid instance.port is not reported again: the
// error at instance.port says what is wrong. A port written on the handler still is.
func TestInvalidInstancePortReportedOnce(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"out of range", `{instance: {port: 0}, containers: [{name: a, command: x, liveness_probe: {http_get: {path: /}}}]}`,
			[]string{"instance.port: must be a port number 1-65535, got 0"}},
		{"wrong type", `{instance: {port: [1]}, containers: [{name: a, command: x, liveness_probe: {tcp_socket: {}}}]}`,
			[]string{"instance.port: must be an integer, got a list"}},
		{"written on the handler", `{instance: {port: 0}, containers: [{name: a, command: x, liveness_probe: {http_get: {port: 0}}}]}`,
			[]string{"instance.port: must be a port number 1-65535, got 0",
				`containers[0].liveness_probe.http_get.port: must be a port number 1-65535, got "0"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadErrors(t, tt.body, nil); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestValidSpecs(t *testing.T) {
	tests := []struct{ name, body string }{
		{"no containers (prepare only)", `init_containers: [{name: a, command: "true"}]`},
		{"empty containers", `containers: []`},
		{"json", `{"instance": {"port": 8080}, "containers": [{"name": "web", "command": ["./srv", "{BSCONFIG_IPORT}"],
			"liveness_probe": {"http_get": {"path": "/ping"}}}]}`},
		{"json with tabs", "{\n\t\"containers\": [\n\t\t{\"name\": \"a\", \"command\": \"x\"}\n\t]\n}"},
		{"signals", `containers: [{name: a, command: x, stop_policy: {unix_signal: {signal: INT}}},
			{name: b, command: x, stop_policy: {unix_signal: {signal: SIGRTMIN+3}}},
			{name: c, command: x, stop_policy: {unix_signal: {signal: sigusr2}}}]`},
		{"rbtorrent beside http", `{resources: [{name: r, urls: ["rbtorrent:abc", "http://h/r"], checksum: "MD5:99300b5d1e10ec1d72cb45d023fe86ac", check_period: 0d1h0m}], containers: []}`},
		{"cached, size, uuid, cache_max_bytes", `{instance: {cache_max_bytes: 2Gi}, resources: [{name: a, urls: ["http://h/a"], cached: true, size: 512Mi, uuid: u1}, {name: b, urls: ["http://h/b"], uuid: u1, checksum: "MD5:99300b5d1e10ec1d72cb45d023fe86ac"}], containers: []}`},
		{"anchors", `containers: [{name: a, command: &cmd "run", env: &env [{name: A, value: x}]}, {name: b, command: *cmd, env: *env}]`},
		{"nulls are absent", "instance:\ncontainers:\n  - name: a\n    command: x\n    liveness_probe:\n    env:\n"},
		{"commands of docs/reference.md Commands", `containers: [{name: a, command: "bash -c 'command --arg \\$(helper_command)'"}, {name: b, command: "sh -c 'echo ${{MY_ENV_VAR}}'"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(writeSpec(t, tt.body, nil), testOptions()); err != nil {
				t.Errorf("Load: %v", err)
			}
		})
	}
}

func TestSignalNormalised(t *testing.T) {
	s := mustLoad(t, `containers: [{name: a, command: x, stop_policy: {unix_signal: {signal: int}}}, {name: b, command: x, stop_policy: {unix_signal: {signal: RTMAX-1}}}]`, nil)
	if u := s.Containers[0].StopPolicy.UnixSignal; u.Signal != "SIGINT" || u.Number() != 2 {
		t.Errorf("signal = %q (%d), want SIGINT (2)", u.Signal, u.Number())
	}
	if u := s.Containers[1].StopPolicy.UnixSignal; u.Signal != "SIGRTMAX-1" || u.Number() != 63 {
		t.Errorf("signal = %q (%d), want SIGRTMAX-1 (63)", u.Signal, u.Number())
	}
	for _, bad := range []string{"", "SIG", "RTMIN+31", "RTMAX+1", "RTMIN-1", "15", "SIGKILLX"} {
		if _, _, ok := ParseSignal(bad); ok {
			t.Errorf("ParseSignal(%q) ok, want not", bad)
		}
	}
}

func TestErrorsType(t *testing.T) {
	_, err := Load(writeSpec(t, "containers:\n  - {name: a}\n  - {name: a, command: x}\n", nil), testOptions())
	var errs *Errors
	if !errors.As(err, &errs) || len(errs.Fields) != 2 {
		t.Fatalf("Load = %v, want *Errors with 2 fields", err)
	}
	if errs.Fields[0].Line != 2 || errs.Fields[1].Line != 3 {
		t.Errorf("lines = %d, %d; want 2, 3", errs.Fields[0].Line, errs.Fields[1].Line)
	}
	want := "containers[0].command: must be set\ncontainers[1].name: duplicate container name \"a\" (also containers[0])"
	if err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "containers[0].command" {
		t.Errorf("errors.As(*FieldError) = %v", fe)
	}
}
