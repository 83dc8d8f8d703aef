package convert

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tend-sh/tend/spec"
)

const examples = "../examples/foreign"

// exampleFiles are the example of each format.
var exampleFiles = map[string]string{
	PodAgent:       "pod_agent.yaml",
	ISS:            "iss.json",
	ProcessCompose: "process-compose.yaml",
	Supervisord:    "supervisord.conf",
	Procfile:       "Procfile",
}

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examples, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testEnviron is tend's environment in these tests: supervisord's %(ENV_X)s reads it.
var testEnviron = []string{"HOME=/home/test", "USER=test"}

// mustConvert converts a fixture and checks that what it prints is a valid tend spec
// (as `tend convert` then `tend validate` would find it): every fixture of these tests
// that converts must also validate.
func mustConvert(t *testing.T, data []byte, name, format string) *Result {
	t.Helper()
	res, err := Convert(data, name, format, testEnviron)
	if err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	if res.Format != Tend {
		validates(t, res, name)
	}
	return res
}

// convertOnly is mustConvert for a fixture whose conversion is not a valid spec on
// purpose (why says what is missing): the fixtures exempt from the validation.
func convertOnly(t *testing.T, data []byte, name, why string) *Result {
	t.Helper()
	res, err := Convert(data, name, Auto, testEnviron)
	if err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	return res
}

