package output

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

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

// backups lists the rotated files of the log at path.
func backups(t *testing.T, path string) []string {
	t.Helper()
	ext := filepath.Ext(path)
	found, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// writeLog writes megabytes of prefixed lines through a LineWriter into log.
func writeLog(log io.Writer, megabytes int) {
	w := NewLineWriter("web", nil, log)
	line := []byte(strings.Repeat("y", 1000) + "\n")
	for range megabytes * 1000 {
		w.Write(line)
	}
	w.Flush()
}

func TestOutputOpenLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "nested", "web.log")
	log, err := OpenLog(path, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	writeLog(log, 5) // 4 or 5 rotations
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 || info.Size() > 1<<20 {
		t.Fatalf("%s: mode %v, %d bytes", path, info.Mode(), info.Size())
	}
	// Removed in the rotation itself, not in the background.
	got := backups(t, path)
	if len(got) != 2 {
		t.Fatalf("backups %v, want 2", got)
	}
	for _, b := range got {
		if info, err := os.Stat(b); err != nil || info.Mode().Perm() != 0o644 || info.Size() > 1<<20 || info.Size() < 1<<19 {
			t.Fatalf("backup %s: %v, %v", b, info, err)
		}
	}
}

// dirBytes is the size of the files in dir and their count.
func dirBytes(dir string) (int64, int) {
	entries, _ := os.ReadDir(dir)
	var total int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
	}
	return total, len(entries)
}

// However fast the writer, the log never takes more than (max_files+1) × max_size_mb
// (lumberjack removed old files in a goroutine of its own that fell behind: 136 files
// of 1 MB with max_files 3). The directory is measured after every write: a listing
// taken while a rotation renames and removes files is no snapshot (it may hold a file
// removed during the listing and one created after it).
func TestOutputOpenLogBoundedUnderFastWriter(t *testing.T) {
	dir := t.TempDir()
	const maxFiles = 3
	log, err := OpenLog(filepath.Join(dir, "web.log"), 1, maxFiles)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var peakBytes int64
	peakFiles := 0
	chunk := []byte(strings.Repeat("z", 64<<10-1) + "\n")
	for range 100 << 20 / len(chunk) { // 100 MB
		if _, err := log.Write(chunk); err != nil {
			t.Fatal(err)
		}
		b, n := dirBytes(dir)
		peakBytes, peakFiles = max(peakBytes, b), max(peakFiles, n)
	}
	t.Logf("at most %d files, %d bytes", peakFiles, peakBytes)
	if bound := int64(maxFiles+1) << 20; peakBytes > bound || peakFiles > maxFiles+1 {
		t.Fatalf("the log took up to %d bytes in %d files, want at most %d bytes in %d", peakBytes, peakFiles, bound, maxFiles+1)
	}
}

// Rotated files beyond max_files that an earlier run left (killed before its clean-up)
// are removed when the log is opened; the newest are kept.
func TestOutputOpenLogRemovesExtrasAtStart(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for i := range 6 {
		name := filepath.Join(dir, "web-2026-01-02T03-04-0"+strconv.Itoa(i)+".000.log")
		if err := os.WriteFile(name, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	other := filepath.Join(dir, "web-notes.log")
	os.WriteFile(other, nil, 0o644)
	log, err := OpenLog(filepath.Join(dir, "web.log"), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	log.Close()
	if got := backups(t, filepath.Join(dir, "web.log")); !slices.Equal(got, []string{names[4], names[5], other}) {
		t.Fatalf("left %v, want the newest two and web-notes.log", got)
	}
}

// A log file that cannot be written is reported once when it starts failing, shown by
// Err, and the writes go on failing without another warning.
func TestOutputLogFileReportsWriteErrors(t *testing.T) {
	log, err := OpenLog("/dev/full", 1, 1) // every write: ENOSPC
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer log.Close()
	var logged lockedBuffer
	changes := 0
	log.Report(zerolog.New(&logged), func() { changes++ })
	if log.Err() != "" {
		t.Fatalf("Err before any write: %q", log.Err())
	}
	w := NewLineWriter("web", nil, log)
	for range 5 {
		w.Write([]byte("a line\n"))
	}
	if !strings.Contains(log.Err(), "no space left on device") {
		t.Fatalf("Err = %q, want the write error", log.Err())
	}
	if n := strings.Count(logged.String(), "cannot write the log file"); n != 1 || changes != 1 {
		t.Fatalf("%d warnings and %d status changes for 5 failing writes, want 1 and 1: %s", n, changes, logged.String())
	}
}

func TestOutputOpenLogKeepsNoBackupsWithMaxFilesZero(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.log")
	log, err := OpenLog(path, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	writeLog(log, 3)
	if got := backups(t, path); len(got) != 0 {
		t.Fatalf("backups %v, want none", got)
	}
	if info, err := os.Stat(path); err != nil || info.Size() == 0 || info.Size() > 1<<20 {
		t.Fatalf("%s: %v, %v", path, info, err)
	}
}

func TestOutputOpenLogAppendsToExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.log")
	for _, text := range []string{"first\n", "second\n"} {
		log, err := OpenLog(path, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		log.Write([]byte(text))
		log.Close()
	}
	if b, _ := os.ReadFile(path); string(b) != "first\nsecond\n" {
		t.Fatalf("log %q", b)
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
