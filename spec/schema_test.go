package spec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// schemaFile is the committed schema the examples' $schema lines point at.
const schemaFile = "../docs/tend.schema.json"

// The committed schema is what Schema makes now: a changed type changes it (run
// `UPDATE_SCHEMA=1 go test ./spec -run TestSchemaFileUpToDate`, or `tend schema >docs/tend.schema.json`).
func TestSchemaFileUpToDate(t *testing.T) {
	got := Schema()
	if os.Getenv("UPDATE_SCHEMA") != "" {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is not what Schema makes (%v): regenerate it with UPDATE_SCHEMA=1 go test ./spec -run TestSchemaFileUpToDate", schemaFile, err)
	}
}

// compileSchema compiles the schema with a JSON Schema validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// yamlAsJSON reads a YAML document as the JSON value a validator takes.
func yamlAsJSON(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// Every tend example validates against the schema and points at it.
func TestExamplesMatchSchema(t *testing.T) {
	schema := compileSchema(t)
	paths, _ := filepath.Glob("../examples/*.yaml")
	paths = append(paths, "../examples/kubernetes/spec.yaml")
	if len(paths) < 5 {
		t.Fatalf("examples: %v", paths)
	}
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Dir(path), schemaFile)
		if line := "# yaml-language-server: $schema=" + rel + "\n"; !bytes.HasPrefix(text, []byte(line)) {
			t.Errorf("%s does not begin with %q", path, line)
		}
		if err := schema.Validate(yamlAsJSON(t, text)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// The schema rejects what the decoder rejects: unknown fields, wrong types, values
// outside an enum; and takes what it takes: a number for a string field.
func TestSchemaChecks(t *testing.T) {
	schema := compileSchema(t)
	tests := []struct {
		doc string
		ok  bool
	}{
		{"containers: [{name: web, command: [sleep, 1], env: [{name: N, value: 4}], readiness_probe: {tcp_socket: {port: 8080}}}]", true},
		{"containers: [{name: web, command: x, comand: y}]", false},
		{"containers: [{name: web, command: x, restart_policy: {mode: sometimes}}]", false},
		{"containers: [{name: web, command: x, restart_policy: {min_period_ms: 1.5}}]", false},
		{"containers: [{name: web}]", false},
		{"containers: [{name: db, command: x}, {name: web, command: x, depends_on: {db: ready}}]", true},
		{"containers: [{name: web, command: x, depends_on: {db: up}}]", false},
		{"bogus: 1", false},
		{"containers: [{name: web, command: x, liveness_probe: {exec: {command: x}, period: 2s, initial_delay: 1m30s, timeout: 500ms}}]", true},
		{"containers: [{name: web, command: x, stop_policy: {period: 2s, time_limit: {}}}]", false},
		{"containers: [{name: web, command: x, readiness_probe: {exec: {command: x}, period: 2}}]", false},
		{"containers: [{name: web, command: x, readiness_probe: {exec: {command: x}, period: -1s}}]", false},
		// Limits: every written form, and the values both refuse.
		{"instance: {cgroups: required, limits: {cpu: 2, memory: 2Gi, pids: 500}}\ncontainers: []", true},
		{"instance: {cgroups: off}\ncontainers: []", true},
		{"instance: {cgroups: Off}\ncontainers: []", false},
		{"instance: {cgroups: yes}\ncontainers: []", false},
		{"containers: [{name: web, command: x, limits: {cpu: 1.5, memory: 536870912, pids: 200}, memory_restart: 400Mi}]", true},
		{"containers: [{name: web, command: x, limits: {cpu: 1500m, memory: 1.5Gi, pids: '200'}, memory_restart: 1G}]", true},
		{"containers: [{name: web, command: x, limits: {cpu: 1.5c, memory: 1e9}}]", true},
		{"containers: [{name: web, command: x, limits: {cpu: .25, memory: 64Ki}}]", true},
		{"containers: [{name: web, command: x, limits: {memory: 12X}}]", false},
		{"containers: [{name: web, command: x, limits: {memory: 512mi}}]", false},
		{"containers: [{name: web, command: x, limits: {memory: -1}}]", false},
		{"containers: [{name: web, command: x, limits: {memory: 0}}]", false},
		{"containers: [{name: web, command: x, limits: {cpu: 0}}]", false},
		{"containers: [{name: web, command: x, limits: {cpu: 1.5x}}]", false},
		{"containers: [{name: web, command: x, limits: {cpu: [1]}}]", false},
		{"containers: [{name: web, command: x, limits: {pids: 1.5}}]", false},
		{"containers: [{name: web, command: x, limits: {pids: 10k}}]", false},
		{"containers: [{name: web, command: x, limits: {swap: 1}}]", false},
		{"containers: [{name: web, command: x, memory_restart: true}]", false},
		{"init_containers: [{name: i, command: x, limits: {memory: 1Gi}}]\ncontainers: []", false},
		{"containers: [{name: shipper, command: x, affects_readiness: false}]", true},
		{"containers: [{name: shipper, command: x, affects_readiness: no}]", false},
		{"containers: [{name: shipper, command: x, affects_readiness: 0}]", false},
		{"init_containers: [{name: i, command: x, affects_readiness: false}]\ncontainers: []", false},
	}
	for _, tt := range tests {
		err := schema.Validate(yamlAsJSON(t, []byte(tt.doc)))
		if (err == nil) != tt.ok {
			t.Errorf("%s: valid %v, want %v (%v)", tt.doc, err == nil, tt.ok, err)
		}
		// The decoder agrees.
		_, loadErr := Load(writeSpec(t, tt.doc, nil), testOptions())
		if (loadErr == nil) != tt.ok {
			t.Errorf("%s: Load %v, want ok %v", tt.doc, loadErr, tt.ok)
		}
	}
}
