package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tend-sh/tend/status"
)

// tendCtl runs a tend command against tp's socket and returns its combined output
// and exit code.
func tendCtl(t *testing.T, tp *tend, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(tendBin, append(args, "--listen", "unix:"+tp.sock)...)
	cmd.Dir = tp.dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tend %v: %v", args, err)
	}
	return string(out), code
}

// writeFile writes a file into tp's directory.
func writeFile(t *testing.T, tp *tend, name, text string) string {
	t.Helper()
	p := filepath.Join(tp.dir, name)
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "{DIR}", tp.dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func revisionEntry(d status.Document, id string) status.Revision {
	for _, r := range d.Revisions {
		if r.ID == id {
			return r
		}
	}
	return status.Revision{}
}

// revisionSpec is a web container of revision id whose readiness probe passes once
// the file readyFile exists; the container creates created (or nothing when "").
func revisionSpec(id, rollbackAfter, created, readyFile string) string {
	touch := ""
	if created != "" {
		touch = "touch " + created + "; "
	}
	return `instance: {revision: ` + id + `, rollback_after: ` + rollbackAfter + `}
containers:
  - name: web
    command: [sh, -c, "` + touch + `exec sleep 1000"]
    env: [{name: VERSION, value: ` + id + `}]
    readiness_probe: {exec: {command: test -f ` + readyFile + `}, period: 50ms, initial_delay: 0s}
`
}

// An update whose container never becomes ready is rolled back by itself after
// rollback_after: the old revision runs again, the bad one is RolledBack with the
// reason, tend_rollbacks_total counts it, `tend apply` exits 1 saying so, and a
// reload of the same content does not activate it again.
func TestRevisionBadUpdateRollsBackByItself(t *testing.T) {
	tp := start(t, revisionSpec("v1", "1s", "up-v1", "up-v1"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })

	bad := writeFile(t, tp, "bad.yaml", revisionSpec("v2", "1s", "", "never"))
	out, code := tendCtl(t, tp, "apply", bad)
	if code != 1 || !strings.Contains(out, "revision v2 was rolled back") || !strings.Contains(out, "not ready within 1s") {
		t.Errorf("tend apply of a bad revision: exit %d, output:\n%s\nwant exit 1 saying it was rolled back", code, out)
	}
	d := tp.waitStatus(10*time.Second, "v1 active and ready again", func(d status.Document) bool {
		return d.Revision == "v1" && d.Ready.True() && revisionEntry(d, "v2").Ready.Reason == status.ReasonRolledBack
	})
	v2 := revisionEntry(d, "v2")
	if v2.Active || !strings.Contains(v2.Ready.Message, "web: readiness probe failed") {
		t.Errorf("v2 = %+v; want inactive, RolledBack naming web's readiness", v2)
	}
	if v1 := revisionEntry(d, "v1"); !v1.Active || len(d.Revisions) != 2 || d.Revisions[0].ID != "v2" {
		t.Errorf("revisions = %+v; want v2 (newest) then v1 (active)", d.Revisions)
	}
	if !strings.Contains(tp.stderr.String(), `"message":"rolling back: the revision was not ready in time"`) {
		t.Errorf("no warning of the rollback in the log")
	}

	resp, err := tp.client().Get("http://tend/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser rejects /metrics: %v", err)
	}
	if got := sampleValue(families, "tend_rollbacks_total", ""); got != 1 {
		t.Errorf("tend_rollbacks_total = %v, want 1", got)
	}
	if sampleValue(families, "tend_revision_active", "revision=v1") != 1 || sampleValue(families, "tend_revision_active", "revision=v2") != 0 {
		t.Errorf("tend_revision_active: want v1 1, v2 0:\n%s", text)
	}

	// The spec file now says v2: a reload of the rolled-back content changes nothing.
	writeSpec(t, tp, revisionSpec("v2", "1s", "", "never"))
	tp.signal(syscall.SIGHUP)
	waitFor(t, 10*time.Second, "the reload held back", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "tend activate v2"), ""
	})
	if d, _ := tp.status(); d.Revision != "v1" || d.SpecFileRevision != "v2" {
		t.Errorf("after a reload of v2: revision %s, spec_file_revision %q; want v1, v2", d.Revision, d.SpecFileRevision)
	}
}

