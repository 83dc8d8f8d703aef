package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tend-sh/tend/status"
)

// A supervisord program as its users write it: %(ENV_HOME)s in directory=, %(ENV_USER)s
// in environment=, %(here)s and %(program_name)s in the command. tend runs it as
// supervisord would, expanding them from its own environment when it reads the file,
// and says so on stderr.
func TestSupervisordExpansionsRun(t *testing.T) {
	home := t.TempDir()
	conf := `[program:greet]
command=/bin/sh -c 'echo "%(program_name)s: $G in $PWD, conf in %(here)s"; exec sleep 100'
directory=%(ENV_HOME)s
environment=G="%(ENV_USER)s says hi"
`
	tp := start(t, conf, runOpts{env: []string{"HOME=" + home, "USER=alice"}})
	want := "greet: alice says hi in " + home + ", conf in " + tp.dir
	waitFor(t, 20*time.Second, "greet's line", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "greet | "+want), out
	})
	for _, warning := range []string{
		"[program:greet].directory: %(ENV_HOME)s expanded from tend's environment",
		"[program:greet].environment: %(ENV_USER)s expanded from tend's environment",
		"[program:greet].command: %(here)s expanded",
		"[program:greet].command: %(program_name)s expanded: greet",
	} {
		if !strings.Contains(tp.stderr.String(), warning) {
			t.Errorf("stderr lacks the warning %q:\n%s", warning, tp.stderr.String())
		}
	}
	termAndWait(t, tp, 30*time.Second)

	// An unset variable is refused, naming it: nothing starts with a literal %(ENV_X)s.
	dir := t.TempDir()
	path := filepath.Join(dir, "supervisord.conf")
	os.WriteFile(path, []byte("[program:a]\ncommand=/bin/true\ndirectory=%(ENV_TEND_TEST_UNSET)s\n"), 0o644)
	_, errOut, code := runCLI(t, dir, "validate", path)
	if code != 2 || !strings.Contains(errOut, path+":3: [program:a].directory: %(ENV_TEND_TEST_UNSET)s: TEND_TEST_UNSET is not set in tend's environment") {
		t.Errorf("validate with an unset ENV_: exit %d, stderr:\n%s", code, errOut)
	}
}

// A Procfile's release line runs once, before the processes start (Heroku's release
// phase), as an init container; it does not loop.
func TestProcfileReleaseRunsOnceFirst(t *testing.T) {
	procfile := "web: cat migrated.txt; exec sleep 100\nrelease: echo migrated >> migrated.txt\n"
	tp := start(t, procfile)
	doc := tp.waitStatus(20*time.Second, "web running", func(d status.Document) bool {
		return containerStatus(d, "web").State == "running"
	})
	if len(doc.InitContainers) != 1 || doc.InitContainers[0].Name != "release" ||
		doc.InitContainers[0].State != "succeeded" || doc.InitContainers[0].Attempts != 1 {
		t.Errorf("init containers %+v, want release succeeded after 1 attempt", doc.InitContainers)
	}
	if len(doc.Containers) != 1 {
		t.Errorf("containers %+v, want web alone", doc.Containers)
	}
	waitFor(t, 10*time.Second, "web's line", func() (bool, string) {
		out := unpadded(tp.stdout.String())
		return strings.Contains(out, "web | migrated"), out
	})
	if !strings.Contains(tp.stderr.String(), "release: an init container: it runs once") {
		t.Errorf("stderr lacks the release warning:\n%s", tp.stderr.String())
	}
	termAndWait(t, tp, 30*time.Second)
	if data, _ := os.ReadFile(filepath.Join(tp.dir, "migrated.txt")); string(data) != "migrated\n" {
		t.Errorf("migrated.txt %q: release ran more than once, or not at all", data)
	}
}
