package output

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stampRE is a line's leading time in TimeLayout and the space after it.
var stampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) `)

// untimed checks that every line of s begins with a time and strips it.
func untimed(t *testing.T, s string) string {
	t.Helper()
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l == "" {
			continue
		}
		loc := stampRE.FindStringIndex(l)
		if loc == nil {
			t.Fatalf("line %q has no time", l)
		}
		lines[i] = l[loc[1]:]
	}
	return strings.Join(lines, "")
}

func TestOutputAlignPadsNamesOfTheSpec(t *testing.T) {
	var buf bytes.Buffer
	out := NewStyledConsole(&buf, Style{Align: true})
	out.Align("setup", "web", "worker-1")
	for _, name := range []string{"web", "setup", "worker-1", "web/init[0]", "a-very-long-name"} {
		w := NewLineWriter(name, out, nil)
		w.Write([]byte("x\n"))
	}
	want := "web      | x\nsetup    | x\nworker-1 | x\nweb/init[0] | x\na-very-long-name | x\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	// A writer made before a reload follows the new alignment.
	buf.Reset()
	w := NewLineWriter("web", out, nil)
	w.Write([]byte("a\n"))
	out.Align("web", "db")
	w.Write([]byte("b\n"))
	if want := "web      | a\nweb | b\n"; buf.String() != want {
		t.Fatalf("after a new alignment: %q, want %q", buf.String(), want)
	}
}

// Without Style.Align (a pipe, a file) every line is exactly "NAME | line".
func TestOutputAlignOnlyForATerminal(t *testing.T) {
	var buf bytes.Buffer
	out := NewConsole(&buf)
	out.Align("web", "worker-1")
	NewLineWriter("web", out, nil).Write([]byte("x\n"))
	if want := "web | x\n"; buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}

func TestOutputColorsPerName(t *testing.T) {
	var plain, colored bytes.Buffer
	p := NewConsole(&plain)
	c := NewStyledConsole(&colored, Style{Color: true})
	for _, name := range []string{"web", "db", "web/init[0]"} {
		NewLineWriter(name, p, nil).Write([]byte("line\n"))
		NewLineWriter(name, c, nil).Write([]byte("line\n"))
	}
	if bytes.IndexByte(plain.Bytes(), 0x1b) >= 0 {
		t.Fatalf("escape codes without Color: %q", plain.String())
	}
	lines := strings.Split(strings.TrimSuffix(colored.String(), "\n"), "\n")
	re := regexp.MustCompile(`^\x1b\[(\d+)m(\S+) \|\x1b\[0m line$`)
	codes := map[string]string{}
	for _, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not a coloured prefix", l)
		}
		codes[m[2]] = m[1]
	}
	if codes["web"] == codes["db"] || codes["web/init[0]"] != codes["web"] {
		t.Fatalf("colours %v: want web and db apart, web's init command as web", codes)
	}
	// Stable: the same name gets the same colour in another Console.
	var again bytes.Buffer
	NewLineWriter("web", NewStyledConsole(&again, Style{Color: true}), nil).Write([]byte("line\n"))
	if !strings.HasPrefix(again.String(), "\x1b["+codes["web"]+"m") {
		t.Fatalf("web coloured %q, before %s", again.String(), codes["web"])
	}
}

func TestOutputTimestamps(t *testing.T) {
	var out, file bytes.Buffer
	w := NewLineWriter("web", NewStyledConsole(&out, Style{Timestamps: true}), &file).WithStream("stderr")
	before := time.Now().Truncate(time.Millisecond)
	w.Write([]byte("one\ntwo\nthr"))
	w.Flush()
	after := time.Now()
	if got := untimed(t, out.String()); got != "web | one\nweb | two\nweb | thr\n" {
		t.Fatalf("console %q", out.String())
	}
	if got := untimed(t, file.String()); got != "stderr web | one\nstderr web | two\nstderr web | thr\n" {
		t.Fatalf("file %q", file.String())
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String()+file.String(), "\n"), "\n") {
		at, err := time.Parse(TimeLayout, l[:strings.IndexByte(l, ' ')])
		if err != nil || at.Before(before) || at.After(after) {
			t.Fatalf("line %q: time %v (%v), want within [%v, %v]", l, at, err, before, after)
		}
	}
	// Without Timestamps the console line has none; the file's always has.
	out.Reset()
	NewLineWriter("web", NewConsole(&out), nil).Write([]byte("x\n"))
	if out.String() != "web | x\n" {
		t.Fatalf("console without timestamps: %q", out.String())
	}
}

func TestStampMilliseconds(t *testing.T) {
	var s stamp
	base := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	for _, d := range []time.Duration{0, 7 * time.Millisecond, 123*time.Millisecond + 999, 999 * time.Millisecond, time.Second + 5*time.Millisecond, time.Hour} {
		at := base.Add(d)
		s.set(at)
		if got, want := string(s.text()), at.Format(TimeLayout); got != want {
			t.Fatalf("stamp of %v = %s, want %s", at, got, want)
		}
	}
}

// A log.file that an older tend wrote ("NAME | line", no time) is appended to and
// rotated like any other.
func TestOutputOldLogFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.log")
	old := strings.Repeat("web | an old line without a time\n", 30000) // ~1 MB
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := OpenLog("", path, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	w := NewLineWriter("web", nil, log)
	w.Write([]byte(strings.Repeat("z", 60000) + "\n"))
	w.Flush()
	rotated := backups(t, path)
	if len(rotated) != 1 {
		t.Fatalf("rotated %v, want one file", rotated)
	}
	if b, _ := os.ReadFile(rotated[0]); string(b) != old {
		t.Fatalf("the rotated file is not the old one (%d bytes)", len(b))
	}
	b, _ := os.ReadFile(path)
	if got := untimed(t, string(b)); got != "stdout web | "+strings.Repeat("z", 60000)+"\n" {
		t.Fatalf("the new file holds %.80q", b)
	}
}

func TestLineWriterNoAllocationPerLine(t *testing.T) {
	for _, st := range []Style{{}, {Timestamps: true, Color: true}} {
		w := NewLineWriter("web", NewStyledConsole(io.Discard, st), io.Discard).WithStream("stderr")
		lines := []byte(strings.Repeat("a line of output\n", 100))
		w.Write(lines) // grows the batches once
		if n := testing.AllocsPerRun(100, func() { w.Write(lines) }); n != 0 {
			t.Errorf("style %+v: %v allocations per Write of 100 lines, want 0", st, n)
		}
	}
}

func BenchmarkLineWriter(b *testing.B) {
	line := []byte("GET /api/v1/items 200 12ms user=42 request_id=5f1c2a\n")
	for _, bc := range []struct {
		name  string
		style Style
		file  io.Writer
	}{
		{"plain", Style{}, nil},
		{"timestamps", Style{Timestamps: true}, nil},
		{"color+timestamps", Style{Color: true, Timestamps: true}, nil},
		{"logfile", Style{}, io.Discard},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := NewLineWriter("web", NewStyledConsole(io.Discard, bc.style), bc.file)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				w.Write(line) // one line per write, as a child that writes line by line
			}
		})
	}
}
