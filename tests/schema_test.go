package tests

import (
	"os"
	"testing"
)

// `tend schema` prints the committed schema the examples point at; a spec written
// with the editor's help validates.
func TestSchemaCommand(t *testing.T) {
	want, err := os.ReadFile("../docs/tend.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, t.TempDir(), "schema")
	if code != 0 || out != string(want) || errOut != "" {
		t.Fatalf("tend schema: exit %d, %d bytes (want %d), stderr %q", code, len(out), len(want), errOut)
	}
	if _, errOut, code := runCLI(t, t.TempDir(), "schema", "extra"); code != 2 || errOut == "" {
		t.Fatalf("tend schema extra: exit %d %q, want a usage error", code, errOut)
	}
}