// `tend rollback` after a good update goes back to the previous revision without
// fetching anything: its resource comes from the revision's store.
func TestRevisionRollbackFetchesNothing(t *testing.T) {
	srv := newFileServer(t, map[string]string{"/a.bin": "version a\n", "/b.bin": "version b\n"})
	specOf := func(id, file string) string {
		return `instance: {revision: ` + id + `}
resources:
  - {name: model.bin, urls: ["` + srv.URL + `/` + file + `"], checksum: "` + md5of(strings.TrimSuffix("version "+file, ".bin")+"\n") + `"}
containers:
  - name: web
    command: [sh, -c, "cat model.bin > seen; exec sleep 1000"]
    readiness_probe: {exec: {command: test -s seen}, period: 50ms, initial_delay: 0s}
`
	}
	tp := start(t, specOf("v1", "a.bin"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	// Ready v1 keeps its resource in its store.
	waitFor(t, 10*time.Second, "v1's resource kept in its store", func() (bool, string) {
		_, err := os.Stat(filepath.Join(tp.dir, ".tend/revisions/v1/resources/model.bin"))
		return err == nil, ""
	})

	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", specOf("v2", "b.bin"))); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, "model.bin")); string(got) != "version b\n" {
		t.Fatalf("model.bin after v2 = %q", got)
	}
	before := srv.count("/a.bin")
	out, code := tendCtl(t, tp, "rollback")
	if code != 0 || !strings.Contains(out, "v1: active and ready") {
		t.Fatalf("tend rollback: exit %d:\n%s", code, out)
	}
	if got, _ := os.ReadFile(filepath.Join(tp.dir, "model.bin")); string(got) != "version a\n" {
		t.Errorf("model.bin after the rollback = %q, want version a", got)
	}
	if n := srv.count("/a.bin"); n != before {
		t.Errorf("the rollback fetched a.bin again (%d requests, %d before)", n, before)
	}
	d, _ := tp.status()
	if d.Revision != "v1" || !revisionEntry(d, "v2").Installed.True() {
		t.Errorf("after the rollback: revision %s, v2 %+v; want v1 active and v2 still installed", d.Revision, revisionEntry(d, "v2"))
	}
	// There is no stable revision before v1 now that v2 is the last stable one: a
	// second rollback goes to v2; an unknown activate is 404, exit 1.
	if out, code := tendCtl(t, tp, "activate", "nope"); code != 1 || !strings.Contains(out, "no such revision") {
		t.Errorf("tend activate nope: exit %d:\n%s", code, out)
	}
}

// A revision pushed over the API survives a restart of tend: with the spec file
// unchanged, the revision active at the stop runs again and the kept ones are
// listed again.
func TestRevisionPushedSurvivesRestart(t *testing.T) {
	tp := start(t, revisionSpec("v1", "0s", "up", "up"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	if out, code := tendCtl(t, tp, "apply", writeFile(t, tp, "v2.yaml", revisionSpec("v2", "0s", "up", "up"))); code != 0 {
		t.Fatalf("tend apply v2: exit %d:\n%s", code, out)
	}
	termAndWait(t, tp, 20*time.Second)

	spec, err := os.ReadFile(filepath.Join(tp.dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	again := start(t, string(spec), runOpts{dir: tp.dir})
	d := again.waitStatus(10*time.Second, "v2 ready after the restart", func(d status.Document) bool { return d.Revision == "v2" && d.Ready.True() })
	if v1 := revisionEntry(d, "v1"); v1.ID != "v1" || v1.Active || !v1.Installed.True() || d.SpecFileRevision != "v1" {
		t.Errorf("after the restart: revisions %+v, spec_file_revision %q; want v1 kept, inactive, and named as the file's", d.Revisions, d.SpecFileRevision)
	}
}

// A first start whose only revision is the spec file's writes nothing to the store
// (a one-shot run pays no fsync for a state the file already says); the first
// change of the file keeps that revision's spec and the state, so a rollback to it
// works, also after a restart of tend.
func TestRevisionFirstStartWritesNothingUntilASecond(t *testing.T) {
	tp := start(t, revisionSpec("v1", "0s", "up", "up"))
	// The revision's own ready, not only the instance's: a reload before the main loop
	// marked v1 ready (a few ms after the instance) leaves v1 never stable, and then
	// there is nothing to roll back to (a CI run saw it).
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool {
		return d.Revision == "v1" && d.Ready.True() && revisionEntry(d, "v1").Ready.True()
	})
	state := filepath.Join(tp.dir, ".tend/revisions.json")
	v1spec := filepath.Join(tp.dir, ".tend/revisions/v1/spec")
	for _, p := range []string{state, v1spec} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after a first start with one revision: %v; want none", p, err)
		}
	}
	writeSpec(t, tp, revisionSpec("v2", "0s", "up", "up"))
	tp.signal(syscall.SIGHUP)
	tp.waitStatus(10*time.Second, "v2 ready", func(d status.Document) bool { return d.Revision == "v2" && d.Ready.True() })
	if got, err := os.ReadFile(v1spec); err != nil || !strings.Contains(string(got), "revision: v1") {
		t.Fatalf("v1's spec in its store after the reload: %q, %v", got, err)
	}
	termAndWait(t, tp, 20*time.Second)
	spec, err := os.ReadFile(filepath.Join(tp.dir, "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	again := start(t, string(spec), runOpts{dir: tp.dir})
	again.waitStatus(10*time.Second, "v2 ready after the restart", func(d status.Document) bool { return d.Revision == "v2" && d.Ready.True() })
	if out, code := tendCtl(t, again, "rollback"); code != 0 || !strings.Contains(out, "v1: active and ready") {
		t.Fatalf("tend rollback after the restart: exit %d:\n%s", code, out)
	}
}

// The revision routes as a client meets them: a PUT of an invalid spec is 422 with
// every error and its line and lists nothing; a dry run says what would restart and
// why and changes nothing; the same id with other content is 409; DELETE of the active
// revision is 409, of an unknown one 404, of an inactive one 200; a rollback with no
// stable revision to go to is 409.
func TestRevisionAPI(t *testing.T) {
	tp := start(t, revisionSpec("v1", "0s", "up", "up"))
	tp.waitStatus(10*time.Second, "v1 ready", func(d status.Document) bool { return d.Revision == "v1" && d.Ready.True() })
	call := func(method, path, body string) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, "http://tend"+path, rd)
		resp, err := tp.client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("POST", "/v1/rollback", ""); code != 409 || !strings.Contains(body, "no stable revision") {
		t.Errorf("rollback with nothing to go to: %d %s", code, body)
	}
	bad := "containers:\n  - name: web\n    command: \"\"\n    restart_policy: {backoff: 0.5}\n"
	code, body := call("PUT", "/v1/revisions/bad", bad)
	var invalid struct {
		Errors []struct {
			Line int    `json:"line"`
			Path string `json:"path"`
		} `json:"errors"`
	}
	json.Unmarshal([]byte(body), &invalid)
	if code != 422 || len(invalid.Errors) != 2 || invalid.Errors[0].Line != 3 || invalid.Errors[1].Line != 4 {
		t.Errorf("PUT of an invalid spec: %d %s; want 422 with both errors and their lines", code, body)
	}
	changed := strings.Replace(revisionSpec("v2", "0s", "up", "up"), "exec sleep 1000", "exec sleep 1001", 1)
	code, body = call("PUT", "/v1/revisions/v2?dry_run=1", changed)
	var plan status.ApplyPlan
	json.Unmarshal([]byte(body), &plan)
	if code != 200 || len(plan.Restart) != 1 || plan.Restart[0] != (status.RestartReason{Name: "web", Field: "command"}) {
		t.Errorf("dry run: %d %s; want web restarted because of its command", code, body)
	}
	d, _ := tp.status()
	if d.Revision != "v1" || len(d.Revisions) != 1 {
		t.Errorf("after a dry run and an invalid spec: revision %s, %d revisions; want v1 alone", d.Revision, len(d.Revisions))
	}
	if code, body := call("PUT", "/v1/revisions/v2", changed); code != 200 {
		t.Fatalf("PUT v2: %d %s", code, body)
	}
	tp.waitStatus(10*time.Second, "v2 active", func(d status.Document) bool { return d.Revision == "v2" })
	if code, body := call("PUT", "/v1/revisions/v2", changed+"# other\n"); code != 409 {
		t.Errorf("PUT v2 with other content: %d %s; want 409", code, body)
	}
	if code, _ := call("DELETE", "/v1/revisions/v2", ""); code != 409 {
		t.Errorf("DELETE of the active revision: %d, want 409", code)
	}
	if code, _ := call("DELETE", "/v1/revisions/nope", ""); code != 404 {
		t.Errorf("DELETE of an unknown revision: %d, want 404", code)
	}
	if code, body := call("DELETE", "/v1/revisions/v1", ""); code != 200 {
		t.Errorf("DELETE of v1: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(tp.dir, ".tend/revisions/v1")); !os.IsNotExist(err) {
		t.Errorf("v1's store is still there after DELETE: %v", err)
	}
	if code, _ := call("POST", "/v1/revisions/v1/activate", ""); code != 404 {
		t.Errorf("activate of a deleted revision: %d, want 404", code)
	}
}

// A reload the moment the instance first reads ready leaves the first revision
// stable, so a rollback comes back to it. A status read between the end of preparing
// and the first container made said ready (no container yet); a reload then left v1
// never ready: "no stable revision to roll back to" (about 1 start in 40 here).
func TestReloadTheMomentReadyKeepsTheRevisionStable(t *testing.T) {
	for i := 1; i <= 8; i++ {
		tp := start(t, revisionSpec("v1", "0s", "", "up"))
		if err := os.WriteFile(filepath.Join(tp.dir, "up"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// As tight as a client can poll: the reload must come the moment it reads ready.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if d, ok := tp.status(); ok && d.Revision == "v1" && d.Ready.True() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("v1 never ready")
			}
		}
		writeSpec(t, tp, revisionSpec("v2", "0s", "", "up"))
		tp.signal(syscall.SIGHUP)
		tp.waitStatus(10*time.Second, "v2 ready", func(d status.Document) bool {
			return d.Revision == "v2" && revisionEntry(d, "v2").Ready.True()
		})
		if out, code := tendCtl(t, tp, "rollback"); code != 0 || !strings.Contains(out, "v1: active and ready") {
			t.Fatalf("start %d: tend rollback from v2: exit %d:\n%s\nwant v1 back", i, code, out)
		}
		termAndWait(t, tp, 20*time.Second)
	}
}
