package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// instanceLock is held (flock) for as long as tend runs the instance; the kernel
// releases it when tend exits, however it exits.
type instanceLock struct{ fd int }

// lockInstance takes the instance lock: an exclusive flock on instance.dir itself,
// opened O_DIRECTORY|O_NOFOLLOW once its real path is known. A container's user may
// own everything in instance.dir, but cannot remove, replace or redirect the
// directory it runs in, so a second tend of the same real directory always finds it
// locked, and exits naming the holder's pid. Only a directory that does not exist
// (nothing runs in it) is a warning: tend then runs unlocked.
func lockInstance(dir string, log zerolog.Logger) (*instanceLock, error) {
	real := realDir(dir)
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		log.Warn().Err(err).Str("instance_dir", real).Msg("instance.dir does not exist: running without the instance lock")
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("instance lock: open instance.dir %s: %w", real, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := lockHolder(fd)
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("instance %s is already run by %s: its directory is locked", dir, holder)
		}
		return nil, fmt.Errorf("instance lock: flock %s: %w", real, err)
	}
	return &instanceLock{fd}, nil
}

// lockHolder names the process that holds the flock on the file fd is open on, from
// /proc/locks ("another tend (pid N)"), or "another tend" when it does not show.
func lockHolder(fd int) string {
	const who = "another tend"
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return who
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return who
	}
	defer f.Close()
	// "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF". Matched by inode alone:
	// st_dev is not the device /proc/locks shows on every file system, and a
	// match on another device only misnames the holder. A holder in another PID
	// namespace shows as pid 0 or not at all.
	inode := ":" + strconv.FormatUint(st.Ino, 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || !strings.HasSuffix(fields[5], inode) {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid > 0 {
			return who + " (pid " + strconv.Itoa(pid) + ")"
		}
	}
	return who
}

// release unlocks the instance.
func (l *instanceLock) release() {
	if l != nil {
		unix.Close(l.fd)
	}
}
