package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A first spec written with compose and shell habits: `tend validate` says each fix at
// its file and line, the YAML syntax error included.
func TestValidateSaysTheFix(t *testing.T) {
	dir := t.TempDir()
	colon := filepath.Join(dir, "colon.yaml")
	os.WriteFile(colon, []byte("containers:\n  - name: spin\n    command: python3 -c 'while True: pass'\n"), 0o644)
	_, errOut, code := runCLI(t, dir, "validate", colon)
	want := colon + `:3: mapping values are not allowed in this context (a ": " inside a value starts a mapping: quote the value, command: "python3 -c 'while True: pass'")`
	if code != 2 || !strings.Contains(errOut, want+"\n") {
		t.Errorf("validate colon: exit %d, stderr:\n%s\nwant the line %q", code, errOut, want)
	}

	habits := filepath.Join(dir, "habits.yaml")
	os.WriteFile(habits, []byte(`containers:
  - name: db
    command: sleep 100
  - name: web
    command: curl -w "%{http_code}" http://127.0.0.1:1/
    environment: {A: b}
    restart: always
    healthcheck: {test: [CMD, "true"]}
    env: {B: c}
    depends_on: [db]
    stop_policy: {term_timeout_ms: 10s}
`), 0o644)
	_, errOut, code = runCLI(t, dir, "validate", habits)
	if code != 2 {
		t.Errorf("validate habits: exit %d, want 2", code)
	}
	for _, want := range []string{
		":5: containers[1].command: unknown variable {http_code} (write %{{http_code}} for a literal %{http_code})",
		":6: containers[1].environment: unknown field (did you mean env?)",
		":7: containers[1].restart: unknown field (did you mean restart_policy?)",
		":8: containers[1].healthcheck: unknown field (did you mean readiness_probe or liveness_probe?)",
		":9: containers[1].env: must be a list, got a mapping (write a list: [{name: B, value: c}])",
		":10: containers[1].depends_on: must be a mapping, got a list (write {db: started}; a condition is started, ready, succeeded or completed)",
		`:11: containers[1].stop_policy.term_timeout_ms: must be an integer, got "10s" (it takes milliseconds: term_timeout_ms: 10000)`,
	} {
		if !strings.Contains(errOut, habits+want+"\n") {
			t.Errorf("validate habits: stderr lacks %q:\n%s", habits+want, errOut)
		}
	}
}
