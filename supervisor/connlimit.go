package supervisor

import (
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Every API connection is a file descriptor of tend, and so is every probe
// connection, output pipe, log file and /dev/null a restart opens. API clients are not
// tend's to control (20,000 idle TCP connections once used up every descriptor, and a
// TCP probe then failed with "too many open files"), so they get a bounded share:
//
//   - TCP listeners together hold at most maxTCPConns connections and a quarter of
//     the descriptor limit, each listener at most maxTCPConnsPerListener of them;
//   - each unix socket holds at most unixConnsPerListener of its own, outside that
//     share, so `tend status` and /v1/live there answer during a TCP flood.
//
// The rest of the limit is the reserve of supervision. A listener at its cap stops
// accepting: further clients wait in the kernel's backlog, costing tend nothing.
const (
	maxTCPConns            = 512
	maxTCPConnsPerListener = 256
	unixConnsPerListener   = 32
)

// fdLimit is tend's soft RLIMIT_NOFILE. Go raised it to the hard limit at start-up
// (and gives children the original soft limit back when they start).
func fdLimit() uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 1024 // the usual default soft limit
	}
	return lim.Cur
}

// connBudget hands out the API connection caps of one tend.
type connBudget struct {
	tcpPerListener int
	tcp            chan struct{} // shared by the TCP listeners: one token per connection
}

func newConnBudget(fdLimit uint64) *connBudget {
	total := int(min(maxTCPConns, max(fdLimit/4, 1)))
	return &connBudget{tcpPerListener: min(maxTCPConnsPerListener, total), tcp: make(chan struct{}, total)}
}

// limit caps the connections ln accepts at once.
func (b *connBudget) limit(ln net.Listener, addr string, isUnix bool, log zerolog.Logger) net.Listener {
	l := &limitListener{Listener: ln, shared: b.tcp, done: make(chan struct{}),
		log: log.With().Str("listen", addr).Logger()}
	if isUnix {
		l.own, l.shared = make(chan struct{}, unixConnsPerListener), nil
	} else {
		l.own = make(chan struct{}, b.tcpPerListener)
	}
	return l
}

// capWarnEvery is how often a listener that keeps hitting its cap says so.
const capWarnEvery = time.Minute

// limitListener accepts a connection only while it holds a token of its own and one of
// the shared budget (nil for a unix socket); closing the connection returns them.
type limitListener struct {
	net.Listener
	own, shared chan struct{}
	done        chan struct{} // closed by Close: a waiting Accept gives up
	closeOnce   sync.Once
	log         zerolog.Logger
	warned      time.Time // when the cap was last logged; Accept's alone
}

func (l *limitListener) Accept() (net.Conn, error) {
	if !l.acquire() {
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	return &limitConn{Conn: c, release: l.release}, nil
}

// acquire takes a token of l.own and of l.shared, waiting while either is used up.
func (l *limitListener) acquire() bool {
	for _, sem := range []chan struct{}{l.own, l.shared} {
		if sem == nil {
			continue
		}
		select {
		case sem <- struct{}{}:
			continue
		default:
		}
		l.warnFull(sem)
		select {
		case sem <- struct{}{}:
		case <-l.done:
			if sem == l.shared {
				<-l.own
			}
			return false
		}
	}
	return true
}

func (l *limitListener) release() {
	if l.shared != nil {
		<-l.shared
	}
	<-l.own
}

// warnFull logs that the cap is reached: once, and again at most every capWarnEvery
// while clients keep it reached.
func (l *limitListener) warnFull(sem chan struct{}) {
	now := time.Now()
	if !l.warned.IsZero() && now.Sub(l.warned) < capWarnEvery {
		return
	}
	l.warned = now
	what := "this listener's"
	if sem == l.shared {
		what = "the TCP listeners' shared"
	}
	l.log.Warn().Int("max_connections", cap(sem)).
		Msgf("API connection cap reached (%s); new clients wait until a connection closes", what)
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn returns its listener's tokens when it is closed (once, however often
// Close is called).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
