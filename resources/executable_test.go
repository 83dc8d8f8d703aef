package resources

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// executable: true puts the file in place with mode 0755 (after the checksum
// matched); a file already in place from a spec without it is made executable too.
func TestExecutableResource(t *testing.T) {
	srv := newServer(t)
	dir := t.TempDir()
	script := []byte("#!/bin/sh\necho hook\n")
	url := srv.file("/hook", script)
	mode := func(name string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	s := loadSpec(t, dir, `
resources:
  - {name: plain, urls: ["`+url+`"], checksum: "`+md5sum(script)+`"}
containers: []
`)
	if err := newManager(t, &syncBuffer{}).Prepare(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if m := mode("plain"); m != 0o644 {
		t.Errorf("plain: mode %v, want 0644", m)
	}
	s = loadSpec(t, dir, `
resources:
  - {name: plain, urls: ["`+url+`"], checksum: "`+md5sum(script)+`", executable: true}
  - {name: hook, urls: ["`+url+`"], checksum: "`+md5sum(script)+`", executable: true}
containers: []
`)
	if err := newManager(t, &syncBuffer{}).Prepare(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plain", "hook"} {
		if m := mode(name); m != 0o755 {
			t.Errorf("%s: mode %v, want 0755", name, m)
		}
	}
}
