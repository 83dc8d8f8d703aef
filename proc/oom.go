package proc

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// oomSelf is the file of tend's own OOM score adjustment.
const oomSelf = "/proc/self/oom_score_adj"

// oomProtected is the adjustment that keeps the kernel's OOM killer off a process (a
// variable for the test, which may not lower its own that far).
var oomProtected = "-1000"

// oomAdj keeps the kernel's OOM killer off tend while its containers stay as killable
// as tend was when it started (docs/reference.md "What a container cannot make tend
// do"). The kernel copies oom_score_adj at fork, and syscall.ForkExec has no step
// between fork and exec, so tend puts its own back to its starting value around
// each fork (while any Start is forking) and to -1000 again once the last child has
// exec'd: no child runs an instruction with -1000, and tend has it but while it forks.
// Two writes of a kept descriptor per start, about 2 µs.
var oomAdj struct {
	mu      sync.Mutex
	fd      int    // oomSelf open for writing; -1: tend's adjustment is left as it was
	started string // the adjustment tend was started with
	forking int    // Starts between forkBegin and forkEnd
}

func init() { oomAdj.fd = -1 }

// ProtectFromOOM sets tend's own oom_score_adj to -1000 and keeps its starting value
// for the processes it starts. It fails where tend may not lower it (not root, no
// CAP_SYS_RESOURCE): tend then keeps its own, as its children do. Once, at start.
func ProtectFromOOM() error {
	data, err := os.ReadFile(oomSelf)
	if err != nil {
		return err
	}
	started := strings.TrimSpace(string(data))
	if started == oomProtected {
		return nil // the children get -1000 too: tend was started with it
	}
	fd, err := unix.Open(oomSelf, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", oomSelf, err)
	}
	if _, err := unix.Write(fd, []byte(oomProtected)); err != nil {
		unix.Close(fd)
		return fmt.Errorf("set %s to %s: %w", oomSelf, oomProtected, err)
	}
	oomAdj.mu.Lock()
	oomAdj.fd, oomAdj.started = fd, started
	oomAdj.mu.Unlock()
	return nil
}

// forkBegin gives tend its starting oom_score_adj for a fork, forkEnd takes -1000
// back once no fork is in progress.
func forkBegin() {
	oomAdj.mu.Lock()
	if oomAdj.fd >= 0 && oomAdj.forking == 0 {
		unix.Write(oomAdj.fd, []byte(oomAdj.started))
	}
	oomAdj.forking++
	oomAdj.mu.Unlock()
}

func forkEnd() {
	oomAdj.mu.Lock()
	oomAdj.forking--
	if oomAdj.fd >= 0 && oomAdj.forking == 0 {
		unix.Write(oomAdj.fd, []byte(oomProtected))
	}
	oomAdj.mu.Unlock()
}
