package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tend-sh/tend/internal/testutil"
	"github.com/tend-sh/tend/proc"
)

// lockedBuffer collects output safely across goroutines.
type lockedBuffer = testutil.SyncBuffer

func TestLineWriterPrefixesLines(t *testing.T) {
	var out, file lockedBuffer
	w := NewLineWriter("web", NewConsole(&out), &file)
	for _, p := range []string{"one\ntw", "o\n", "", "\n", "three\nfo", "ur"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if want := "web | one\nweb | two\nweb | \nweb | three\n"; out.String() != want {
		t.Fatalf("before Flush: out %q, want %q", out.String(), want)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "web | one\nweb | two\nweb | \nweb | three\nweb | four\n"
	fileWant := "stdout web | one\nstdout web | two\nstdout web | \nstdout web | three\nstdout web | four\n"
	if out.String() != want || untimed(t, file.String()) != fileWant {
		t.Fatalf("out %q, file %q, want %q and %q", out.String(), file.String(), want, fileWant)
	}
	if err := w.Flush(); err != nil || out.String() != want {
		t.Fatalf("a second Flush wrote %q, %v", out.String(), err)
	}
}

func TestLineWriterNilOutput(t *testing.T) {
	var file lockedBuffer
	w := NewLineWriter("job", nil, &file)
	w.Write([]byte("a\nb"))
	w.Flush()
	if untimed(t, file.String()) != "stdout job | a\nstdout job | b\n" {
		t.Fatalf("file %q", file.String())
	}
}

func TestLineWriterLongLineInPieces(t *testing.T) {
	var out lockedBuffer
	w := NewLineWriter("x", NewConsole(&out), nil)
	line := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, no newline
	for chunk := range slices.Chunk(line, 32<<10) {
		w.Write(chunk)
		if len(w.line) > MaxLine || cap(w.line) > MaxLine {
			t.Fatalf("holds %d bytes (cap %d) of an unfinished line, more than %d", len(w.line), cap(w.line), MaxLine)
		}
		if cap(w.batch) > maxBatch+MaxLine+len(w.prefix)+1 {
			t.Fatalf("batch capacity %d", cap(w.batch))
		}
	}
	w.Flush()
	pieces := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(pieces) != len(line)/MaxLine {
		t.Fatalf("%d pieces, want %d", len(pieces), len(line)/MaxLine)
	}
	var joined strings.Builder
	for i, piece := range pieces {
		text, ok := strings.CutPrefix(piece, "x | ")
		if !ok || len(text) != MaxLine {
			t.Fatalf("piece %d: %d bytes, prefixed %v", i, len(text), ok)
		}
		joined.WriteString(text)
	}
	if joined.String() != string(line) {
		t.Fatal("the pieces do not make up the line")
	}
}

func TestLineWriterLineOfExactlyMaxLine(t *testing.T) {
	var out lockedBuffer
	w := NewLineWriter("x", NewConsole(&out), nil)
	line := strings.Repeat("a", MaxLine)
	w.Write([]byte(line[:100]))
	w.Write([]byte(line[100:]))
	w.Write([]byte("\nb" + line + "\n"))
	w.Flush()
	want := "x | " + line + "\n" + "x | b" + line[1:] + "\n" + "x | a\n"
	if out.String() != want {
		t.Fatalf("got lines of %v bytes", lineLengths(out.String()))
	}
}

func lineLengths(s string) []int {
	var n []int
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		n = append(n, len(l))
	}
	return n
}

// tricklingWriter writes one byte at a time and yields in between, so writes that
// are not serialised interleave.
type tricklingWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *tricklingWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		w.mu.Lock()
		w.buf.WriteByte(c)
		w.mu.Unlock()
		runtime.Gosched()
	}
	return len(p), nil
}

