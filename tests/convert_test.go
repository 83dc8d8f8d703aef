package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

const foreignDir = "../examples/foreign"

// foreignExamples are the example of each format (examples/foreign).
var foreignExamples = map[string]string{
	"pod_agent":       "pod_agent.yaml",
	"iss":             "iss.json",
	"process-compose": "process-compose.yaml",
	"supervisord":     "supervisord.conf",
	"procfile":        "Procfile",
}

func readForeign(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(foreignDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// validate, render and convert take every format as it is; the conversion is a tend
// spec that renders like the original.
func TestForeignValidateConvertRender(t *testing.T) {
	dir := t.TempDir()
	for format, name := range foreignExamples {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(readForeign(t, name)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, dir, "validate", name)
		if code != 0 || out != name+": ok\n" || !strings.Contains(errOut, name+": "+format+" format, converted to a tend spec") {
			t.Errorf("validate %s: exit %d, stdout %q, stderr:\n%s", name, code, out, errOut)
		}
		converted, convErr, code := runCLI(t, dir, "convert", name)
		if code != 0 || !strings.HasPrefix(converted, "# Converted by `tend convert` from "+name) {
			t.Errorf("convert %s: exit %d, stderr %s\n%s", name, code, convErr, converted)
		}
		if convErr != errOut {
			t.Errorf("convert %s prints other warnings than validate:\n%s\n---\n%s", name, convErr, errOut)
		}
		tendSpec := name + ".tend.yaml"
		if err := os.WriteFile(filepath.Join(dir, tendSpec), []byte(converted), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := runCLI(t, dir, "validate", tendSpec); code != 0 || errOut != "" {
			t.Errorf("validate the conversion of %s: exit %d %s %s", name, code, out, errOut)
		}
		a, _, codeA := runCLI(t, dir, "render", name)
		b, _, codeB := runCLI(t, dir, "render", tendSpec)
		if codeA != 0 || codeB != 0 || a != b || a == "" {
			t.Errorf("render %s (exit %d) and of its conversion (exit %d) differ:\n%s\n---\n%s", name, codeA, codeB, a, b)
		}
	}
	// A pod_agent warning names the field and the line of the original.
	_, errOut, _ := runCLI(t, dir, "validate", "pod_agent.yaml")
	if !strings.Contains(errOut, "pod_agent.yaml:5: warning: workloads[0].box_ref: dropped (boxes are not supported)") {
		t.Errorf("validate pod_agent.yaml: stderr lacks the box_ref warning:\n%s", errOut)
	}
	// --from names the format; a file that is not in it cannot be converted: exit 2.
	if _, errOut, code := runCLI(t, dir, "convert", "--from", "supervisord", "pod_agent.yaml"); code != 2 || !strings.Contains(errOut, "pod_agent.yaml:3: key \"workloads\" before any [section]") {
		t.Errorf("convert --from supervisord pod_agent.yaml: exit %d, stderr %s", code, errOut)
	}
	if _, errOut, code := runCLI(t, dir, "validate", "--format", "bogus", "Procfile"); code != 2 || !strings.Contains(errOut, "unknown format") {
		t.Errorf("validate --format bogus: exit %d, stderr %s", code, errOut)
	}
}

// Errors of a foreign spec name the original file and line, after the warnings;
// input a converter cannot read exits 2 naming the line.
func TestForeignErrorsNameTheOriginalLine(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"pod.yaml":  "workloads:\n- id: web\n  box_ref: box\n  start:\n    command_line: ./server\n- id: worker\n  liveness_check:\n    tcp_check: {port: 0}\n",
		"Procfile":  "web: ./server\nworker ./worker\n",
		"sv.conf":   "[program:web]\ncommand=./server\n[program:worker\n",
		"iss.json":  "[{\"@class\": \"ru.yandex.iss.Instance\",\n  \"resources\": [\"iss_hook_start\"]}]\n",
		"pc.yaml":   "processes:\n  web:\n    command: ./server\n    working_dir: [a]\n",
		"list.yaml": "- a\n- b\n",
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	_, errOut, code := runCLI(t, dir, "validate", "pod.yaml")
	for _, want := range []string{
		"pod.yaml:3: warning: workloads[0].box_ref: dropped (boxes are not supported)",
		"pod.yaml:6: workloads[1] (containers[1].command):",
		"pod.yaml:8: workloads[1].liveness_check.tcp_check.port (containers[1].liveness_probe.tcp_socket.port):",
	} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("validate pod.yaml: exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
	for name, want := range map[string]string{
		"Procfile":  "Procfile:2: line 2: want `name: command`",
		"sv.conf":   "sv.conf:3: section header \"[program:worker\" has no closing ]",
		"iss.json":  "iss.json:2: [0].resources: must be a mapping, got a list",
		"pc.yaml":   "pc.yaml:4: processes.web.working_dir: must be a string",
		"list.yaml": "not a tend spec, nor pod_agent, iss, process-compose, supervisord or a Procfile by its shape",
	} {
		for _, cmd := range []string{"convert", "validate", "run"} {
			_, errOut, code := runCLI(t, dir, cmd, name)
			if cmd == "convert" && name == "list.yaml" {
				continue // a tend spec, as far as convert can tell: printed as it is
			}
			if code != 2 || !strings.Contains(errOut, want) {
				t.Errorf("%s %s: exit %d, stderr lacks %q:\n%s", cmd, name, code, want, errOut)
			}
		}
	}
}

// The pod_agent example runs as it is: a failing liveness check kills the workload,
// and the stop policy's SIGINT stops it on shutdown before its destroy policy runs.
func TestPodAgentExampleRuns(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, readForeign(t, "pod_agent.yaml"))
	tp.waitStatus(20*time.Second, "server ready", func(d status.Document) bool {
		return containerStatus(d, "server").Ready.Status == "True"
	})
	// tend's log reaches stderr through a queue of its own: wait for the lines.
	waitFor(t, 5*time.Second, "the format and the warnings in tend's log", func() (bool, string) {
		log := tp.stderr.String()
		return strings.Contains(log, "spec converted from pod_agent") && strings.Contains(log, "workloads[0].box_ref: dropped (boxes are not supported)"), log
	})
	if err := os.Remove(filepath.Join(tp.dir, "healthy")); err != nil {
		t.Fatal(err)
	}
	tp.waitStatus(20*time.Second, "a liveness kill", func(d status.Document) bool {
		c := containerStatus(d, "server")
		return c.LastExit != nil && strings.Contains(string(c.LastExit.Reason), "liveness probe failed") && c.LastExit.Signal == "SIGKILL"
	})
	os.WriteFile(filepath.Join(tp.dir, "healthy"), nil, 0o644)
	// pod_agent restarts a workload at most once every 10 s.
	tp.waitStatus(30*time.Second, "server running again", func(d status.Document) bool {
		c := containerStatus(d, "server")
		return c.State == "running" && c.Restarts >= 1
	})
	// Its trap is set once it prints: a SIGINT before that (in the v1 cgroup shim, or
	// before sh reads the trap) ends it without "stop requested".
	greetings := func() int { return strings.Count(unpadded(tp.stdout.String()), "server | hello from pod_agent") }
	before := greetings()
	waitFor(t, 10*time.Second, "the restarted server's greeting", func() (bool, string) { return greetings() > before, "" })
	termAndWait(t, tp, 30*time.Second)
	out := unpadded(tp.stdout.String())
	for _, want := range []string{"server | hello from pod_agent", "server | stop requested"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, tail(out, 3000))
		}
	}
	if b, err := os.ReadFile(filepath.Join(tp.dir, "shipped.log")); err != nil || string(b) != "logs sent\n" {
		t.Errorf("the destroy policy did not run: %q %v", b, err)
	}
}

// The ISS example: its hooks are downloaded from a loopback server, made
// executable, and the start hook runs as the container with the status hook as its
// liveness probe.
func TestISSExampleRuns(t *testing.T) {
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(foreignDir, "iss-hooks"))))
	t.Cleanup(srv.Close)
	text := strings.ReplaceAll(readForeign(t, "iss.json"), "http://127.0.0.1:18081", srv.URL)
	tp := start(t, text)
	tp.waitStatus(20*time.Second, "iss_hook_start running, alive", func(d status.Document) bool {
		c := containerStatus(d, "iss_hook_start")
		return d.Installed.Status == "True" && c.State == "running" && c.Alive.Status == "True" && c.Ready.Status == "True"
	})
	for _, hook := range []string{"iss_hook_start", "iss_hook_status"} {
		fi, err := os.Stat(filepath.Join(tp.dir, hook))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, mode %v; want a downloaded program with mode 0755", hook, err, fi.Mode())
		}
	}
	waitFor(t, 10*time.Second, "the start hook's output", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "iss_hook_start | started on port 18080 in sas"), out
	})
	termAndWait(t, tp, 30*time.Second)
}

