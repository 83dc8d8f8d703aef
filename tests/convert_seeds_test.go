package tests

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// pod_agent's own example of init commands (a secret RSA key put in place by the
// workload's init): the secret_env is read from <secrets_dir>/<alias>/<id>, so the
// workload starts with its key; without the file tend refuses the spec, naming it,
// instead of starting the workload without its key.
func TestPodAgentSecretEnvRuns(t *testing.T) {
	const pod = `workloads:
- id: init_test_workload
  env:
  - name: RSA_KEY
    value:
      secret_env:
        id: MyRsaKey
        alias: MyKeys
  init:
  - command_line: /bin/sh -c 'printf %s "$RSA_KEY" > id_rsa'
  start:
    command_line: /bin/sh -c 'exec sleep 60'
`
	secrets := t.TempDir()
	if err := os.MkdirAll(filepath.Join(secrets, "MyKeys"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "MyKeys", "MyRsaKey"), []byte("-----BEGIN KEY----- abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tp := start(t, pod, runOpts{args: []string{"--var", "secrets_dir=" + secrets}})
	tp.waitStatus(15*time.Second, "the workload running", func(d status.Document) bool {
		return containerStatus(d, "init_test_workload").State == status.Running
	})
	if got := waitFile(t, 5*time.Second, filepath.Join(tp.dir, "id_rsa")); got != "-----BEGIN KEY----- abc" {
		t.Errorf("id_rsa = %q, want the secret", got)
	}
	if strings.Contains(tp.stdout.String()+tp.stderr.String(), "BEGIN KEY") {
		t.Errorf("the secret is in tend's output")
	}

	// The default place, /run/secrets, has no such file here: refused, naming it
	// and the line of the original.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pod.yaml"), []byte(pod), 0o644)
	_, errOut, code := runCLI(t, dir, "validate", "pod.yaml")
	for _, want := range []string{"warning: workloads[0].env[0].value.secret_env: read from /run/secrets/MyKeys/MyRsaKey", "pod.yaml:6: workloads[0].env[0].value.secret_env (containers[0].env[0].value_from.file): cannot read the secret: open /run/secrets/MyKeys/MyRsaKey"} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("validate without the secret: exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
}

// ISS's install hook runs as an init container once the resources are in place,
// before the start hook, which finds what it installed.
func TestISSInstallHookRuns(t *testing.T) {
	hooks := map[string]string{
		"/iss_hook_install": "#!/bin/sh\necho installed by the hook > installed.txt\n",
		"/iss_hook_start":   "#!/bin/sh\ncat installed.txt\nexec sleep 60\n",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := hooks[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	conf := `[{"@class": "ru.yandex.iss.Instance", "slot": "18090@localhost", "resources": {
  "iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["` + srv.URL + `/iss_hook_start"]},
  "iss_hook_install": {"@class": "ru.yandex.iss.Resource", "urls": ["` + srv.URL + `/iss_hook_install"]}},
  "timeLimits": {"iss_hook_install": {"minRestartPeriodMs": 1000, "maxRestartPeriodMs": 1000, "maxExecutionTimeMs": 30000}}}]
`
	tp := start(t, conf)
	doc := tp.waitStatus(20*time.Second, "the start hook running after the install hook", func(d status.Document) bool {
		return len(d.InitContainers) == 1 && d.InitContainers[0].State == status.Succeeded && containerStatus(d, "iss_hook_start").State == status.Running
	})
	if ic := doc.InitContainers[0]; ic.Name != "iss_hook_install" || ic.Attempts != 1 {
		t.Errorf("init container %+v, want iss_hook_install succeeded at once", ic)
	}
	waitFor(t, 10*time.Second, "the start hook's output", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "iss_hook_start | installed by the hook"), out
	})
}
