package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateLifecycleFields: `tend validate` reports every mistake in the fields of
// depends_on, startup and readiness kinds, restart limits and http_get scheme and
// headers at once, each as SPEC:LINE: path: message, and exits 2.
func TestValidateLifecycleFields(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`instance: {port: 8080}
containers:
  - name: api
    command: ./api
    depends_on: {cache: started, db: ready, migrate: succeeded}
    restart_policy: {max_failures: -1, on_give_up: explode}
    liveness_probe: {notify: {}}
    readiness_probe: {log_line: "ready ("}
    startup_probe:
      http_get: {scheme: ftp, headers: [{name: "X Token", value: v}]}
  - name: db
    command: ./db
    depends_on: {api: started}
  - name: migrate
    command: ./migrate
`), 0o644)
	out, errOut, code := runCLI(t, dir, "validate", bad)
	if code != 2 || out != "" {
		t.Errorf("validate: exit %d, stdout %q; want 2 and nothing on stdout", code, out)
	}
	want := []string{
		bad + `:5: containers[0].depends_on.cache: unknown container "cache"`,
		bad + `:5: containers[0].depends_on.migrate: succeeded on an always container: migrate never completes`,
		bad + `:5: containers[0].depends_on: cycle api -> db -> api`,
		bad + `:6: containers[0].restart_policy.max_failures: must not be negative (0: unlimited), got -1`,
		bad + `:6: containers[0].restart_policy.on_give_up: must be stop or shutdown, got "explode"`,
		bad + `:7: containers[0].liveness_probe.notify: notify is only for readiness_probe and startup_probe`,
		bad + ":8: containers[0].readiness_probe.log_line: not an RE2 expression: missing closing ): `ready (`",
		bad + `:10: containers[0].startup_probe.http_get.scheme: must be http or https, got "ftp"`,
		bad + `:10: containers[0].startup_probe.http_get.headers[0].name: invalid header name "X Token"`,
		"tend: " + bad + ": 9 errors",
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	for _, w := range want {
		found := false
		for _, line := range lines {
			found = found || strings.HasPrefix(line, w)
		}
		if !found {
			t.Errorf("validate output lacks %q", w)
		}
	}
	if len(lines) != len(want) {
		t.Errorf("validate printed %d lines, want %d", len(lines), len(want))
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", errOut)
	}
}
