package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A shell's ${NAME} in a command is a {NAME} substitution to tend: the error says
// how to write it.
func TestShellBraceHint(t *testing.T) {
	got := loadErrors(t, "containers:\n  - name: web\n    command: sh -c 'echo ${HOME}'\n", nil)
	want := "containers[0].command: unknown variable {HOME} (write ${{HOME}} for a literal ${HOME}, or $HOME)"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("errors %q, want %q", got, want)
	}
	// The written fix loads, and the shell gets ${HOME}.
	s := mustLoad(t, "containers:\n  - name: web\n    command: sh -c 'echo ${{HOME}}'\n", nil)
	if argv, err := Argv(s.Containers[0].Command, nil); err != nil || argv[2] != "echo ${HOME}" {
		t.Fatalf("argv %q, %v", argv, err)
	}
}

// A YAML syntax error names the line of the problem, not the line where the list
// or mapping around it began.
func TestSyntaxErrorLines(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"tab", "containers:\n  - name: web\n\tcommand: x\n", "line 3: tab characters are not allowed for indentation"},
		{"tab first", "containers:\n\t- name: a\n", "line 2: tab characters are not allowed for indentation"},
		{"key dedented", "containers:\n  - name: web\n    command: x\n   restart_policy: {}\n",
			"line 4: did not find expected '-' indicator (check the indentation of this line and the one before)"},
		{"list item dedented", "instance:\n  name: x\ncontainers:\n  - name: web\n    command: x\n    env:\n      - name: A\n        value: b\n     - name: C\n",
			"line 9: did not find expected key (check the indentation of this line and the one before)"},
		{"mapping value", "containers:\n  - name: web\n    command: x\n      foo: 1\n",
			"line 4: mapping values are not allowed in this context (check the indentation of this line and the one before)"},
		{"no newline at the end", "a: 1\nb:\n  c: 2\n d: 3", "line 4: did not find expected key (check the indentation of this line and the one before)"},
		// A ": " inside a plain value: the fix is the line with the value quoted.
		{"colon in a value", "containers:\n  - name: web\n    command: python3 -c 'while True: pass'\n",
			`line 3: mapping values are not allowed in this context (a ": " inside a value starts a mapping: quote the value, command: "python3 -c 'while True: pass'")`},
		{"colon in a list item's value", "containers:\n  - command: echo \"a: b\"\n    name: x\n",
			`line 2: mapping values are not allowed in this context (a ": " inside a value starts a mapping: quote the value, command: 'echo "a: b"')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeSpec(t, tt.doc, nil), testOptions())
			var errs *Errors
			if !errors.As(err, &errs) || len(errs.Fields) != 1 {
				t.Fatalf("error %v, want one located error", err)
			}
			if got := fmt.Sprintf("line %d: %s", errs.Fields[0].Line, errs.Fields[0].Msg); got != tt.want {
				t.Fatalf("error %q, want %q", got, tt.want)
			}
		})
	}
}

// A field written without its _ms unit (or in seconds) is suggested with the unit, and
// with the value in milliseconds where it reads as a duration.
func TestMillisecondsHint(t *testing.T) {
	tests := []struct{ field, want string }{
		{"stop_policy: {term_timeout: 5s}", "containers[0].stop_policy.term_timeout: unknown field (did you mean term_timeout_ms? it takes milliseconds: 5000)"},
		{"stop_policy: {wait_after: 1m30s}", "containers[0].stop_policy.wait_after: unknown field (did you mean wait_after_ms? it takes milliseconds: 90000)"},
		{"restart_policy: {min_period: 250ms}", "containers[0].restart_policy.min_period: unknown field (did you mean min_period_ms? it takes milliseconds: 250)"},
		{"restart_policy: {stable_after_seconds: 2}", "containers[0].restart_policy.stable_after_seconds: unknown field (did you mean stable_after_ms? it takes milliseconds: 2000)"},
		{"restart_policy: {max_period: soon}", "containers[0].restart_policy.max_period: unknown field (did you mean max_period_ms? it takes milliseconds)"},
		{"max_run_s: 3", "containers[0].max_run_s: unknown field (did you mean max_run_ms? it takes milliseconds: 3000)"},
		{"liveness_probe: {exec: {command: x}, time_limit: {initial_delay: 2s}}", "containers[0].liveness_probe.time_limit.initial_delay: unknown field (did you mean initial_delay_ms? it takes milliseconds: 2000)"},
		// Other typos still get the nearest name.
		{"stop_policy: {term_timout_ms: 5}", "containers[0].stop_policy.term_timout_ms: unknown field (did you mean term_timeout_ms?)"},
	}
	for _, tt := range tests {
		got := loadErrors(t, "containers:\n  - name: web\n    command: x\n    "+tt.field+"\n", nil)
		if len(got) != 1 || !strings.HasSuffix(got[0], tt.want) {
			t.Errorf("%s: errors %q, want %q", tt.field, got, tt.want)
		}
	}
}

// What compose, Kubernetes and curl users write by habit gets the fix in its error:
// tend's name for the field, the form to write (made from the document's values), the
// literal braces, the number of milliseconds. Each fix, pasted, loads.
func TestHabitHints(t *testing.T) {
	tests := []struct{ name, field, want, fix string }{
		{"compose environment", "environment: {A: b}",
			"containers[0].environment: unknown field (did you mean env?)", "env: [{name: A, value: b}]"},
		{"compose restart", "restart: always",
			"containers[0].restart: unknown field (did you mean restart_policy?)", "restart_policy: {mode: always}"},
		{"compose healthcheck", "healthcheck: {test: [CMD, 'true']}",
			"containers[0].healthcheck: unknown field (did you mean readiness_probe or liveness_probe?)", "readiness_probe: {exec: {command: 'true'}}"},
		{"Kubernetes workingDir", "workingDir: /tmp",
			"containers[0].workingDir: unknown field (did you mean working_dir?)", "working_dir: /tmp"},
		{"env as a mapping", "env: {B: c, PATH_X: \"/a b\"}",
			`containers[0].env: must be a list, got a mapping (write a list: [{name: B, value: c}, {name: PATH_X, value: "/a b"}])`,
			`env: [{name: B, value: c}, {name: PATH_X, value: "/a b"}]`},
		{"env as NAME=VALUE", "env: [A=b]",
			`containers[0].env[0]: must be a mapping, got "A=b" (write {name: A, value: b})`, "env: [{name: A, value: b}]"},
		{"depends_on as a list", "depends_on: [db]",
			"containers[0].depends_on: must be a mapping, got a list (write {db: started}; a condition is started, ready, succeeded or completed)",
			"depends_on: {db: started}"},
		{"curl's %{http_code}", `command: curl -w "%{http_code}" http://127.0.0.1/`,
			"containers[0].command: unknown variable {http_code} (write %{{http_code}} for a literal %{http_code})",
			`command: curl -w "%{{http_code}}" http://127.0.0.1/`},
		{"awk's {print $1}", `command: awk '{print $1}' /etc/hosts`,
			"containers[0].command: unknown variable {print $1} (write {{print $1}} for a literal {print $1})",
			`command: awk '{{print $1}}' /etc/hosts`},
		{"a duration in an _ms field", "stop_policy: {term_timeout_ms: 10s}",
			`containers[0].stop_policy.term_timeout_ms: must be an integer, got "10s" (it takes milliseconds: term_timeout_ms: 10000)`,
			"stop_policy: {term_timeout_ms: 10000}"},
		{"words in an _ms field", "stop_policy: {term_timeout_ms: soon}",
			`containers[0].stop_policy.term_timeout_ms: must be an integer, got "soon" (it takes milliseconds)`,
			"stop_policy: {term_timeout_ms: 1}"},
	}
	const head = "containers:\n  - name: web\n    command: sleep 1\n    "
	const db = "  - name: db\n    command: sleep 1\n"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := head + tt.field + "\n" + db
			if strings.HasPrefix(tt.field, "command:") {
				doc = "containers:\n  - name: web\n    " + tt.field + "\n" + db
			}
			got := loadErrors(t, doc, nil)
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("errors %q, want %q", got, tt.want)
			}
			fixed := head + tt.fix + "\n" + db
			if strings.HasPrefix(tt.fix, "command:") {
				fixed = "containers:\n  - name: web\n    " + tt.fix + "\n" + db
			}
			mustLoad(t, fixed, nil)
		})
	}
}
