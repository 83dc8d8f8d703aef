package tests

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// gcState is the state letter of the process whose pid is in file, as a container's
// command sees it ("" gone, "Z" a zombie about to be reaped): the shell snippet writes
// "state:<letter>" to the file named second.
const gcState = `s=$(grep ^State: /proc/$(cat {DIR}/%[1]s.pid)/status 2>/dev/null | cut -f2 | cut -c1); echo "state:$s" > {DIR}/%[2]s.new; mv {DIR}/%[2]s.new {DIR}/%[2]s`

// escaper is a shell snippet that starts a sleep in a session of its own (setsid)
// and waits until it has left its process group, its pid written to {DIR}/NAME.pid.
func escaper(name string) string {
	return fmt.Sprintf(`setsid sh -c 'echo $$ > {DIR}/%[1]s.new && mv {DIR}/%[1]s.new {DIR}/%[1]s.pid; exec sleep 1000' & while [ ! -s {DIR}/%[1]s.pid ]; do sleep 0.01; done`, name)
}

func checkGone(t *testing.T, file, what string) {
	t.Helper()
	got := strings.TrimSpace(waitFile(t, 10*time.Second, file))
	if got != "state:" && got != "state:Z" {
		t.Errorf("%s: %q, want gone", what, got)
	}
}

// Without cgroups every process of a run carries TEND_RUN=<instance>/<container>/<run
// id>, and when the run ends every process with the mark is killed: a setsid child of
// a command that exits is gone before the next run starts, while tend runs on.
func TestRunMarkEndsWhatTheRunLeft(t *testing.T) {
	tp := start(t, `
instance: {cgroups: off}
containers:
  - name: flap
    command: ["sh", "-c", "if [ -s {DIR}/gc.pid ]; then `+strings.ReplaceAll(sprintf(gcState, "gc", "second"), `"`, `\"`)+`; exec sleep 600; fi; echo $TEND_RUN > {DIR}/mark; `+escaper("gc")+`; exit 1"]
    restart_policy: {min_period_ms: 0, max_jitter_ms: 0}
`, runOpts{as: asChild})
	checkGone(t, filepath.Join(tp.dir, "second"), "the setsid child of the first run, when the second began")
	mark := strings.TrimSpace(waitFile(t, time.Second, filepath.Join(tp.dir, "mark")))
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(realPath(t, tp.dir)) + `/flap/[0-9]+$`).MatchString(mark) {
		t.Errorf("TEND_RUN = %q, want %s/flap/<run id>", mark, realPath(t, tp.dir))
	}
}

// A setsid child of a container's init command, and of an init container, is killed
// when that command exits, before anything after it starts (with cgroups, and with
// cgroups off by the run mark).
func TestInitCommandsLeaveNothing(t *testing.T) {
	for _, cgroups := range []string{"auto", "off"} {
		t.Run(cgroups, func(t *testing.T) {
			tp := start(t, `
instance: {cgroups: `+cgroups+`}
init_containers:
  - name: setup
    command: ["sh", "-c", "`+escaper("setup")+`"]
containers:
  - name: web
    init: [{command: ["sh", "-c", "`+escaper("init")+`"]}]
    command: ["sh", "-c", "`+strings.ReplaceAll(sprintf(gcState, "setup", "setup.state")+"; "+sprintf(gcState, "init", "init.state"), `"`, `\"`)+`; exec sleep 600"]
`, runOpts{as: asChild})
			checkGone(t, filepath.Join(tp.dir, "setup.state"), "the init container's setsid child, when web started")
			checkGone(t, filepath.Join(tp.dir, "init.state"), "web's init command's setsid child, when web's command started")
		})
	}
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// With cgroups off and a container limit, `tend status` opens with the line that
// says so and names the container, and `tend describe` says why beside limits
// applied.
func TestStatusSaysCgroupsOff(t *testing.T) {
	tp := start(t, `
instance: {cgroups: off}
containers:
  - {name: web, command: sleep 600, limits: {memory: 64Mi}}
  - {name: db, command: sleep 600, limits: {cpu: 0.5}}
  - {name: plain, command: sleep 600}
`)
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool { return containerStatus(d, "web").Pid != nil })
	out, errOut, code := runCLI(t, tp.dir, "status", "--listen", "unix:"+tp.sock)
	first, _, _ := strings.Cut(out, "\n")
	if want := "cgroups off: want off; limits not applied to web, db"; code != 0 || first != want {
		t.Errorf("tend status: exit %d, first line %q, want %q\n%s%s", code, first, want, out, errOut)
	}
	out, errOut, code = runCLI(t, tp.dir, "describe", "--listen", "unix:"+tp.sock, "web")
	if code != 0 || !regexp.MustCompile(`Limits applied:?\s+no \(memory: cgroups are off: want off\)`).MatchString(out) {
		t.Errorf("tend describe web: exit %d, want `Limits applied  no (memory: cgroups are off: want off)`\n%s%s", code, out, errOut)
	}
}

// Without cgroups, what a tend killed with SIGKILL left running is found by its
// instance's TEND_RUN mark and killed when the next tend of the instance starts, also
// a container its spec no longer has (docs/reference.md "What a container cannot make tend do").
func TestMarkedLeftoversOfACrashedTendAreKilled(t *testing.T) {
	inst := t.TempDir()
	listen := []string{"--listen", "unix:{DIR}/tend.sock"} // instance.dir is elsewhere
	first := start(t, "instance: {dir: "+inst+", cgroups: off}\ncontainers: [{name: a, command: sleep 600}, {name: b, command: sleep 600}]\n", runOpts{as: asChild, args: listen})
	doc := first.waitStatus(10*time.Second, "a and b running", func(d status.Document) bool {
		return containerStatus(d, "a").Pid != nil && containerStatus(d, "b").Pid != nil
	})
	a, b := *containerStatus(doc, "a").Pid, *containerStatus(doc, "b").Pid
	t.Cleanup(func() { syscall.Kill(a, syscall.SIGKILL); syscall.Kill(b, syscall.SIGKILL) })
	if err := syscall.Kill(first.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.wait(10 * time.Second)
	if !alive(a) || !alive(b) {
		t.Fatalf("the containers died with tend (a %v, b %v): nothing to test", alive(a), alive(b))
	}
	second := start(t, "instance: {dir: "+inst+", cgroups: off}\ncontainers: [{name: a, command: sleep 600}]\n", runOpts{as: asChild, args: listen})
	second.waitStatus(10*time.Second, "a running", func(d status.Document) bool { return containerStatus(d, "a").Pid != nil })
	waitFor(t, 10*time.Second, "the crashed tend's a and b gone", func() (bool, string) {
		return !alive(a) && !alive(b), fmt.Sprintf("a alive %v, b alive %v", alive(a), alive(b))
	})
	termAndWait(t, second, 15*time.Second)
}
