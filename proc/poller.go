package proc

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The output poller copies every output pipe of every process to its writer on one
// goroutine, which waits for all the pipes at once: they are in an epoll instance of
// its own, and the goroutine waits for that instance on Go's netpoller (an epoll
// descriptor is readable when it has events). A goroutine per pipe parked on the
// netpoller costs a stack each: two per container, 0.8 MiB of tend's RSS with a
// hundred idle containers. A blocking epoll_wait (as the poller did first) holds an
// OS thread for good, and the runtime's P with it until sysmon takes it back: the
// goroutines the poller had just woken (the loops whose process's output ended)
// waited on that P's run queue meanwhile, up to 10 ms seen under strace. Parked on
// the netpoller, it holds neither: 100 idle containers, 7 threads instead of 9.
//
// Writing on the poller goroutine means one writer that blocks holds up the output
// of every process, and once their pipes are full, the processes themselves. The
// writers are made not to block: output.LineWriter keeps its lines in memory, its
// ring and its log_line matchers, and writes to the console through an
// output.Queue, which drops the oldest lines rather than wait for a stream nobody
// reads; probes keep a tail in memory. Two can wait: a log file's write (local
// disk; a hung or very slow disk stalls all output, where it stalled only that
// container's before), and a log_line match handing its readiness signal to the
// container's loop (a buffer of 4 signals, at most two per run, which the loop
// takes between its events).

// pollReadSize is the most read from one pipe per round of epoll_wait: one
// flooding process gets a read in turn with the others and cannot starve them, and
// a flood still moves a full pipe's worth (64 KiB by default) per read.
const pollReadSize = 64 << 10

// outPipe is the read end of one output pipe and the writer it feeds.
type outPipe struct {
	fd   int // -1 once finished
	w    io.Writer
	fl   flusher // w, if it holds back an unfinished piece of output (nil if not)
	werr error   // the writer's first error: the rest is read and dropped
	out  *procOutput
}

// newOutPipe is the read end fd feeding w. Whether w is a flusher is asked here, at
// the start: the first such question of tend's life cost 0.1 ms of page faults, and at
// the end of the pipe it was asked in the middle of a stop.
func newOutPipe(fd int, w io.Writer) *outPipe {
	p := &outPipe{fd: fd, w: w}
	p.fl, _ = w.(flusher)
	return p
}

// procOutput is the output pipes of one process. Once handed to the poller, only the
// poller goroutine touches it.
type procOutput struct {
	pipes []*outPipe
	open  int           // pipes not finished
	done  chan struct{} // the Process's outputDone, closed when open is 0
}

// pollRequest asks the poller to watch out's pipes, or, with close, to stop.
type pollRequest struct {
	out   *procOutput
	close bool
}

// poller owns an epoll instance with every output pipe's read end in it (level
// triggered) and an eventfd that wakes it for requests. Only its goroutine reads,
// closes and unregisters the pipes: a descriptor closed by another goroutine could
// be reused by a new pipe while the poller still reads by its number.
type poller struct {
	epfd int
	ep   syscall.RawConn // epfd on Go's netpoller; its *os.File stays in file
	file *os.File        // never closed: it would close epfd
	wake int             // eventfd: requests are waiting

	mu   sync.Mutex
	reqs []pollRequest // guarded by mu

	pipes map[int32]*outPipe // registered read ends by fd; the goroutine's own
	buf   []byte             // pollReadSize, shared by every pipe
}

// outputPoller starts the poller with the first output pipe and returns it.
var outputPoller = sync.OnceValues(newPoller)

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("output poller: epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("output poller: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(wake)
		unix.Close(epfd)
		return nil, fmt.Errorf("output poller: epoll_ctl: %w", err)
	}
	// Non-blocking, so that os.NewFile puts it on the netpoller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(wake)
		unix.Close(epfd)
		return nil, fmt.Errorf("output poller: %w", err)
	}
	file := os.NewFile(uintptr(epfd), "output poller")
	ep, err := file.SyscallConn()
	if err != nil {
		unix.Close(wake)
		file.Close()
		return nil, fmt.Errorf("output poller: %w", err)
	}
	pl := &poller{epfd: epfd, ep: ep, file: file, wake: wake, pipes: map[int32]*outPipe{}, buf: make([]byte, pollReadSize)}
	go pl.run()
	return pl, nil
}

