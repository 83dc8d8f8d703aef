package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// LogFile is a container's log.file with size rotation. Before a write would take the
// file past its maximum size, the file is renamed to NAME-TIMESTAMP.EXT (UTC,
// 2006-01-02T15-04-05.000, so names sort by age) and a new one begun; the oldest
// rotated files are removed first, in the same call, so that at no moment are there
// more than maxFiles of them: the log never takes more than (maxFiles+1) × maxSize,
// however fast the container writes and however often tend is killed. Opening removes
// rotated files beyond maxFiles that an earlier run left.
//
// Write errors are reported, not returned silently: the first failing write logs a
// warning and shows in Err (the container's log_error), the first write that works
// again logs that it recovered. A LogFile is safe for concurrent use.
type LogFile struct {
	path     string
	maxSize  int64
	maxFiles int

	mu     sync.Mutex
	f      *os.File // nil after a failed rotation: the next write opens it again
	size   int64
	closed bool

	failing atomic.Pointer[string] // the first error of the failing episode; nil when writes work
	log     zerolog.Logger
	changed func()
}

// backupTimeFormat is the timestamp in rotated file names (lumberjack's, so the names
// of logs rotated by earlier versions of tend are the same).
const backupTimeFormat = "2006-01-02T15-04-05.000"

// OpenLog opens path for appending (parent directories created, files mode 0644) with
// rotation at maxSizeMB, keeping maxFiles rotated files.
func OpenLog(path string, maxSizeMB, maxFiles int) (*LogFile, error) {
	if maxSizeMB < 1 {
		return nil, fmt.Errorf("open log %s: max size must be at least 1 MB, got %d", path, maxSizeMB)
	}
	if maxFiles < 0 {
		return nil, fmt.Errorf("open log %s: max files must not be negative, got %d", path, maxFiles)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	l := &LogFile{path: path, maxSize: int64(maxSizeMB) << 20, maxFiles: maxFiles, log: zerolog.Nop(), changed: func() {}}
	if err := l.open(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if err := l.prune(maxFiles); err != nil {
		l.f.Close()
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	return l, nil
}

// Report sends write failures and recoveries to log and calls changed (which must not
// block) after each, for the status. Call it before the first Write.
func (l *LogFile) Report(log zerolog.Logger, changed func()) {
	l.log, l.changed = log, changed
}

// Err is the error that makes writes fail, or "" while they work.
func (l *LogFile) Err() string {
	if e := l.failing.Load(); e != nil {
		return *e
	}
	return ""
}

// Write appends p, rotating first when p would take the file past its maximum size.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.write(p)
	l.note(err)
	return n, err
}

func (l *LogFile) write(p []byte) (int, error) {
	if l.closed {
		return 0, os.ErrClosed
	}
	if l.f != nil && l.size > 0 && l.size+int64(len(p)) > l.maxSize {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	if l.f == nil {
		if err := l.open(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// note reports the start and the end of a failing episode, once each.
func (l *LogFile) note(err error) {
	switch failing := l.failing.Load() != nil; {
	case err != nil && !failing:
		msg := err.Error()
		l.failing.Store(&msg)
		l.log.Warn().Err(err).Str("log_file", l.path).Msg("cannot write the log file; lines are lost until it works again")
		l.changed()
	case err == nil && failing:
		l.failing.Store(nil)
		l.log.Info().Str("log_file", l.path).Msg("writing the log file works again")
		l.changed()
	}
}

// open opens the current file for appending, created with mode 0644 whatever the umask.
func (l *LogFile) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		err = f.Chmod(0o644)
	} else if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, info.Size()
	return nil
}

// rotate makes room for one more rotated file, renames the current file to it and
// leaves the next write to open a new one.
func (l *LogFile) rotate() error {
	if err := l.f.Close(); err != nil {
		l.f = nil
		return err
	}
	l.f = nil
	if l.maxFiles == 0 {
		return os.Remove(l.path)
	}
	if err := l.prune(l.maxFiles - 1); err != nil {
		return err
	}
	return os.Rename(l.path, l.backupName(time.Now()))
}

// backupName is the rotated name for t, a millisecond later for every name taken (two
// rotations within a millisecond must not overwrite one another).
func (l *LogFile) backupName(t time.Time) string {
	ext := filepath.Ext(l.path)
	base := strings.TrimSuffix(l.path, ext)
	for {
		name := base + "-" + t.UTC().Format(backupTimeFormat) + ext
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		t = t.Add(time.Millisecond)
	}
}

// prune removes the oldest rotated files until at most keep are left.
func (l *LogFile) prune(keep int) error {
	dir, file := filepath.Split(l.path)
	ext := filepath.Ext(file)
	prefix := strings.TrimSuffix(file, ext) + "-"
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return err
	}
	var rotated []string
	for _, e := range entries {
		stamp, hasPrefix := strings.CutPrefix(e.Name(), prefix)
		stamp, hasExt := strings.CutSuffix(stamp, ext)
		if !hasPrefix || !hasExt || e.IsDir() {
			continue
		}
		if _, err := time.Parse(backupTimeFormat, stamp); err == nil {
			rotated = append(rotated, e.Name())
		}
	}
	if len(rotated) <= keep {
		return nil
	}
	slices.Sort(rotated) // the timestamps sort by age
	for _, name := range rotated[:len(rotated)-keep] {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Close closes the current file.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