// The process-compose example: every process starts in the order of its depends_on
// (db ready, then migrate; migrate succeeded, then api; api's ready_log_line, then
// worker), told by the times in the status document; the one-shot migration
// completes.
func TestProcessComposeExampleRuns(t *testing.T) {
	t.Parallel() // a long wait: see parallelTests in harness_test.go
	tp := start(t, readForeign(t, "process-compose.yaml"))
	doc := tp.waitStatus(30*time.Second, "db ready, migrate completed, api ready and worker running", func(d status.Document) bool {
		m := containerStatus(d, "migrate")
		return containerStatus(d, "db").Ready.Status == "True" && m.State == "completed" && m.LastExit != nil && m.LastExit.Code == 0 &&
			containerStatus(d, "api").Ready.Status == "True" && containerStatus(d, "worker").State == "running"
	})
	waitFor(t, 10*time.Second, "every process's output", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		for _, want := range []string{"db | db: accepting connections", "migrate | migrate: schema up to date", "api | api: serving on 8080", "worker | worker: job done"} {
			if !strings.Contains(out, want) {
				return false, out
			}
		}
		return true, ""
	})
	termAndWait(t, tp, 30*time.Second)
	if b, err := os.ReadFile(filepath.Join(tp.dir, "shutdown.log")); err != nil || string(b) != "worker: draining\n" {
		t.Errorf("the worker's shutdown command did not run: %q %v", b, err)
	}

	db, migrate, api, worker := containerStatus(doc, "db"), containerStatus(doc, "migrate"), containerStatus(doc, "api"), containerStatus(doc, "worker")
	started := func(c status.Container) time.Time {
		if c.StartedAt == nil {
			t.Fatalf("%s has no started_at: %+v", c.Name, c)
		}
		return c.StartedAt.Time
	}
	var wrong []string
	for _, o := range []struct {
		what         string
		before, then time.Time
	}{
		{"db ready before migrate starts", db.Ready.LastTransitionTime.Time, started(migrate)},
		{"db ready before api starts", db.Ready.LastTransitionTime.Time, started(api)},
		{"migrate exited before api starts", migrate.LastExit.At.Time, started(api)},
		{"api ready (its log line) before worker starts", api.Ready.LastTransitionTime.Time, started(worker)},
	} {
		if o.then.Before(o.before) {
			wrong = append(wrong, fmt.Sprintf("%s: %s, then %s", o.what, o.before.Format(status.Layout), o.then.Format(status.Layout)))
		}
	}
	if len(wrong) == 0 {
		return
	}
	if !dependsOnEnforced(t) {
		t.Skip("depends_on runtime not on this base yet")
	}
	t.Errorf("started out of the depends_on order:\n%s", strings.Join(wrong, "\n"))
}

