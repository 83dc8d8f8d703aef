package output

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

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
	log, err := OpenLog("", path, 1, 2)
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
	log, err := OpenLog("", filepath.Join(dir, "web.log"), 1, maxFiles)
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
	log, err := OpenLog("", filepath.Join(dir, "web.log"), 1, 2)
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
	log, err := OpenLog("", "/dev/full", 1, 1) // every write: ENOSPC
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
	log, err := OpenLog("", path, 1, 0)
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
		log, err := OpenLog("", path, 1, 1)
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
