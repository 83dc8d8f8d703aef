package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes through the loader after the file is read: no input
// may panic, and the result is a resolved spec, a one-line error or field errors.
func FuzzLoad(f *testing.F) {
	examples, _ := filepath.Glob("../examples/*.yaml")
	for _, p := range examples {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"containers: []",
		`{"instance": {"port": 8080}, "containers": [{"name": "a", "command": ["x", "{BSCONFIG_IPORT_PLUS_1}"]}]}`,
		"containers: [{name: a, command: 'sh -c \"echo ${{HOME}}\"', liveness_probe: {http_get: {port: '{BSCONFIG_IPORT}'}}}]",
		"a: &a [1,2]\nb: [*a, *a]\ncontainers: *a",
		"containers:\n  - name: a\n    name: b\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "common.env"), []byte("A=1\nB=${A}2\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "spec.yaml")
		s, err := loadData(data, path, dir, testOptions())
		if err != nil {
			var errs *Errors
			if errors.As(err, &errs) {
				if len(errs.Fields) == 0 {
					t.Fatal("*Errors without fields")
				}
				for _, fe := range errs.Fields {
					if fe.Msg == "" {
						t.Fatalf("field error without message at %q", fe.Path)
					}
				}
				return
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, path+": ") {
				t.Fatalf("one-line error %q: several lines or no file name", msg)
			}
			return
		}
		if _, err := s.Render(); err != nil {
			t.Fatalf("Render: %v", err)
		}
		for i, c := range s.Containers {
			if c.RestartPolicy == nil || c.StopPolicy == nil || c.StopPolicy.TimeLimit == nil {
				t.Fatalf("containers[%d]: policies not defaulted", i)
			}
			if _, err := Argv(c.Command, s.ProcessEnv(c.Env)); err != nil && !strings.HasPrefix(err.Error(), "empty command") {
				t.Fatalf("containers[%d]: a valid command does not split: %v", i, err)
			}
			for _, p := range []*Probe{c.LivenessProbe, c.ReadinessProbe} {
				if p != nil && p.HTTPGet != nil && p.HTTPGet.PortNumber() == 0 {
					t.Fatalf("containers[%d]: probe port %q not valid after Load", i, p.HTTPGet.Port)
				}
			}
		}
	})
}

// FuzzSplit: the splitter never panics, and the words it returns, quoted again,
// split back into the same words.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		`./server --port 8080`, `echo 'a b' "c d" e\ f`, `bash -c 'command --arg \$(helper_command)'`,
		`echo ${HOME} $TWO "$TWO" x$EMPTY`, "echo `date`", `echo "$(x)"`, `a | b > c`, "a\\\nb", `"\$\"\\"`,
	} {
		f.Add(s)
	}
	lookup := envLookup([]string{"HOME=/home/u", "TWO=a  b", "EMPTY=", "Q='\"$(x)"})
	f.Fuzz(func(t *testing.T, s string) {
		words, err := split(s, lookup)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := split(strings.Join(quoted, " "), lookup)
		if err != nil {
			t.Fatalf("re-split of %q: %v", quoted, err)
		}
		if len(words) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(again, words) {
			t.Fatalf("split(%q) = %q, but the quoted words split into %q", s, words, again)
		}
	})
}
