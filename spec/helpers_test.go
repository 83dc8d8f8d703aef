package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testOptions are the Options of most tests: a fixed environment and hostname.
func testOptions() Options {
	return Options{
		Environ:  []string{"HOME=/home/u", "PATH=/usr/bin:/bin", "SHARED=environ"},
		Hostname: "host1",
		Limits:   map[string]string{"CPU_LIMIT": "1.5c", "MEM_LIMIT": "1073741824"},
	}
}

// writeSpec writes body as spec.yaml and the extra files into a new directory and
// returns the spec's path.
func writeSpec(t *testing.T, body string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustLoad loads a valid spec.
func mustLoad(t *testing.T, body string, files map[string]string) *Spec {
	t.Helper()
	s, err := Load(writeSpec(t, body, files), testOptions())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

// loadErrors loads an invalid spec and returns its field errors as "path: message" lines.
func loadErrors(t *testing.T, body string, files map[string]string) []string {
	t.Helper()
	_, err := Load(writeSpec(t, body, files), testOptions())
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load error = %v, want *Errors", err)
	}
	return strings.Split(errs.Error(), "\n")
}