func TestOutputConcurrentWritersDoNotInterleaveWithinLines(t *testing.T) {
	const writers, lines = 8, 300
	var under tricklingWriter
	out := NewConsole(&under)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			var text strings.Builder
			for j := range lines {
				fmt.Fprintf(&text, "writer %d line %d %s\n", i, j, strings.Repeat("x", j%50))
			}
			w := NewLineWriter(fmt.Sprintf("c%d", i), out, nil)
			rest := []byte(text.String())
			for len(rest) > 0 { // random cuts, across lines and within them
				n := min(len(rest), 1+rand.IntN(200))
				w.Write(rest[:n])
				rest = rest[n:]
			}
			w.Flush()
		})
	}
	wg.Wait()
	next := make([]int, writers)
	for _, l := range strings.Split(strings.TrimSuffix(under.buf.String(), "\n"), "\n") {
		var i int
		if _, err := fmt.Sscanf(l, "c%d |", &i); err != nil || i < 0 || i >= writers {
			t.Fatalf("mangled line %q", l)
		}
		j := next[i]
		if want := fmt.Sprintf("c%d | writer %d line %d %s", i, i, j, strings.Repeat("x", j%50)); l != want {
			t.Fatalf("line %q, want %q", l, want)
		}
		next[i]++
	}
	for i, n := range next {
		if n != lines {
			t.Errorf("writer %d: %d lines, want %d", i, n, lines)
		}
	}
}

type failingWriter struct{ calls int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.calls++
	return 0, errors.New("disk full")
}

func TestLineWriterLogFileErrorKeepsStdout(t *testing.T) {
	var out lockedBuffer
	file := &failingWriter{}
	w := NewLineWriter("web", NewConsole(&out), file)
	if n, err := w.Write([]byte("a\nb\n")); n != 4 || err != nil {
		t.Fatalf("Write = %d, %v; want no error", n, err)
	}
	w.Write([]byte("c\n"))
	if out.String() != "web | a\nweb | b\nweb | c\n" || file.calls != 2 {
		t.Fatalf("out %q, %d file writes", out.String(), file.calls)
	}
	if err := w.Flush(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Flush: %v, want the log file error", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("second Flush: %v, want nil", err)
	}
}

// countingWriter counts the bytes of line content (without "NAME | " and newline).
type countingWriter struct {
	prefix  int
	content atomic.Int64
	lines   atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n := int64(bytes.Count(p, []byte{'\n'}))
	c.lines.Add(n)
	c.content.Add(int64(len(p)) - n*int64(c.prefix+1))
	return len(p), nil
}

// heapBytes is the memory of live and not yet swept heap objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func TestOutputFloodStaysBounded(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		content int64 // bytes of line content expected
		lines   int64
	}{
		// 100 MB without a newline: 64 KiB pieces.
		{"one endless line", `head -c 100000000 /dev/zero | tr '\0' a`, 100_000_000, (100_000_000 + MaxLine - 1) / MaxLine},
		// Short lines: one emit per 2 bytes.
		{"short lines", `yes | head -c 20000000`, 10_000_000, 10_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter := &countingWriter{prefix: len("flood | ")}
			w := NewLineWriter("flood", NewConsole(counter), io.Discard)

			runtime.GC()
			base := heapBytes()
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() { // measures, does not synchronise
				defer close(sampled)
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for {
					if h := heapBytes(); h > peak.Load() {
						peak.Store(h)
					}
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			exit := proc.Run(context.Background(), proc.Cmd{
				Argv: []string{"sh", "-c", tt.script}, Env: os.Environ(), Stdout: w,
			}, time.Minute)
			close(stop)
			<-sampled
			if !exit.Success() {
				t.Fatalf("flood: %v", exit)
			}
			if counter.content.Load() != tt.content || counter.lines.Load() != tt.lines {
				t.Fatalf("%d bytes in %d lines arrived, want %d in %d", counter.content.Load(), counter.lines.Load(), tt.content, tt.lines)
			}
			const bound = 16 << 20
			growth := int64(peak.Load()) - int64(base)
			t.Logf("heap: base %d KiB, peak growth %d KiB", base>>10, growth>>10)
			if growth > bound {
				t.Fatalf("heap grew by %d bytes, more than %d", growth, bound)
			}
		})
	}
}
