package output

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
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
//
// A container's user may own the log's directory, and tend writes as root: the
// directory is made and opened once beneath instance.dir (internal/beneath), and
// every file of the log is opened, renamed and removed relative to it (openat and
// friends), by a name of one component, without following a symlink (O_NOFOLLOW;
// unlink and rename never follow one): such a name cannot leave the directory. A
// symlink, FIFO, device or hard link put in place of the log file is refused: that
// is log_error, and lines still reach stdout.
type LogFile struct {
	path     string
	name     string   // the file's name in dir
	dir      *os.File // the log's directory
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
// rotation at maxSizeMB, keeping maxFiles rotated files. The directory is made and
// opened beneath root (instance.dir; "" for none) when it is there: a symlink on the
// way that leads out of root is an error naming it (internal/beneath). Only a
// directory that cannot be made or opened is an error: a log file that cannot be
// opened is Err, and each write tries again.
func OpenLog(root, path string, maxSizeMB, maxFiles int) (*LogFile, error) {
	if maxSizeMB < 1 {
		return nil, fmt.Errorf("open log %s: max size must be at least 1 MB, got %d", path, maxSizeMB)
	}
	if maxFiles < 0 {
		return nil, fmt.Errorf("open log %s: max files must not be negative, got %d", path, maxFiles)
	}
	dir, err := beneath.MkdirAll(root, filepath.Dir(path), 0o755)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	l := &LogFile{path: path, name: filepath.Base(path), dir: dir, maxSize: int64(maxSizeMB) << 20, maxFiles: maxFiles, log: zerolog.Nop(), changed: func() {}}
	if err := l.prune(maxFiles); err != nil {
		dir.Close()
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if err := l.open(); err != nil {
		msg := err.Error()
		l.failing.Store(&msg) // reported by Report, once the logger is known
	}
	return l, nil
}

// Report sends write failures and recoveries to log and calls changed (which must not
// block) after each, for the status. Call it before the first Write.
func (l *LogFile) Report(log zerolog.Logger, changed func()) {
	l.log, l.changed = log, changed
	if e := l.failing.Load(); e != nil {
		l.log.Warn().Str("error", *e).Str("log_file", l.path).Msg("cannot open the log file; lines are lost until it works again")
	}
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

// open opens the current file for appending, created with mode 0644 whatever the
// umask. It follows no symlink and does not block on a FIFO (O_NONBLOCK: no reader is
// ENXIO). It refuses a FIFO (whose reader could stall the writes) and a regular file
// with another hard link (one the container's user linked to a file of root's). A
// device is kept: only root makes one, and a test writes to /dev/full.
func (l *LogFile) open() error {
	const flags = unix.O_WRONLY | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat(int(l.dir.Fd()), l.name, flags|unix.O_CREAT|unix.O_EXCL, 0o644)
	created := err == nil
	if errors.Is(err, unix.EEXIST) {
		fd, err = unix.Openat(int(l.dir.Fd()), l.name, flags, 0)
	}
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("open %s: a symlink; log files are never opened through one", l.path)
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: l.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), l.path)
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	switch {
	case err != nil:
	case st.Mode&unix.S_IFMT == unix.S_IFIFO:
		err = fmt.Errorf("open %s: a FIFO, not a regular file", l.path)
	case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1:
		err = fmt.Errorf("open %s: has %d hard links; a log file must have one", l.path, st.Nlink)
	case created:
		err = f.Chmod(0o644)
	}
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, st.Size
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
		return l.unlink(l.name)
	}
	if err := l.prune(l.maxFiles - 1); err != nil {
		return err
	}
	backup := l.backupName(time.Now())
	if err := unix.Renameat(int(l.dir.Fd()), l.name, int(l.dir.Fd()), backup); err != nil {
		return &os.LinkError{Op: "rename", Old: l.path, New: backup, Err: err}
	}
	return nil
}

// unlink removes name from the log's directory (a symlink itself, never its target).
func (l *LogFile) unlink(name string) error {
	if err := unix.Unlinkat(int(l.dir.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: filepath.Join(filepath.Dir(l.path), name), Err: err}
	}
	return nil
}

// backupName is the rotated name (in the log's directory) for t, a millisecond later
// for every name taken (two rotations within a millisecond must not overwrite one
// another).
func (l *LogFile) backupName(t time.Time) string {
	ext := filepath.Ext(l.name)
	base := strings.TrimSuffix(l.name, ext)
	for {
		name := base + "-" + t.UTC().Format(backupTimeFormat) + ext
		var st unix.Stat_t
		if err := unix.Fstatat(int(l.dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			return name
		}
		t = t.Add(time.Millisecond)
	}
}

// prune removes the oldest rotated files until at most keep are left.
func (l *LogFile) prune(keep int) error {
	ext := filepath.Ext(l.name)
	prefix := strings.TrimSuffix(l.name, ext) + "-"
	entries, err := l.readDir()
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
		if err := l.unlink(name); err != nil {
			return err
		}
	}
	return nil
}

// readDir lists the log's directory, read afresh through the opened directory.
func (l *LogFile) readDir() ([]os.DirEntry, error) {
	fd, err := unix.Openat(int(l.dir.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Dir(l.path), Err: err}
	}
	d := os.NewFile(uintptr(fd), filepath.Dir(l.path))
	defer d.Close()
	return d.ReadDir(-1)
}

// Close closes the current file.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.dir.Close()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
