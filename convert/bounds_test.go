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
	_, err := Convert([]byte(data), name, Auto)
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

// supervisord expands %(ENV_X)s from its environment; tend's command gets $X, which it
// expands from the process's environment, in a form that validates.
func TestSupervisordEnvExpansion(t *testing.T) {
	tests := []struct{ command, want string }{
		{`/bin/sh -c "echo %(ENV_HOME)s"`, `/bin/sh -c "echo $HOME"`},
		{`./app --home=%(ENV_HOME)s/x`, `./app --home=$HOME/x`},
		{`./app %(ENV_HOME)sdir`, `./app ${{HOME}}dir`},
		{`./app %(ENV_A)s%(process_num)d`, `./app ${{A}}0`},
		{`/bin/sh -c 'cd %(ENV_HOME)s && ls'`, `/bin/sh -c 'cd '"$HOME"' && ls'`},
		{`/bin/sh -c "it's %(ENV_HOME)s"`, `/bin/sh -c "it's $HOME"`},
	}
	for _, tt := range tests {
		res := mustConvert(t, []byte("[program:a]\ncommand="+tt.command+"\n"), "x.conf", Auto)
		if got := res.Spec.Containers[0].Command.String; got != tt.want {
			t.Errorf("command=%s: %s, want %s", tt.command, got, tt.want)
		}
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