// wait returns the ready events, parked on the netpoller while there are none.
func (pl *poller) wait(events []unix.EpollEvent) []unix.EpollEvent {
	var n int
	err := pl.ep.Read(func(fd uintptr) bool {
		for {
			var err error
			n, err = unix.EpollWait(int(fd), events, 0)
			switch {
			case err == unix.EINTR:
			case err != nil: // EBADF, EFAULT, EINVAL: not with these arguments
				panic(fmt.Sprintf("output poller: epoll_wait: %v", err))
			default:
				return n > 0 // none: park until the instance is readable
			}
		}
	})
	if err != nil { // the file was closed: never
		panic(fmt.Sprintf("output poller: %v", err))
	}
	return events[:n]
}

// request hands r to the poller goroutine. Only the request that finds the list
// empty wakes it: the poller resets the eventfd before it takes the list, so a
// request added after that wakes it again.
func (pl *poller) request(r pollRequest) {
	pl.mu.Lock()
	first := len(pl.reqs) == 0
	pl.reqs = append(pl.reqs, r)
	pl.mu.Unlock()
	if first {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(pl.wake, one[:]) // fails only when the counter is full: awake anyway
	}
}

// run waits for ready pipes and requests for as long as tend runs. Each round reads
// every ready pipe once, then serves the requests: a pipe closed by a request is
// never read later in the same round by a stale event.
func (pl *poller) run() {
	events := make([]unix.EpollEvent, 128)
	for {
		woken := false
		for _, ev := range pl.wait(events) {
			if ev.Fd == int32(pl.wake) {
				woken = true
			} else if p := pl.pipes[ev.Fd]; p != nil {
				if ev.Events&unix.EPOLLIN == 0 {
					// Hung up with nothing left to read (a pipe reports EPOLLIN
					// while it holds data): its end, without a read to say so,
					// one system call less for every pipe at every exit.
					pl.finish(p)
					continue
				}
				pl.read(p)
			}
		}
		if woken {
			pl.serve()
		}
	}
}

// read reads what p has, at most pollReadSize, and passes it to the writer. The end
// of the pipe (every holder closed it) or a read error finishes it.
func (pl *poller) read(p *outPipe) {
	n, err := unix.Read(p.fd, pl.buf)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		// Nothing after all, or not yet: level triggered, it is reported again.
	case err != nil || n == 0:
		pl.finish(p)
	case p.werr == nil:
		_, p.werr = p.w.Write(pl.buf[:n])
	}
}

// serve carries out the waiting requests.
func (pl *poller) serve() {
	var count [8]byte
	unix.Read(pl.wake, count[:]) // reset before taking the list (see request)
	pl.mu.Lock()
	reqs := pl.reqs
	pl.reqs = nil
	pl.mu.Unlock()
	for _, r := range reqs {
		for _, p := range r.out.pipes {
			switch {
			case p.fd < 0: // finished already
			case r.close:
				pl.finish(p)
			default:
				pl.add(p)
			}
		}
	}
}

// add registers p. A pipe that cannot be registered (no memory, or the user's
// max_user_watches reached) is finished at once: its process gets EPIPE on output,
// which is better than a full pipe blocking it for good.
func (pl *poller) add(p *outPipe) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p.fd)}
	if err := unix.EpollCtl(pl.epfd, unix.EPOLL_CTL_ADD, p.fd, &ev); err != nil {
		pl.finish(p)
		return
	}
	pl.pipes[int32(p.fd)] = p
}

// finish unregisters and closes p's read end and flushes its writer; the last pipe
// of a process to finish closes its outputDone. The explicit EPOLL_CTL_DEL matters:
// a fork in progress elsewhere may hold a copy of the descriptor until its exec, and
// epoll drops a registration only when the last copy is closed.
func (pl *poller) finish(p *outPipe) {
	if _, ok := pl.pipes[int32(p.fd)]; ok {
		unix.EpollCtl(pl.epfd, unix.EPOLL_CTL_DEL, p.fd, nil)
		delete(pl.pipes, int32(p.fd))
	}
	unix.Close(p.fd)
	p.fd = -1
	if p.fl != nil && p.werr == nil {
		// proc has nowhere to report it: a writer's errors are its own to report
		// (output.LogFile logs them and shows them in the status).
		_ = p.fl.Flush()
	}
	p.out.open--
	if p.out.open == 0 {
		close(p.out.done)
	}
}

// flusher is a writer that holds an unfinished piece of output until told the output ended.
type flusher interface{ Flush() error }