// process-compose's exit_on_failure: the first non-zero exit stops the whole
// instance, and tend exits with that code, as process-compose does.
func TestProcessComposeExitOnFailureShutsDown(t *testing.T) {
	tp := start(t, `processes:
  server: {command: "exec sleep 100000", availability: {restart: always}}
  check:
    command: "sleep 0.2; exit 3"
    availability: {restart: exit_on_failure}
`)
	waitFor(t, 20*time.Second, "check failed or tend gone", func() (bool, string) {
		select {
		case <-tp.done:
			return true, ""
		default:
		}
		d, ok := tp.status()
		return ok && containerStatus(d, "check").State == "failed", fmt.Sprintf("%+v", containerStatus(d, "check"))
	})
	select {
	case <-tp.done:
	case <-time.After(10 * time.Second):
		if d, ok := tp.status(); ok && containerStatus(d, "check").State == "failed" && containerStatus(d, "server").State == "running" {
			t.Skip("on_give_up runtime not on this base yet")
		}
	}
	if code := tp.wait(20 * time.Second); code != 3 {
		t.Errorf("tend exit code %d, want 3 (check's)", code)
	}
}

// dependsOnEnforced tells whether tend holds a container back for its depends_on:
// b depends on a being ready, which it never is.
func dependsOnEnforced(t *testing.T) bool {
	tp := start(t, `containers:
  - {name: a, command: sleep 100000, readiness_probe: {exec: {command: "false"}}}
  - {name: b, command: sleep 100000, depends_on: {a: ready}}
`)
	defer termAndWait(t, tp, 30*time.Second)
	doc := tp.waitStatus(20*time.Second, "b waiting or running", func(d status.Document) bool {
		b := containerStatus(d, "b")
		return len(b.WaitingFor) > 0 || b.State == "running"
	})
	return len(containerStatus(doc, "b").WaitingFor) > 0
}

