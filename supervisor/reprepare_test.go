package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tend-sh/tend/spec"
)

// loadSpec loads text as dir/name: two specs of one dir have the same instance.dir.
func loadSpec(t *testing.T, dir, name, text string) *spec.Spec {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What re-prepares: static resources (not check_period), files, init containers;
// not a container or a dynamic resource.
func TestNeedsPrepare(t *testing.T) {
	base := `
instance: {name: test}
resources: [{name: a, urls: ["http://h/a"]}]
dynamic_resources: [{name: d, revision: 1, urls: ["http://h/d"], storage_dir: s, destination: dd}]
files: [{path: f, content: x}]
init_containers: [{name: i, command: "true"}]
containers: [{name: c, command: "sleep 1"}]
`
	tests := []struct {
		name, from, to, want string
	}{
		{"unchanged", "", "", ""},
		{"check_period only", `urls: ["http://h/a"]}`, `urls: ["http://h/a"], check_period: 0d1h0m}`, ""},
		{"a container", `command: "sleep 1"`, `command: "sleep 2"`, ""},
		{"a dynamic resource", `revision: 1`, `revision: 2`, ""},
		{"resource urls", `http://h/a`, `http://h/b`, "resources"},
		{"resource executable", `urls: ["http://h/a"]}`, `urls: ["http://h/a"], executable: true}`, "resources"},
		{"file content", `content: x`, `content: y`, "files"},
		{"file mode", `content: x}`, `content: x, mode: "0600"}`, "files"},
		{"init command", `command: "true"`, `command: "true 1"`, "init_containers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			prev := loadSpec(t, dir, "prev.yaml", base)
			next := loadSpec(t, dir, "next.yaml", replaceOnce(t, base, tt.from, tt.to))
			if got := needsPrepare(prev, next); got != tt.want {
				t.Errorf("needsPrepare = %q, want %q", got, tt.want)
			}
		})
	}
}

func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	if from == "" {
		return s
	}
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("%q not in the spec", from)
	}
	return s[:i] + to + s[i+len(from):]
}
