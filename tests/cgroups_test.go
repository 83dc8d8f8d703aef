package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// needTestCgroup gives a test a fresh v1 cgroup to start tend in, or skips it.
func needTestCgroup(t *testing.T) *testCgroup {
	t.Helper()
	cg := newTestCgroup(t)
	if cg == nil {
		t.Skip("needs root and writable cgroup v1 hierarchies")
	}
	return cg
}

// cgroupLine is the path of controller's hierarchy in a saved /proc/PID/cgroup.
func cgroupLine(t *testing.T, file, controller string) string {
	t.Helper()
	for _, line := range strings.Split(waitFile(t, 10*time.Second, file), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == controller {
			return parts[2]
		}
	}
	t.Fatalf("%s has no %s line", file, controller)
	return ""
}

// Every process of a container starts in <start>/containers/NAME — its command, its
// init commands, its exec probes — and an init container's in <start>/init/NAME; the
// limits are in the files; tend removes the groups when it exits.
func TestContainersRunInTheirCgroups(t *testing.T) {
	cg := needTestCgroup(t)
	tp := start(t, `
init_containers:
  - name: setup
    command: "sh -c 'cat /proc/self/cgroup > {DIR}/setup.tmp && mv {DIR}/setup.tmp {DIR}/setup.cg'"
containers:
  - name: web
    init: [{command: "sh -c 'cat /proc/self/cgroup > {DIR}/init.tmp && mv {DIR}/init.tmp {DIR}/init.cg'"}]
    command: "sh -c 'cat /proc/self/cgroup > {DIR}/web.tmp && mv {DIR}/web.tmp {DIR}/web.cg; exec sleep 600'"
    limits: {cpu: 0.5, memory: 64Mi, pids: 50}
    readiness_probe:
      exec: {command: "sh -c 'cat /proc/self/cgroup > {DIR}/probe.tmp && mv {DIR}/probe.tmp {DIR}/probe.cg'"}
      time_limit: {initial_delay_ms: 10, min_restart_period_ms: 100, max_restart_period_ms: 100}
  - name: plain
    command: "sh -c 'cat /proc/self/cgroup > {DIR}/plain.tmp && mv {DIR}/plain.tmp {DIR}/plain.cg; exec sleep 600'"
`, runOpts{cgroup: cg})
	hybrid := cg.dir(unified) != ""
	checkCgroupFiles(t, tp.dir, cg)
	doc := tp.waitStatus(10*time.Second, "web ready", func(d status.Document) bool { return containerStatus(d, "web").Ready.True() })
	if doc.Cgroups != (status.Cgroups{Mode: "v1"}) {
		t.Errorf("status cgroups = %+v, want mode v1", doc.Cgroups)
	}
	web, plain := containerStatus(doc, "web"), containerStatus(doc, "plain")
	membership := map[bool]string{false: "memory", true: unified}[hybrid]
	if web.Cgroup != cg.path(membership)+"/containers/web" || !web.LimitsApplied || !plain.LimitsApplied {
		t.Errorf("web cgroup %q limits_applied %v, plain limits_applied %v", web.Cgroup, web.LimitsApplied, plain.LimitsApplied)
	}
	want := map[string]string{"cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000",
		"memory/memory.limit_in_bytes": "67108864", "pids/pids.max": "50"}
	if exists(filepath.Join(cg.dir("memory"), "containers/web/memory.memsw.limit_in_bytes")) {
		want["memory/memory.memsw.limit_in_bytes"] = "67108864"
	}
	for f, v := range want {
		c, file, _ := strings.Cut(f, "/")
		b, _ := os.ReadFile(filepath.Join(cg.dir(c), "containers/web", file))
		if got := strings.TrimSpace(string(b)); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	termAndWait(t, tp, 15*time.Second)
	for _, dir := range cg.dirs {
		for _, kind := range []string{"containers", "init"} {
			if exists(filepath.Join(dir, kind)) {
				t.Errorf("%s/%s is left after tend exited", dir, kind)
			}
		}
	}
}

// checkCgroupFiles reads the /proc/self/cgroup that each process of
// TestContainersRunInTheirCgroups saved in dir: web's (with limits) and setup's in
// their groups of every hierarchy; on a hybrid host the v1 ones only for web's limits,
// and plain (no limits) in no v1 group of its own: it never migrates.
func checkCgroupFiles(t *testing.T, dir string, cg *testCgroup) {
	t.Helper()
	hybrid := cg.dir(unified) != ""
	for _, c := range append([]string{unified}, testControllers...) {
		if c == unified && !hybrid {
			continue
		}
		base := cg.path(c)
		for file, want := range map[string]string{"setup.cg": "/init/setup", "init.cg": "/containers/web", "web.cg": "/containers/web", "probe.cg": "/containers/web"} {
			if hybrid && c != unified && (file == "setup.cg" || c == "cpuacct" || c == "freezer") {
				want = "" // v1 is joined only for a limit: the setup init container has none
			}
			if got := cgroupLine(t, filepath.Join(dir, file), c); got != base+want {
				t.Errorf("%s: %s cgroup %q, want %q", file, c, got, base+want)
			}
		}
	}
	if hybrid {
		file := filepath.Join(dir, "plain.cg")
		if got := cgroupLine(t, file, unified); got != cg.path(unified)+"/containers/plain" {
			t.Errorf("plain's cgroup2 cgroup %q, want %q", got, cg.path(unified)+"/containers/plain")
		}
		if got := cgroupLine(t, file, "memory"); got != cg.path("memory") {
			t.Errorf("plain's memory cgroup %q, want tend's own %q", got, cg.path("memory"))
		}
	}
}

// A limit the kernel refuses (v1: a CPU quota above the parent's, instance.limits)
// is one warning naming the container, the limit and why, and limits_applied false.
func TestLimitThatCannotApply(t *testing.T) {
	cg := needTestCgroup(t)
	tp := start(t, `
instance: {limits: {cpu: 0.5}}
containers:
  - name: greedy
    command: sleep 600
    limits: {cpu: 2}
`, runOpts{cgroup: cg})
	doc := tp.waitStatus(10*time.Second, "greedy running", func(d status.Document) bool { return containerStatus(d, "greedy").State == status.Running })
	if containerStatus(doc, "greedy").LimitsApplied {
		t.Error("limits_applied true for a cpu limit above instance.limits")
	}
	// tend's log reaches stderr through a queue of its own: wait for the warning.
	var warnings []string
	waitFor(t, 5*time.Second, "the warning in the log", func() (bool, string) {
		warnings = warnings[:0]
		for _, line := range strings.Split(tp.stderr.String(), "\n") {
			if strings.Contains(line, `"limit not applied"`) {
				warnings = append(warnings, line)
			}
		}
		return len(warnings) > 0, tail(tp.stderr.String(), 2000)
	})
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"container":"greedy"`) || !strings.Contains(warnings[0], `"limit":"cpu"`) || !strings.Contains(warnings[0], "invalid argument") {
		t.Errorf("warnings = %q, want one naming greedy, cpu and why", warnings)
	}
}

// A setsid double-forked grandchild is killed with its run, before the restart
// starts the next run (docs/reference.md "Cgroups and limits"): the second run finds it dead.
func TestGrandchildGoneBeforeRestart(t *testing.T) {
	tp := start(t, `
containers:
  - name: flap
    command: ["sh", "-c", "if [ -s {DIR}/gc.pid ]; then s=$(grep ^State: /proc/$(cat {DIR}/gc.pid)/status 2>/dev/null | cut -f2 | cut -c1); echo \"state:$s\" > {DIR}/second.new; mv {DIR}/second.new {DIR}/second; exec sleep 600; fi; setsid sh -c 'sleep 1000 & echo $! > {DIR}/gc.pid'; exit 1"]
    restart_policy: {min_period_ms: 0, max_jitter_ms: 0}
`)
	if newTestCgroup(t) == nil {
		t.Skip("needs root and writable cgroup v1 hierarchies")
	}
	got := strings.TrimSpace(waitFile(t, 10*time.Second, filepath.Join(tp.dir, "second")))
	if got != "state:" && got != "state:Z" {
		t.Errorf("the grandchild of the first run, when the second began: %q, want gone", got)
	}
}

// Without cgroups (a read-only, empty /sys/fs/cgroup, as in an unprivileged
// container) `auto` runs with mode off and the reason, and limits are warnings;
// `required` exits 1 naming the reason.
func TestCgroupsDegradeOnReadOnlySysfs(t *testing.T) {
	needPID1(t)
	ro := []string{"unshare", "--mount", "sh", "-c", `mount -t tmpfs -o ro tmpfs /sys/fs/cgroup && exec "$@"`, "sh"}
	tp := start(t, `
containers:
  - name: web
    command: sleep 600
    limits: {memory: 64Mi}
`, runOpts{noCgroup: true, wrap: ro})
	doc := tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool { return containerStatus(d, "web").State == status.Running })
	want := status.Cgroups{Mode: "off", Reason: "/sys/fs/cgroup is read-only"}
	if doc.Cgroups != want {
		t.Errorf("cgroups = %+v, want %+v", doc.Cgroups, want)
	}
	if c := containerStatus(doc, "web"); c.Cgroup != "" || c.LimitsApplied {
		t.Errorf("web cgroup %q limits_applied %v, want \"\" and false", c.Cgroup, c.LimitsApplied)
	}
	// tend's log reaches stderr through a queue of its own: wait for the line.
	waitFor(t, 5*time.Second, "a warning that the memory limit is not applied because cgroups are off", func() (bool, string) {
		return strings.Contains(tp.stderr.String(), "cgroups are off: /sys/fs/cgroup is read-only"), tail(tp.stderr.String(), 2000)
	})

	req := start(t, "instance: {cgroups: required}\ncontainers: [{name: web, command: sleep 600}]\n", runOpts{noCgroup: true, wrap: ro})
	if code := req.wait(10 * time.Second); code != 1 {
		t.Errorf("cgroups: required on a read-only /sys/fs/cgroup: exit %d, want 1", code)
	}
	if !strings.Contains(req.stderr.String(), "cgroups: required, but /sys/fs/cgroup is read-only") {
		t.Errorf("stderr does not name the reason:\n%s", req.stderr.String())
	}
}

// Two tends started in one cgroup: the second runs with cgroups off (it would share
// <start>/containers/NAME and kill the first's group as a leftover), naming the first's
// instance; the first's container is untouched.
func TestTwoTendsInOneCgroup(t *testing.T) {
	cg := needTestCgroup(t)
	spec := "containers: [{name: web, command: sleep 600}]\n"
	first := start(t, spec, runOpts{cgroup: cg})
	doc := first.waitStatus(10*time.Second, "web running", func(d status.Document) bool { return containerStatus(d, "web").Pid != nil })
	pid := *containerStatus(doc, "web").Pid
	second := start(t, spec, runOpts{cgroup: cg})
	doc2 := second.waitStatus(10*time.Second, "web running", func(d status.Document) bool { return containerStatus(d, "web").Pid != nil })
	if doc2.Cgroups.Mode != "off" || !strings.HasPrefix(doc2.Cgroups.Reason, "another tend uses /sys/fs/cgroup/") || !strings.HasSuffix(doc2.Cgroups.Reason, "/containers (instance "+first.dir+")") {
		t.Errorf("second tend's cgroups = %+v, want off, another tend uses <start>/containers (instance %s)", doc2.Cgroups, first.dir)
	}
	doc = first.waitStatus(5*time.Second, "first status", func(status.Document) bool { return true })
	if c := containerStatus(doc, "web"); c.Pid == nil || *c.Pid != pid || c.Restarts != 0 || doc.Cgroups.Mode != "v1" {
		t.Errorf("the first tend's web after the second started: pid %v restarts %d, cgroups %+v", c.Pid, c.Restarts, doc.Cgroups)
	}
	membership := cg.dir(unified) // a container without limits is in v1 only on a plain v1 host
	if membership == "" {
		membership = cg.dir("memory")
	}
	procs, _ := os.ReadFile(filepath.Join(membership, "containers/web/cgroup.procs"))
	if len(strings.Fields(string(procs))) == 0 {
		t.Error("the first tend's web group is empty")
	}
}

// instance.limits never go to tend's starting cgroup (docs/reference.md "Cgroups and limits" and "What a container cannot make tend do"): that one is
// whatever launched tend (here the test's fresh cgroup, standing for a login shell's),
// keeps its memory limit while tend runs and after it exits; the limit is on
// <start>/instance, which holds the containers and not tend. tend's oom_score_adj is
// -1000; its containers, and what they fork, start with the one tend was started with.
func TestInstanceLimitsSpareTendsCgroup(t *testing.T) {
	cg := needTestCgroup(t)
	limitFile := filepath.Join(cg.dir("memory"), "memory.limit_in_bytes")
	before := readTrim(t, limitFile)
	oom := []string{"sh", "-c", `echo 123 > /proc/self/oom_score_adj && exec "$@"`, "sh"}
	tp := start(t, `
instance: {limits: {memory: 96Mi}}
containers:
  - name: web
    command: "sh -c 'cat /proc/self/cgroup > {DIR}/web.tmp && mv {DIR}/web.tmp {DIR}/web.cg; sh -c \"cat /proc/self/oom_score_adj > {DIR}/child.tmp; mv {DIR}/child.tmp {DIR}/child.oom\" & cat /proc/self/oom_score_adj > {DIR}/web.tmp && mv {DIR}/web.tmp {DIR}/web.oom; exec sleep 600'"
`, runOpts{cgroup: cg, wrap: oom})
	doc := tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool { return containerStatus(d, "web").Pid != nil })
	membership := map[bool]string{false: "memory", true: unified}[cg.dir(unified) != ""]
	if got, want := cgroupLine(t, filepath.Join(tp.dir, "web.cg"), "memory"), cg.path("memory")+"/instance/containers/web"; got != want {
		t.Errorf("web's memory cgroup %q, want %q", got, want)
	}
	if c := containerStatus(doc, "web"); c.Cgroup != cg.path(membership)+"/instance/containers/web" {
		t.Errorf("web's status cgroup %q, want %q", c.Cgroup, cg.path(membership)+"/instance/containers/web")
	}
	if got := readTrim(t, filepath.Join(cg.dir("memory"), "instance/memory.limit_in_bytes")); got != "100663296" {
		t.Errorf("<start>/instance/memory.limit_in_bytes = %q, want 100663296", got)
	}
	if got := readTrim(t, limitFile); got != before {
		t.Errorf("tend's starting cgroup's memory limit while tend runs = %s, want %s as before", got, before)
	}
	pid := tp.pid()
	if own := cgroupLine(t, fmt.Sprintf("/proc/%d/cgroup", pid), "memory"); own != cg.path("memory") {
		t.Errorf("tend's memory cgroup %q, want its starting %q (outside the limits)", own, cg.path("memory"))
	}
	// Lowering it needs CAP_SYS_RESOURCE, which a test host (a container) may not
	// grant: then tend keeps its own (proc's unit test covers the lowering).
	wantOwn := "-1000"
	if exec.Command("sh", "-c", "echo -1000 > /proc/self/oom_score_adj").Run() != nil {
		wantOwn = "123"
	}
	if got := readTrim(t, fmt.Sprintf("/proc/%d/oom_score_adj", pid)); got != wantOwn {
		t.Errorf("tend's oom_score_adj = %s, want %s", got, wantOwn)
	}
	for _, f := range []string{"web.oom", "child.oom"} {
		if got := strings.TrimSpace(waitFile(t, 10*time.Second, filepath.Join(tp.dir, f))); got != "123" {
			t.Errorf("%s: oom_score_adj %s, want 123 (tend's at its start)", f, got)
		}
	}
	termAndWait(t, tp, 15*time.Second)
	if got := readTrim(t, limitFile); got != before {
		t.Errorf("tend's starting cgroup's memory limit after tend exited = %s, want %s as before", got, before)
	}
	for _, dir := range cg.dirs {
		for _, sub := range []string{"instance", "containers", "init"} {
			if exists(filepath.Join(dir, sub)) {
				t.Errorf("%s/%s is left after tend exited", dir, sub)
			}
		}
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// A tend killed with SIGKILL leaves its containers running in their groups; the next
// tend of the same instance kills and removes them all at start, also those its spec
// no longer has (docs/reference.md "What a container cannot make tend do"). A tend of another instance started in the same cgroup
// meanwhile leaves them alone and runs with cgroups off, naming that instance.
func TestLeftoversOfACrashedTendAreRemoved(t *testing.T) {
	cg := needTestCgroup(t)
	inst := t.TempDir()
	both := `
instance: {dir: ` + inst + `}
containers:
  - {name: a, command: sleep 600}
  - {name: b, command: sleep 600, limits: {memory: 64Mi}}
`
	listen := []string{"--listen", "unix:{DIR}/tend.sock"} // instance.dir is elsewhere
	first := start(t, both, runOpts{cgroup: cg, as: asChild, args: listen})
	doc := first.waitStatus(10*time.Second, "a and b running", func(d status.Document) bool {
		return containerStatus(d, "a").Pid != nil && containerStatus(d, "b").Pid != nil
	})
	a, b := *containerStatus(doc, "a").Pid, *containerStatus(doc, "b").Pid
	if err := syscall.Kill(first.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.wait(10 * time.Second)
	if !alive(a) || !alive(b) {
		t.Fatalf("the containers died with tend (a %v, b %v): nothing to test", alive(a), alive(b))
	}

	other := start(t, "containers: [{name: b, command: sleep 600}]\n", runOpts{cgroup: cg, as: asChild})
	doc = other.waitStatus(10*time.Second, "the other instance's b running", func(d status.Document) bool { return containerStatus(d, "b").Pid != nil })
	if doc.Cgroups.Mode != "off" || !strings.Contains(doc.Cgroups.Reason, "holds the cgroups of instance "+inst) {
		t.Errorf("another instance's tend: cgroups %+v, want off naming instance %s", doc.Cgroups, inst)
	}
	if !alive(a) || !alive(b) {
		t.Errorf("another instance's tend killed the crashed one's containers (a %v, b %v)", alive(a), alive(b))
	}
	termAndWait(t, other, 15*time.Second)

	second := start(t, "instance: {dir: "+inst+"}\ncontainers: [{name: a, command: sleep 600}]\n", runOpts{cgroup: cg, as: asChild, args: listen})
	doc = second.waitStatus(10*time.Second, "a running", func(d status.Document) bool { return containerStatus(d, "a").Pid != nil })
	if doc.Cgroups.Mode != "v1" {
		t.Errorf("the same instance's tend: cgroups %+v, want v1", doc.Cgroups)
	}
	waitFor(t, 10*time.Second, "the crashed tend's a and b gone", func() (bool, string) {
		return !alive(a) && !alive(b), fmt.Sprintf("a alive %v, b alive %v", alive(a), alive(b))
	})
	for list, dir := range cg.dirs {
		if exists(filepath.Join(dir, "containers/b")) {
			t.Errorf("%s: containers/b is left", list)
		}
	}
	termAndWait(t, second, 15*time.Second)
}
