package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// lockName is the instance lock in instance.dir: one tend runs an instance at a time,
// whatever addresses it listens on.
const lockName = ".tend.lock"

// instanceLock is held (flock) for as long as tend runs the instance; the kernel
// releases it when tend exits, however it exits.
type instanceLock struct{ f *os.File }

// lockInstance takes the instance lock of dir and writes tend's pid into it. Another
// tend holding it is an error naming its pid. A lock file that cannot be created (a
// read-only instance.dir) is only a warning: tend then runs unlocked, and the
// listeners still keep a second tend on the same sockets out.
func lockInstance(dir string, log zerolog.Logger) (*instanceLock, error) {
	path := filepath.Join(dir, lockName)
	f, err := openLockFile(path)
	if err != nil {
		log.Warn().Err(err).Str("lock", path).Msg("cannot create the instance lock; running without it")
		return nil, nil
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0) // the open file, not the name: it may have changed since
		b = b[:n]
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "another tend"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				holder += " (pid " + strconv.Itoa(pid) + ")"
			}
			return nil, fmt.Errorf("instance %s is already run by %s: %s is locked", dir, holder, path)
		}
		log.Warn().Err(err).Str("lock", path).Msg("cannot lock the instance; running without the lock")
		return nil, nil
	}
	// Only the holder writes, so the pid read by a second tend is the holder's. The
	// pid is only for a second tend's error message, and writing it costs a few
	// hundred microseconds on some file systems: not before the first container.
	go func() {
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
	}()
	return &instanceLock{f}, nil
}

// openLockFile opens (or creates) the lock file. tend truncates and writes it as root
// in instance.dir, which a container's user may be able to write: it follows no
// symlink (O_NOFOLLOW), does not block on a FIFO (O_NONBLOCK), and keeps only a
// regular file with no other hard link, so that it can never be made to write
// another file.
func openLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err = unix.Fstat(int(f.Fd()), &st); err == nil && (st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1) {
		err = errors.New("not a regular file with one link")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// release unlocks the instance (the file stays: removing it would race with a next
// tend that opened it already).
func (l *instanceLock) release() {
	if l != nil {
		l.f.Close()
	}
}
