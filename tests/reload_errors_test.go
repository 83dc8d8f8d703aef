package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A reload of an invalid spec names each error's file and line, as `tend validate`
// does, in the answer of `tend reload`, in reload_error and in tend's console log,
// where each error is a line of its own, in document order.
func TestReloadErrorsCarryFileAndLine(t *testing.T) {
	tp := start(t, `
containers:
  - name: web
    command: ["sleep", "600"]
`, runOpts{args: []string{"--log-format", "console"}})
	tp.waitStatus(10*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == "running"
	})
	path := filepath.Join(tp.dir, "spec.yaml")
	bad := `containers:
  - name: web
    command: sh -c 'echo ${HOME}'
    restart_policy: {mode: sometimes}
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	want := path + ":3: containers[0].command: unknown variable {HOME} (write ${{HOME}} for a literal ${HOME}, or $HOME)\n" +
		path + ":4: containers[0].restart_policy.mode: "
	_, errOut, code := runCLI(t, tp.dir, "reload")
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("tend reload: exit %d, %q; want 1 and %q", code, errOut, want)
	}
	doc, _ := tp.status()
	if !strings.HasPrefix(doc.ReloadError, want) {
		t.Errorf("reload_error %q, want %q...", doc.ReloadError, want)
	}
	if out, _, _ := runCLI(t, tp.dir, "status"); !strings.Contains(out, "  reload error: "+strings.ReplaceAll(want, "\n", "\n    ")) {
		t.Errorf("status table:\n%s", out)
	}
	waitFor(t, 5*time.Second, "the errors as lines of the console log", func() (bool, string) {
		log := tp.stderr.String()
		return strings.Contains(log, "\n    "+strings.ReplaceAll(want, "\n", "\n    ")), log
	})
	termAndWait(t, tp, 20*time.Second)
}