// The supervisord example: containers in priority order, numprocs copies, autostart
// false stopped, stopsignal QUIT on shutdown.
func TestSupervisordExampleRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the example runs a program as user nobody, which needs tend to run as root")
	}
	tp := start(t, readForeign(t, "supervisord.conf"))
	doc := tp.waitStatus(20*time.Second, "php-fpm and both nginx running", func(d status.Document) bool {
		return containerStatus(d, "php-fpm").State == "running" && containerStatus(d, "nginx-0").State == "running" && containerStatus(d, "nginx-1").State == "running"
	})
	var order []string
	for _, c := range doc.Containers {
		order = append(order, c.Name)
	}
	if strings.Join(order, ",") != "php-fpm,nginx-0,nginx-1,cron" {
		t.Errorf("containers %v, want php-fpm (priority 5) before nginx (10)", order)
	}
	if c := containerStatus(doc, "cron"); c.State != "stopped" {
		t.Errorf("cron (autostart=false) is %s", c.State)
	}
	waitFor(t, 10*time.Second, "the programs' output", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "php-fpm | php-fpm: ready to handle connections (256M)") && strings.Contains(out, "nginx-1 | nginx: worker 1 started"), out
	})
	termAndWait(t, tp, 30*time.Second)
}

// A Procfile runs as foreman would, and a reload (SIGHUP) reads the changed file
// through the same conversion.
func TestProcfileExampleRunsAndReloads(t *testing.T) {
	tp := start(t, readForeign(t, "Procfile"))
	waitFor(t, 20*time.Second, "web and worker output", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "web | web: listening on 5000") && strings.Contains(out, "worker | worker: job done"), out
	})
	text := readForeign(t, "Procfile") + "clock: while :; do echo tick; sleep 1; done\n"
	if err := os.WriteFile(filepath.Join(tp.dir, "spec.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	before := containerStatus(tp.waitStatus(5*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == "running"
	}), "web")
	tp.signal(syscall.SIGHUP)
	doc := tp.waitStatus(20*time.Second, "clock running after the reload", func(d status.Document) bool {
		return containerStatus(d, "clock").State == "running"
	})
	if web := containerStatus(doc, "web"); web.Pid == nil || before.Pid == nil || *web.Pid != *before.Pid {
		t.Errorf("web was restarted by a reload that did not change it")
	}
	waitFor(t, 10*time.Second, "clock output", func() (bool, string) {
		return strings.Contains(unpadded(tp.stdout.String()), "clock | tick"), tp.stdout.String()
	})
	termAndWait(t, tp, 30*time.Second)
}

// tend convert of a tend spec prints it as it is; a file in no format's shape, or an
// invalid tend spec, is input it cannot convert: exit 2 with validate's error, nothing
// on stdout.
func TestConvertTendSpecAndGarbage(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"ok.yaml":     "containers: [{name: a, command: x}]\n",
		"text.txt":    "just some text\n",
		"ini.conf":    "[supervisord]\nnodaemon=true\n",
		"invalid.yml": "containers: [{name: a, command: x}]\nbogus: 1\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runCLI(t, dir, "convert", "ok.yaml")
	if code != 0 || out != files["ok.yaml"] || !strings.Contains(errOut, "ok.yaml: already a tend spec") {
		t.Errorf("convert ok.yaml: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for name, want := range map[string]string{
		"text.txt":    "not a tend spec, nor pod_agent",
		"ini.conf":    "ini.conf",
		"invalid.yml": "bogus: unknown field",
	} {
		out, errOut, code := runCLI(t, dir, "convert", name)
		if code != 2 || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("convert %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", name, code, out, errOut, want)
		}
	}
}

// aliasedPC is a process-compose file of n processes, each an alias of the first,
// whose environment is an alias of a list of m items: 22 KB for 1000 and 1000 that
// expand to a million nodes.
func aliasedPC(n, m int) string {
	var b strings.Builder
	b.WriteString("x-env: &e\n")
	for i := range m {
		fmt.Fprintf(&b, "  - K%d=v\n", i)
	}
	b.WriteString("processes:\n  p0: &p {command: 'true', environment: *e}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  p%d: *p\n", i)
	}
	return b.String()
}

