package convert

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// convertError converts data and returns the converter's error text ("" for none).
func convertError(t *testing.T, data, name string) string {
	t.Helper()
	_, err := Convert([]byte(data), name, Auto, testEnviron)
	var ce *Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("convert %s: %v, want *Error", name, err)
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// aliased is a process-compose file of n processes, each an alias of the first, whose
// environment is an alias of a list of m items: some KB that expand to n*m nodes.
func aliased(n, m int) string {
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

// Every converter refuses, before building anything, input that would expand past
// its bounds: aliases, numprocs, containers, or more nodes than it parses.
func TestConvertBounds(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"pc.yaml", aliased(1000, 1000), "excessive aliasing: more than 8000 nodes once aliases are expanded, from 3009 in the file"},
		{"pod.yaml", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nworkloads: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n", "excessive aliasing"},
		{"iss.json", `[{"@class": "ru.yandex.iss.Instance", "x": [` + strings.Repeat(`"a",`, 110000) + `"a"]}]`, "too large to convert: up to"},
		{"pc.yaml", "processes: &p {a: {b: *p}}\n", "an alias refers to a node that contains it"},
		{"sv.conf", "[program:a]\ncommand=true\nnumprocs=1000000\nprocess_name=a%(process_num)d\n", "[program:a].numprocs: numprocs 1000000: tend converts at most 1000 containers"},
		{"sv.conf", strings.Repeat("[program:a]\ncommand=true\nnumprocs=600\nprocess_name=a%(process_num)d\n", 1) + "[program:b]\ncommand=true\nnumprocs=600\nprocess_name=b%(process_num)d\n", "too large to convert: 1200 containers (at most 1000)"},
		{"Procfile", strings.Repeat("web: ./server\n", 1001), "too large to convert: more than 1000 containers"},
	}
	for _, tt := range tests {
		if got := convertError(t, tt.data, tt.name); !strings.Contains(got, tt.want) {
			t.Errorf("%s (%d bytes): error %q, want %q", tt.name, len(tt.data), got, tt.want)
		}
	}
	// Within the bounds, aliases convert as before.
	if got := convertError(t, aliased(5, 100), "pc.yaml"); got != "" {
		t.Errorf("5 aliased processes: %s", got)
	}
}

// supervisord expands %(ENV_X)s, %(here)s and %(program_name)s in every value when it
// reads its file; so does the conversion, from tend's environment (testEnviron), each
// expansion a warning, an unset variable an error naming it.
func TestSupervisordExpansion(t *testing.T) {
	tests := []struct {
		name, key, field, want, warning string
	}{
		{"ENV in a command", `command=/bin/sh -c "echo %(ENV_HOME)s"`, "command", `/bin/sh -c "echo /home/test"`,
			"[program:a].command: %(ENV_HOME)s expanded from tend's environment as the file was read ($HOME, 10 characters)"},
		{"ENV glued to a word", `command=./app %(ENV_HOME)sdir`, "command", `./app /home/testdir`, "%(ENV_HOME)s expanded"},
		{"ENV in single quotes", `command=/bin/sh -c 'cd %(ENV_HOME)s && ls'`, "command", `/bin/sh -c 'cd /home/test && ls'`, "%(ENV_HOME)s expanded"},
		{"ENV in directory", `directory=%(ENV_HOME)s/app`, "working_dir", `/home/test/app`,
			"[program:a].directory: %(ENV_HOME)s expanded from tend's environment"},
		{"ENV in environment", `environment=G="%(ENV_USER)s says hi",H=x`, "env", `G=test says hi H=x`,
			"[program:a].environment: %(ENV_USER)s expanded from tend's environment as the file was read ($USER, 4 characters)"},
		{"here", `directory=%(here)s/data`, "working_dir", `{BSCONFIG_IDIR}/data`,
			"[program:a].directory: %(here)s expanded: {BSCONFIG_IDIR} (the file's directory)"},
		{"program_name", `command=/usr/bin/%(program_name)s --name %(program_name)s`, "command", `/usr/bin/a --name a`,
			"[program:a].command: %(program_name)s expanded: a"},
		{"braces of a value stay literal", `environment=J="%(ENV_HOME)s{x}"`, "env", `J=/home/test{{x}}`, "%(ENV_HOME)s expanded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := "[program:a]\ncommand=true\n" + tt.key + "\n"
			if strings.HasPrefix(tt.key, "command=") {
				conf = "[program:a]\n" + tt.key + "\n"
			}
			res := mustConvert(t, []byte(conf), "x.conf", Auto)
			ct := res.Spec.Containers[0]
			got := map[string]string{"command": ct.Command.String, "working_dir": ct.WorkingDir, "user": ct.User}[tt.field]
			if tt.field == "env" {
				var kv []string
				for _, e := range ct.Env {
					kv = append(kv, e.Name+"="+e.Value)
				}
				got = strings.Join(kv, " ")
			}
			if got != tt.want {
				t.Errorf("%s: %q, want %q", tt.field, got, tt.want)
			}
			if !strings.Contains(warningText(res), tt.warning) {
				t.Errorf("warnings lack %q:\n%s", tt.warning, warningText(res))
			}
		})
	}
	// An unset variable is an error naming it, at its line.
	_, err := Convert([]byte("[program:a]\ncommand=true\ndirectory=%(ENV_NOPE_X)s\n"), "x.conf", Auto, testEnviron)
	if err == nil || !strings.Contains(err.Error(), "[program:a].directory: %(ENV_NOPE_X)s: NOPE_X is not set in tend's environment") {
		t.Errorf("unset ENV_NOPE_X: %v", err)
	}
}

// process-compose runs commands with bash (or its shell: settings); the conversion
// says nothing unless that shell is missing here.
func TestProcessComposeShell(t *testing.T) {
	found := map[string]bool{"bash": true, "/bin/zsh": false}
	defer func(old func(string) (string, error)) { lookPath = old }(lookPath)
	lookPath = func(name string) (string, error) {
		if found[name] {
			return "/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	res := mustConvert(t, []byte("processes:\n  a: {command: 'echo {1..3}'}\n"), "pc.yaml", Auto)
	if got := res.Spec.Containers[0].Command.List; strings.Join(got, " ") != "bash -c echo {{1..3}}" || len(res.Warnings) != 0 {
		t.Errorf("command %q, warnings %v", got, res.Warnings)
	}
	res = mustConvert(t, []byte("shell: {shell_command: /bin/zsh, shell_argument: -ec}\nprocesses:\n  a: {command: 'true'}\n"), "pc.yaml", Auto)
	if got := res.Spec.Containers[0].Command.List; strings.Join(got, " ") != "/bin/zsh -ec true" {
		t.Errorf("command %q", got)
	}
	if w := warningText(res); !strings.Contains(w, "shell.shell_command: process-compose runs commands with /bin/zsh, which is not on PATH here") {
		t.Errorf("warnings:\n%s", w)
	}
}
