package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/spec"
)

// The spec file's directory is watched (and the one its symlinks lead to), not the file: an editor writes a new file
// and renames it over the old one, and a Kubernetes ConfigMap volume swaps its
// "..data" symlink to a new directory; neither changes the file a watch on it
// would hold. IN_MODIFY is left out: a log file written in the same directory
// would wake the watcher at every line, and a writer closes the file when done.
const watchMask = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// A change comes as a burst of events (the kubelet's swap is several steps, an
// editor's save too): tend waits until the directory has been quiet for
// watchQuiet, and no longer than watchSettleMax after the first event, so that a
// change is applied well within a second.
const (
	watchQuiet     = 100 * time.Millisecond
	watchSettleMax = 500 * time.Millisecond
)

// watchSpec starts reloading (as SIGHUP does) whenever the content of the spec file
// at path changes (`tend run --watch`). A touch or a rewrite with the same bytes
// reloads nothing: the content's hash is compared with the last one seen, starting
// from the revision tend runs. The watch ends with ctx; the returned function
// closes it.
func (sv *Supervisor) watchSpec(ctx context.Context, path string) (func(), error) {
	f, err := openWatch(path)
	if err != nil {
		return nil, err
	}
	events := readEvents(f)
	sv.mu.Lock()
	last := sv.spec.FileDigest()
	sv.mu.Unlock()
	// Through the *os.File once it owns the descriptor: after Close its number may
	// be another file's.
	rewatch := func() {
		if rc, err := f.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { watchTarget(int(fd), path) })
		}
	}
	go sv.watchLoop(ctx, path, last, events, rewatch)
	sv.log.Info().Str("dir", filepath.Dir(path)).Msg("watching the spec file for changes")
	return func() { f.Close() }, nil
}

// openWatch opens an inotify descriptor watching the spec file's directory and the
// one its symlinks lead to. A non-blocking descriptor goes to Go's poller: Read
// parks the goroutine instead of a thread, and Close wakes it.
func openWatch(path string) (*os.File, error) {
	dir := filepath.Dir(path)
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("--watch: inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, watchMask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("--watch: watch %s: %w", dir, err)
	}
	watchTarget(fd, path)
	return os.NewFile(uintptr(fd), "inotify"), nil
}

// readEvents reads f until it is closed and signals on the returned channel that
// events arrived (several coalesce into one), closing it at the end.
func readEvents(f *os.File) <-chan struct{} {
	events := make(chan struct{}, 1)
	go func() {
		defer close(events)
		buf := make([]byte, 64<<10)
		for {
			// Which events arrived does not matter: the content decides.
			if _, err := f.Read(buf); err != nil {
				return
			}
			select {
			case events <- struct{}{}:
			default:
			}
		}
	}()
	return events
}

// watchTarget also watches the directory the spec's symlinks lead to, when that is
// another one: a spec that is a symlink to a file edited in its own directory (or
// replaced there by an editor's rename) changes without an event in the spec's
// directory. Adding a directory watched already changes nothing; one that went away
// drops its watch by itself.
func watchTarget(fd int, path string) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || filepath.Dir(real) == filepath.Dir(path) {
		return
	}
	_, _ = unix.InotifyAddWatch(fd, filepath.Dir(real), watchMask)
}

// watchLoop waits for each burst of events to settle, then asks for a reload when
// the file's content differs from the last seen. An unreadable file counts as a
// change too, so that the reload shows why in reload_error.
func (sv *Supervisor) watchLoop(ctx context.Context, path, last string, events <-chan struct{}, rewatch func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
		}
		if !settle(ctx, events) {
			return
		}
		rewatch() // the symlink may lead elsewhere now
		seen, err := spec.FileRevision(path)
		if err != nil {
			seen = "unreadable: " + err.Error()
		}
		if seen == last {
			sv.log.Debug().Str("spec", path).Msg("the spec file's directory changed, its content did not")
			continue
		}
		last = seen
		sv.log.Info().Str("spec", path).Msg("the spec file changed; reloading")
		select {
		case sv.requests <- request{kind: reqReload, reply: func(error) {}}:
		case <-ctx.Done():
			return
		}
	}
}

// settle waits until no event came for watchQuiet, or watchSettleMax passed; it
// reports false when ctx ended or the watch closed.
func settle(ctx context.Context, events <-chan struct{}) bool {
	deadline := time.NewTimer(watchSettleMax)
	defer deadline.Stop()
	quiet := time.NewTimer(watchQuiet)
	defer quiet.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return false
			}
			quiet.Reset(watchQuiet)
		case <-quiet.C:
			return true
		case <-deadline.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
}