// runMeasured runs tend with args in dir and returns its exit code, stderr, how long
// it took and its peak RSS in KB.
func runMeasured(t *testing.T, dir string, args ...string) (int, string, time.Duration, int64) {
	t.Helper()
	cmd := exec.Command(tendBin, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	cmd.Wait()
	timer.Stop()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return cmd.ProcessState.ExitCode(), stderr.String(), time.Since(began), ru.Maxrss
}

// Foreign files of a few KB that expand to millions of nodes (aliases, numprocs) are
// refused before anything is built: a clear error within seconds and in well under
// 100 MB, by every command that reads them (they used to take 8 to 24 GB).
//
// Not parallel: the peak RSS wait4 reports starts at the test process's own (exec
// keeps the high-water mark of the vfork parent's memory), which the parallel tests'
// captured floods raise above the bound.
func TestForeignBoundsMemory(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"pc22.yaml": aliasedPC(1000, 1000),
		"pc46.yaml": aliasedPC(2000, 2000),
		"pod.yaml":  "x: &w [{id: a, env: &e [" + strings.Repeat("{name: A, value: {literal_env: {value: v}}},", 500) + "]}]\nworkloads: [" + strings.Repeat("*w,", 2000) + "*w]\n",
		"sv.conf":   "[program:a]\ncommand=true\nnumprocs=1000000\nprocess_name=a%(process_num)d\n",
		"Procfile":  strings.Repeat("web: ./server\n", 60000),
		"flow.yaml": "processes: [" + strings.Repeat("a,", 450000) + "a]\n",
		"tend.yaml": "containers: [" + strings.Repeat("1,", 450000) + "1]\n",
	}
	want := map[string]string{
		"pc22.yaml": "excessive aliasing", "pc46.yaml": "excessive aliasing", "pod.yaml": "excessive aliasing",
		"sv.conf":  "[program:a].numprocs: numprocs 1000000: tend converts at most 1000 containers",
		"Procfile": "too large to convert", "flow.yaml": "too large to convert",
		"tend.yaml": "too large",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"validate", "convert", "render"} {
			code, errOut, took, rssKB := runMeasured(t, dir, cmd, name)
			t.Logf("%s %s (%d KB): exit %d in %v, peak RSS %d MB", cmd, name, len(text)>>10, code, took.Round(time.Millisecond), rssKB>>10)
			if code != 2 || !strings.Contains(errOut, want[name]) {
				t.Errorf("%s %s: exit %d, stderr %.300s; want exit 2 and %q", cmd, name, code, errOut, want[name])
			}
			if took > 10*time.Second || rssKB > 100<<10 {
				t.Errorf("%s %s took %v and %d MB, want seconds and under 100 MB", cmd, name, took, rssKB>>10)
			}
		}
	}
}

// corpusFiles are the foreign fixtures as files: examples/foreign, convert/testdata and
// spec's fuzz seeds (decoded), name -> content.
func corpusFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, dir := range []string{foreignDir, "../convert/testdata"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				files[e.Name()] = string(b)
			}
		}
	}
	seeds, err := filepath.Glob("../spec/testdata/fuzz/FuzzLoad/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range seeds {
		b, err := os.ReadFile(seed)
		if err != nil {
			t.Fatal(err)
		}
		_, arg, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		text, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(arg, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", seed, err)
		}
		files["fuzz-"+filepath.Base(seed)+".yaml"] = text
	}
	return files
}

// Every fixture converts to a spec that tend validate accepts: convert, then validate,
// exit 0 both; only the fixtures listed fail, as they are meant to.
func TestEveryConversionValidates(t *testing.T) {
	failing := map[string]string{ // name -> what convert says
		"fuzz-166a6847e4677e2e.yaml": "must be a mapping",
		"fuzz-a72b0c20ebe72947.yaml": "must be a mapping",
		"fuzz-ba4542affb897e93.yaml": "common.env",
	}
	dir := t.TempDir()
	files := corpusFiles(t)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, dir, "convert", name)
		if why, ok := failing[name]; ok {
			if code != 2 || !strings.Contains(errOut, why) {
				t.Errorf("convert %s: exit %d, stderr %s; want exit 2 and %q", name, code, errOut, why)
			}
			continue
		}
		if code != 0 {
			t.Errorf("convert %s: exit %d\n%s", name, code, errOut)
			continue
		}
		converted := name + ".tend.yaml"
		if err := os.WriteFile(filepath.Join(dir, converted), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runCLI(t, dir, "validate", converted); code != 0 {
			t.Errorf("convert %s, then validate: exit %d\n%s\n%s", name, code, errOut, out)
		}
	}
	if len(files) < 15 {
		t.Errorf("only %d fixtures", len(files))
	}
}

// A process-compose command runs with bash, as process-compose runs it: brace
// expansion and [[ ]] work.
func TestProcessComposeCommandRunsWithBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash here")
	}
	tp := start(t, "processes:\n  brace:\n    command: \"echo {1..3}; [[ -n x ]] && echo bash-ok\"\n    availability: {restart: always, backoff_seconds: 100}\n")
	waitFor(t, 10*time.Second, "bash's output", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "brace | 1 2 3\n") && strings.Contains(out, "brace | bash-ok\n"), out
	})
	termAndWait(t, tp, 30*time.Second)
}
