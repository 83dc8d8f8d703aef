package spec

import (
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeSpec(t, tt.doc, nil), testOptions())
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("error %v, want ...%q", err, tt.want)
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
