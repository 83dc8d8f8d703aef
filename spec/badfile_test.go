package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadFiles: whatever cannot be a spec gives a one-line error naming the file, fast.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// 100 MB, sparse: made at once, and Load must not read it.
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}

	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	deepBlock := "containers:\n"
	for i := range 100 {
		deepBlock += strings.Repeat("  ", i+1) + "a:\n"
	}
	// Each part within the limit, too deep where one is used inside the other.
	deepAlias := "a: &a " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\nb: " +
		strings.Repeat("[", 30) + "*a" + strings.Repeat("]", 30) + "\n"
	bomb := `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
containers: *i
`
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.yaml"), "open: no such file or directory"},
		{"directory", filepath.Join(dir, "adir"), "is a directory, not a spec file"},
		{"huge", huge, "too large for a spec (104857600 bytes, at most 1048576)"},
		{"empty", write("empty.yaml", nil), "the file is empty"},
		{"blank", write("blank.yaml", []byte(" \n\t\n")), "the file is empty"},
		{"comments only", write("comments.yaml", []byte("# nothing\n")), "no YAML document"},
		{"binary", write("bin.yaml", []byte("containers: []\n\x00\x01\x02")), "binary data (a NUL byte)"},
		{"latin-1", write("latin1.yaml", []byte("instance: {name: caf\xe9}\n")), "not UTF-8 text"},
		{"not YAML", write("bad.yaml", []byte("containers: [\n  - name: a\n   bad: : :\n")), "did not find expected"},
		{"tab indent", write("tabs.yaml", []byte("containers:\n\t- name: a\n")), "line 2: tab characters are not allowed for indentation"},
		{"scalar", write("scalar.yaml", []byte("just text\n")), `the top level must be a mapping, got "just text" (line 1)`},
		{"list", write("list.yaml", []byte("- a\n- b\n")), "the top level must be a mapping, got a list (line 1)"},
		{"null", write("null.yaml", []byte("~\n")), "the document is empty"},
		{"two documents", write("two.yaml", []byte("containers: []\n---\ncontainers: []\n")), "more than one YAML document (line 2)"},
		{"deep flow", write("deep.yaml", []byte("containers: "+deep+"\n")), "nested deeper than 64 levels"},
		{"deep block", write("deepblock.yaml", []byte(deepBlock)), "nested deeper than 64 levels"},
		{"alias bomb", write("bomb.yaml", []byte(bomb)), "more than 250000 nodes, aliases expanded"},
		{"deep through an alias", write("deepalias.yaml", []byte(deepAlias)), "nested deeper than 64 levels through aliases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := Load(tt.path, testOptions())
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Load took %v", took)
			}
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var errs *Errors
			msg := err.Error()
			if errors.As(err, &errs) {
				// A syntax error is located like a field error: FILE:LINE: message.
				if len(errs.Fields) != 1 || errs.Fields[0].Line == 0 || errs.File != tt.path {
					t.Fatalf("got field errors %+v, want one with a line", errs.Fields)
				}
				msg = fmt.Sprintf("%s: line %d: %s", errs.File, errs.Fields[0].Line, errs.Fields[0].Msg)
			}
			switch {
			case strings.Contains(msg, "\n"):
				t.Errorf("error has several lines: %q", msg)
			case !strings.HasPrefix(msg, tt.path+": "):
				t.Errorf("error %q does not start with the file name", msg)
			case !strings.Contains(msg, tt.want):
				t.Errorf("error %q, want it to contain %q", msg, tt.want)
			}
		})
	}
}

// TestAliasesWithinBounds: ordinary anchors work, and a wide but bounded use of them too.
func TestAliasesWithinBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-env: &env [{name: A, value: x}, {name: B, value: y}]\n")
	b.WriteString("containers:\n")
	for i := range 300 {
		b.WriteString("  - {name: c" + strconv.Itoa(i) + ", command: x, env: *env}\n")
	}
	_, err := Load(writeSpec(t, b.String(), nil), testOptions())
	if err == nil || !strings.Contains(err.Error(), "x-env: unknown field") || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("Load = %v, want only the unknown x-env field", err)
	}
}

// TestSpecSwappedForFIFO: a FIFO renamed over the spec between a check and the open
// must not block the reader. The spec is a symlink flipped between a regular file and
// a FIFO nobody writes as fast as possible while Load runs in a loop; an open that
// follows into the FIFO without O_NONBLOCK would block forever.
func TestSpecSwappedForFIFO(t *testing.T) {
	dir := t.TempDir()
	regular, fifo, path := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "fifo"), filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(regular, []byte("containers: [{name: a, command: [/bin/true]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(regular, path); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	flipped := make(chan struct{})
	go func() {
		defer close(flipped)
		tmp := filepath.Join(dir, "tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := []string{regular, fifo}[i%2]
			if os.Symlink(target, tmp) != nil || os.Rename(tmp, path) != nil {
				return
			}
		}
	}()
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		for end := time.Now().Add(time.Second); time.Now().Before(end); {
			_, err := Load(path, testOptions())
			if err != nil && !strings.Contains(err.Error(), "not a regular file (named pipe)") && !strings.Contains(err.Error(), "no such file") {
				t.Errorf("Load = %v, want success or a refused FIFO", err)
			}
		}
	}()
	defer func() { close(stop); <-flipped }()
	select {
	case <-loaded:
	case <-time.After(10 * time.Second):
		// Unblock the reader stuck in open: a writer comes and goes.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("Load blocked on a FIFO swapped in for the spec")
	}
}
