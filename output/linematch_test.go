package output

import (
	"regexp"
	"sync/atomic"
	"testing"
)

// The first matching line of either stream calls onMatch once; later lines are not
// matched at all.
func TestLineMatchOnce(t *testing.T) {
	var calls atomic.Int32
	m := NewLineMatch(regexp.MustCompile(`ready to accept`), func() { calls.Add(1) })
	out := NewLineWriter("db", nil, nil).WithMatches(m)
	errw := NewLineWriter("db", nil, nil).WithMatches(m)
	out.Write([]byte("starting\nstill starting\n"))
	if calls.Load() != 0 {
		t.Fatal("matched a line that does not match")
	}
	errw.Write([]byte("LOG: database system is ready to accept connections\n"))
	out.Write([]byte("ready to accept, again\n"))
	if n := calls.Load(); n != 1 {
		t.Errorf("onMatch called %d times, want 1", n)
	}
}

// The cost of log_line on the output path: one RE2 match per line until the first
// match. go test -bench LineWriter ./output/
func BenchmarkLineWriterPlain(b *testing.B) { benchLines(b, nil) }

func BenchmarkLineWriterLogLine(b *testing.B) {
	benchLines(b, NewLineMatch(regexp.MustCompile(`database system is ready`), func() {}))
}

func benchLines(b *testing.B, m *LineMatch) {
	w := NewLineWriter("db", nil, nil)
	if m != nil {
		w = w.WithMatches(m)
	}
	line := []byte("2026-11-24 08:00:00.000 UTC [42] LOG:  checkpoint starting: time, a line of ordinary length\n")
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Write(line)
	}
}
