package spec

import (
	"strings"
	"testing"
)

func TestExecutable(t *testing.T) {
	s := mustLoad(t, "resources:\n  - {name: hook, urls: [\"http://h/hook\"], executable: true}\ncontainers: []\n", nil)
	out, err := s.Render()
	if err != nil || !s.Resources[0].Executable || !strings.Contains(string(out), "executable: true") {
		t.Errorf("executable not kept or not rendered: %v\n%s", err, out)
	}
	errs := loadErrors(t, "resources:\n  - {name: data, urls: [\"http://h/d.tgz\"], extract: true, executable: true}\ncontainers: []\n", nil)
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "resources[0].executable: applies to a file") {
		t.Errorf("errors %q", errs)
	}
}

// LoadDocument loads what another format was converted into; Revision is the file's.
func TestLoadDocument(t *testing.T) {
	path := writeSpec(t, "web: ./server\n", nil)
	doc := []byte("containers: [{name: web, command: ./server}]\n")
	s, err := LoadDocument(path, []byte("web: ./server\n"), doc, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := LoadDocument(path, doc, doc, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if s.Revision() == plain.Revision() || s.Containers[0].Name != "web" || s.Path() != path {
		t.Errorf("revision %s (want the file's, not %s), %+v", s.Revision(), plain.Revision(), s.Containers)
	}
	if _, err := ReadFile(path + ".missing"); err == nil || !strings.HasPrefix(err.Error(), path+".missing: ") {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}