// validates loads the converted spec's YAML as tend's own format.
func validates(t *testing.T, res *Result, name string) {
	t.Helper()
	doc, err := res.YAML(name)
	if err != nil {
		t.Fatalf("convert %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), "converted.yaml")
	if _, err := spec.LoadDocument(path, doc, doc, loadOpts()); err != nil {
		t.Errorf("convert %s prints a spec that does not validate: %v\n%s", name, err, doc)
	}
}

func TestDetect(t *testing.T) {
	for format, name := range exampleFiles {
		if got := Detect(readExample(t, name), name); got != format {
			t.Errorf("Detect(%s) = %s, want %s", name, got, format)
		}
	}
	for _, tc := range []struct{ text, name, want string }{
		{"containers:\n  - {name: a, command: x}\n", "spec.yaml", Tend},
		{"instance: {name: a}\n", "spec.yaml", Tend},
		{"- a\n- b\n", "spec.yaml", Tend},                            // tend's loader says what is wrong
		{"web: ./server\nworker: ./worker\n", "spec.yaml", Procfile}, // by its lines
		{"web ./server\n", "Procfile", Procfile},                     // by its name: its converter names the bad line
		{"web: ./server\nnot a line\n", "spec.yaml", Tend},
		{"env: printenv\nweb: ./server\n", "spec.yaml", Procfile},
		{"[program:web\ncommand=x\n", "app.conf", Supervisord},
		{`[{"@class": "ru.yandex.iss.Instance",, "slot": "1@h"}]`, "x.json", ISS}, // broken JSON still ISS
		{`{"@class": "ru.yandex.iss.Instance"}`, "x.json", ISS},
		{"workloads: []\n", "x.yaml", PodAgent},
		{"processes: {}\n", "x.yaml", ProcessCompose},
	} {
		if got := Detect([]byte(tc.text), tc.name); got != tc.want {
			t.Errorf("Detect(%q, %s) = %s, want %s", tc.text, tc.name, got, tc.want)
		}
	}
}

// Every field of every example is mapped to a tend field or named in a warning.
func TestExamplesLeaveNoFieldUnaccounted(t *testing.T) {
	for format, name := range exampleFiles {
		data := readExample(t, name)
		res := mustConvert(t, data, name, Auto)
		if res.Format != format {
			t.Fatalf("%s: format %s, want %s", name, res.Format, format)
		}
		var leaves []string
		switch format {
		case Supervisord:
			for _, sec := range parseINI(data, &conv{}) {
				for _, k := range sec.keys {
					leaves = append(leaves, sec.keySrc(k).Path)
				}
			}
		case Procfile:
			for _, line := range strings.Split(string(data), "\n") {
				if m := procfileLineRe().FindStringSubmatch(line); m != nil {
					leaves = append(leaves, m[1])
				}
			}
		default:
			var doc yaml.Node
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			leaves = yamlLeaves(doc.Content[0], "")
		}
		if len(leaves) < 2 {
			t.Fatalf("%s: only %d fields found: %v", name, len(leaves), leaves)
		}
		for _, leaf := range leaves {
			if !accounted(res, leaf) {
				t.Errorf("%s: %s is neither mapped nor named in a warning", name, leaf)
			}
		}
	}
}

// yamlLeaves lists the path of every scalar in a document, as the converters name
// paths: mapping keys joined with dots, list items as [i].
func yamlLeaves(n *yaml.Node, path string) []string {
	switch n.Kind {
	case yaml.MappingNode:
		var out []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, yamlLeaves(n.Content[i+1], join(path, n.Content[i].Value))...)
		}
		return out
	case yaml.SequenceNode:
		var out []string
		for i, item := range n.Content {
			out = append(out, yamlLeaves(item, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	}
	return []string{path}
}

// accounted: the field is mapped (or it is an item of a list that is mapped as a
// whole), or a warning names it or a field above it.
func accounted(res *Result, path string) bool {
	if res.Mapped(path) || (strings.HasSuffix(path, "]") && res.Mapped(parentPath(path))) {
		return true
	}
	for _, w := range res.Warnings {
		if path == w.Path || strings.HasPrefix(path, w.Path+".") || strings.HasPrefix(path, w.Path+"[") {
			return true
		}
	}
	return false
}

// A field the converter does not know is a warning, never silently dropped.
func TestUnknownFieldsWarn(t *testing.T) {
	for _, tc := range []struct{ format, text, want string }{
		{PodAgent, "workloads:\n- id: a\n  start: {command_line: x}\n  bogus: 1\n", "workloads[0].bogus: unknown field (ignored)"},
		{ProcessCompose, "processes:\n  a:\n    command: x\n    bogus: 1\n", "processes.a.bogus: unknown field (ignored)"},
		{Supervisord, "[program:a]\ncommand=x\nbogus=1\n", "[program:a].bogus: unknown field (ignored)"},
		{ISS, `[{"@class": "ru.yandex.iss.Instance", "bogus": 1, "resources": {"iss_hook_start": {"@class": "ru.yandex.iss.Resource", "urls": ["http://h/x"]}}}]`, "[0].bogus: unknown field (ignored)"},
	} {
		res := mustConvert(t, []byte(tc.text), "f", tc.format)
		var got []string
		for _, w := range res.Warnings {
			got = append(got, w.String())
		}
		if !strings.Contains(strings.Join(got, "\n"), tc.want) {
			t.Errorf("%s: warnings %q lack %q", tc.format, got, tc.want)
		}
	}
}

func loadOpts() spec.Options {
	return spec.Options{Hostname: "host", Environ: []string{"PATH=/bin"}}
}

// render loads path (any format) and renders it.
func render(t *testing.T, path string) string {
	t.Helper()
	s, _, err := Load(path, Auto, loadOpts())
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	out, err := s.Render()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// The converted YAML is a valid tend spec that renders like the original.
func TestConvertedRendersLikeOriginal(t *testing.T) {
	dir := t.TempDir()
	for _, name := range exampleFiles {
		data := readExample(t, name)
		orig := filepath.Join(dir, name)
		if err := os.WriteFile(orig, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res := mustConvert(t, data, name, Auto)
		out, err := res.YAML(name)
		if err != nil {
			t.Fatal(err)
		}
		if Detect(out, "tend.yaml") != Tend {
			t.Errorf("%s: the converted spec is not detected as a tend spec:\n%s", name, out)
		}
		converted := filepath.Join(dir, name+".tend.yaml")
		if err := os.WriteFile(converted, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if a, b := render(t, orig), render(t, converted); a != b {
			t.Errorf("%s: render differs from the render of its conversion:\n%s\n---\n%s", name, a, b)
		}
		for _, w := range res.Warnings {
			if !strings.Contains(string(out), "# "+w.String()) {
				t.Errorf("%s: no comment for warning %q in:\n%s", name, w, out)
			}
		}
	}
}

// Input a converter cannot read, or a spec it converts into that is invalid, is an
// error naming the line of the original file.
func TestMalformedInputNamesTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"supervisord.conf", "[program:web]\ncommand=x\n\n[program:worker\ncommand=y\n", 4, "no closing ]"},
		{"Procfile", "web: ./server\n\nworker ./worker\n", 3, "want `name: command`"},
		{"pod.yaml", "workloads:\n- id: web\n  start:\n    command_line: ./server\n- id: worker\n  box_ref: box\n", 5, "command"},
		{"iss.json", "[\n  {\n    \"@class\": \"ru.yandex.iss.Instance\",\n    \"resources\": [\n      {\"iss_hook_start\": {}}\n    ]\n  }\n]\n", 4, "resources: must be a mapping, got a list"},
		{"iss.json", "[\n  {\"@class\": \"ru.yandex.iss.Instance\",,\n  \"slot\": \"1@h\"}\n]\n", 2, "invalid character ','"},
		{"iss.json", "[{\"@class\": \"ru.yandex.iss.Instance\",\n  \"slot\": \"1@h\",\n  \"resources\": {\"iss_hook_start\": {\"@class\": \"ru.yandex.iss.Resource\"\n    \"urls\": []},\n  }}]\n", 4, "after object key:value pair"},
		{"process-compose.yaml", "processes:\n  web:\n    command: ./server\n    readiness_probe:\n      http_get:\n        port: 99999\n", 6, "port"},
		{"supervisord.conf", "[program:web]\ncommand=x\nnumprocs=two\n", 3, "must be an integer"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(path, Auto, loadOpts())
		var errs *spec.Errors
		if !errors.As(err, &errs) {
			t.Errorf("%s: error %v, want field errors", tc.name, err)
			continue
		}
		found := false
		for _, f := range errs.Fields {
			if f.Line == tc.line && strings.Contains(f.Error(), tc.want) {
				found = true
			}
		}
		if !found || errs.File != path {
			t.Errorf("%s: errors %+v of %s lack line %d %q", tc.name, errs.Fields, errs.File, tc.line, tc.want)
		}
	}
}

// process-compose's scheduled processes: cron with its timezone, or an interval,
// become tend's schedule; run_on_start is dropped with a warning.
func TestProcessComposeSchedule(t *testing.T) {
	res := mustConvert(t, []byte(`processes:
  backup:
    command: ./backup.sh
    schedule: {cron: "0 2 * * *", timezone: UTC}
  cleanup:
    command: ./cleanup.sh
    schedule: {interval: 30m, run_on_start: true}
`), "process-compose.yaml", Auto)
	if got := res.Spec.Containers[0].Schedule; got != "CRON_TZ=UTC 0 2 * * *" {
		t.Errorf("backup schedule %q", got)
	}
	if got := res.Spec.Containers[1].Schedule; got != "@every 30m" {
		t.Errorf("cleanup schedule %q", got)
	}
}
