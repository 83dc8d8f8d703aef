package spec

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeDatabases points the passwd and group files at test copies.
func fakeDatabases(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldP, oldG := passwdFile, groupFile
	passwdFile = write("passwd", "root:x:0:0:root:/root:/bin/sh\n# comment\napp:x:1000:1000::/home/app:/bin/sh\nbroken:x\n")
	groupFile = write("group", "root:x:0:\napp:x:1000:\nwww:x:33:app,other\nlogs:x:4:app\n")
	t.Cleanup(func() { passwdFile, groupFile = oldP, oldG })
}

func TestIdentityResolution(t *testing.T) {
	fakeDatabases(t)
	s := mustLoad(t, `
instance: {name: i, user: app, rlimits: {nofile: 100, core: 0}}
env: [{name: LOGNAME, value: fixed}]
init_containers:
  - {name: setup, command: "true", user: "2000", group: www}
containers:
  - {name: inherits, command: "true"}
  - {name: numeric, command: "true", user: "1000", group: "7", rlimits: {nofile: {soft: 10, hard: unlimited}}}
  - {name: rootish, command: "true", user: root}
`, nil)
	c := s.Containers
	want := &Identity{HasUser: true, UID: 1000, GID: 1000, Groups: []uint32{33, 4}, Name: "app", Home: "/home/app",
		Rlimits: []Limit{{unix.RLIMIT_CORE, 0, 0}, {unix.RLIMIT_NOFILE, 100, 100}}}
	if got := c[0].Identity(); !reflect.DeepEqual(got, want) {
		t.Errorf("inherits: %+v, want %+v", got, want)
	}
	if got := c[1].Identity(); got.GID != 7 || got.UID != 1000 || got.Name != "app" ||
		!slices.Equal(got.Rlimits, []Limit{{unix.RLIMIT_CORE, 0, 0}, {unix.RLIMIT_NOFILE, 10, unix.RLIM_INFINITY}}) {
		t.Errorf("numeric: %+v", got)
	}
	if got := s.InitContainers[0].Identity(); got.UID != 2000 || got.GID != 33 || got.Home != "/" || got.Name != "" || len(got.Groups) != 0 {
		t.Errorf("init container: %+v", got)
	}
	env := strings.Join(s.ProcessEnvAs(nil, c[0].Identity()), " ")
	for _, kv := range []string{"HOME=/home/app", "USER=app", "LOGNAME=fixed"} {
		if !strings.Contains(env, kv) {
			t.Errorf("env %q lacks %s", env, kv)
		}
	}
	if env := strings.Join(s.ProcessEnvAs(nil, s.InitContainers[0].Identity()), " "); !strings.Contains(env, "HOME=/ ") && !strings.HasSuffix(env, "HOME=/") {
		t.Errorf("numeric user without an entry: env %q, want HOME=/", env)
	}
	if got := s.NeedsRoot(); !slices.Equal(got, []string{"instance", "init_containers[0]", "containers[1]", "containers[2]"}) {
		t.Errorf("NeedsRoot = %v", got)
	}
}

func TestIdentityErrors(t *testing.T) {
	fakeDatabases(t)
	got := loadErrors(t, `
instance: {name: i, rlimits: {nofiles: 1}}
containers:
  - {name: a, command: "true", user: nobody, group: staff}
  - {name: b, command: "true", user: "4242"}
  - {name: c, command: "true", group: app}
  - name: d
    command: "true"
    rlimits: {nofile: -1, nproc: {soft: 5, hard: 2}, core: {soft: x, hard: 1}, stack: [1]}
`, nil)
	want := []string{
		`instance.rlimits.nofiles: unknown resource limit`,
		`containers[0].user: unknown user "nobody"`,
		`containers[0].group: unknown group "staff"`,
		`containers[1].group: must be set: user 4242 has no entry`,
		`containers[2].group: needs user`,
		`containers[3].rlimits.nofile: must be a number 0 or more or unlimited, got "-1"`,
		`containers[3].rlimits.nproc: soft limit 5 is above the hard limit 2`,
		`containers[3].rlimits.core: soft: must be a number`,
		`containers[3].rlimits.stack: must be a number, unlimited or {soft, hard}, got a list`,
	}
	all := strings.Join(got, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no error %q in:\n%s", w, all)
		}
	}
}

func TestRlimitRender(t *testing.T) {
	s := mustLoad(t, `
instance: {name: i}
containers:
  - {name: a, command: "true", rlimits: {nofile: 10, core: unlimited, nproc: {soft: 1, hard: 2}}}
`, nil)
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"nofile: 10", "core: unlimited", "soft: 1", "hard: 2"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("render lacks %q:\n%s", w, out)
		}
	}
}
