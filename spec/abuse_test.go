package spec

// Specs that would make tend loop or exhaust memory are validation errors
// (docs/reference.md "What a container cannot make tend do").

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestNULByteIsAValidationError(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"files path", `files: [{path: "conf/a\0b", content: x}]` + "\ncontainers: []", `files[0].path: has a NUL byte`},
		{"from_file", `files: [{path: a, from_file: "s\0"}]` + "\ncontainers: []", `files[0].from_file: has a NUL byte`},
		{"command string", `containers: [{name: a, command: "sleep\0 1"}]`, `containers[0].command: has a NUL byte`},
		{"command list", `containers: [{name: a, command: [sleep, "1\u0000"]}]`, `containers[0].command[1]: has a NUL byte`},
		{"working_dir", `containers: [{name: a, command: [true], working_dir: "/\0"}]`, `containers[0].working_dir: has a NUL byte`},
		{"log.file", `containers: [{name: a, command: [true], log: {file: "a\0.log"}}]`, `containers[0].log.file: has a NUL byte`},
		{"env value", `containers: [{name: a, command: [true], env: [{name: X, value: "\0"}]}]`, `containers[0].env[0].value: has a NUL byte`},
		{"env_files", `env_files: ["a\0"]` + "\ncontainers: []", `env_files[0]: has a NUL byte`},
		{"instance.dir", `instance: {dir: "/tmp/\0"}` + "\ncontainers: []", `instance.dir: has a NUL byte`},
		{"instance.vars", `instance: {vars: {X: "\0"}}` + "\ncontainers: []", `instance.vars.X: has a NUL byte`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadErrors(t, tt.body, nil)
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("errors = %q, want one ending %q", got, tt.want)
			}
		})
	}
	// A file's content may hold one.
	s := mustLoad(t, `files: [{path: a, content: "x\0y"}]`+"\ncontainers: []", nil)
	if s.Files[0].Content.Get() != "x\x00y" {
		t.Errorf("content = %q", s.Files[0].Content.Get())
	}
}

func TestNULByteInASecretSource(t *testing.T) {
	got := loadErrors(t, "env_files: [a.env]\nenv: [{name: T, value_from: {file: tok}}]\ncontainers: []\n",
		map[string]string{"a.env": "A=1\nB=s3cr3t\x00\n", "tok": "s3cr3t\x00"})
	if len(got) != 2 || !strings.HasSuffix(got[0], "a.env:2: has a NUL byte") || !strings.HasSuffix(got[1], "tok has a NUL byte") {
		t.Errorf("errors = %q", got)
	}
	if strings.Contains(strings.Join(got, "\n"), "s3cr3t") {
		t.Errorf("an error shows the secret: %q", got)
	}
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A 400 KB variable used 800 times would be 320 MB: the expansion stops at 16 MiB,
// with one error at the field that went over.
func TestExpansionIsBounded(t *testing.T) {
	big := strings.Repeat("x", 400<<10)
	refs := strings.Repeat("{BIG}", 400)
	body := "instance: {vars: {BIG: " + big + "}}\ncontainers:\n" +
		"  - {name: a, command: [echo, '" + refs + "']}\n" +
		"  - {name: b, command: [echo, '" + refs + "'], working_dir: '{BIG}'}\n"
	var got []string
	n := allocated(func() { got = loadErrors(t, body, nil) })
	if len(got) != 1 || !strings.HasSuffix(got[0], "containers[0].command[1]: {VAR} substitution makes the spec larger than 16 MiB") {
		t.Errorf("errors = %.300q", got)
	}
	if n > 128<<20 {
		t.Errorf("validating allocated %d MiB, want under 128", n>>20)
	}

	// Under the bound: fine.
	mustLoad(t, "instance: {vars: {BIG: "+big+"}}\ncontainers: [{name: a, command: [echo, '"+strings.Repeat("{BIG}", 30)+"']}]\n", nil)
}

// Each line of an env file may double the last: 30 lines would be 1 GiB.
func TestEnvFileExpansionIsBounded(t *testing.T) {
	var env strings.Builder
	env.WriteString("V0=" + strings.Repeat("s", 1024) + "\n")
	for i := 1; i <= 30; i++ {
		env.WriteString("V" + strconv.Itoa(i) + "=$V" + strconv.Itoa(i-1) + "$V" + strconv.Itoa(i-1) + "\n")
	}
	var got []string
	n := allocated(func() {
		got = loadErrors(t, "env_files: [a.env]\ncontainers: []\n", map[string]string{"a.env": env.String()})
	})
	if len(got) != 1 || !strings.HasSuffix(got[0], "a.env:15: $VAR expansion makes the values larger than 16 MiB") {
		t.Errorf("errors = %.300q", got)
	}
	if n > 128<<20 {
		t.Errorf("validating allocated %d MiB, want under 128", n>>20)
	}
}
