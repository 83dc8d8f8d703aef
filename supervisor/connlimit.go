package supervisor

import (
	"net"
	"net/http"
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
// The rest of the limit is the reserve of supervision. At a cap, an idle keep-alive
// connection is closed to make room (its client reconnects); when none is idle, the
// listener stops accepting and further clients wait in the kernel's backlog, costing
// tend nothing, until a connection ends (a client that sends no complete request
// headers is cut off after the header timeout).
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
	tcp            *connPool // shared by the TCP listeners
}

func newConnBudget(fdLimit uint64) *connBudget {
	total := int(min(maxTCPConns, max(fdLimit/4, 1)))
	return &connBudget{tcpPerListener: min(maxTCPConnsPerListener, total), tcp: newConnPool(total)}
}

// limit caps the connections ln holds at once. The server of ln must report its
// connections' states to trackIdle (its ConnState).
func (b *connBudget) limit(ln net.Listener, addr string, isUnix bool, log zerolog.Logger) *limitListener {
	l := &limitListener{Listener: ln, done: make(chan struct{}), log: log.With().Str("listen", addr).Logger()}
	if isUnix {
		l.pools = []*connPool{newConnPool(unixConnsPerListener)}
	} else {
		l.pools = []*connPool{newConnPool(b.tcpPerListener), b.tcp}
	}
	return l
}

// connPool is a cap on connections: one token per connection, and the connections
// that are idle between requests, which may be closed to make room.
type connPool struct {
	tokens     chan struct{}
	becameIdle chan struct{} // a connection became idle (coalesced)
	mu         sync.Mutex
	idle       map[*limitConn]struct{}
}

func newConnPool(size int) *connPool {
	return &connPool{tokens: make(chan struct{}, size), becameIdle: make(chan struct{}, 1), idle: map[*limitConn]struct{}{}}
}

// closeIdle closes one idle connection, if there is one, returning its token.
func (p *connPool) closeIdle() bool {
	p.mu.Lock()
	var victim *limitConn
	for c := range p.idle {
		victim = c
		delete(p.idle, c) // whatever Close does, never picked twice
		break
	}
	p.mu.Unlock()
	if victim == nil {
		return false
	}
	victim.Close()
	return true
}

// A listener logs that it is at its cap when a client has waited capWarnAfter, and
// again at most every capWarnEvery while clients keep it there.
const (
	capWarnAfter = 100 * time.Millisecond
	capWarnEvery = time.Minute
)

// limitListener accepts a connection only with a token of each of its pools (its own
// and, for TCP, the shared one); closing the connection returns them.
type limitListener struct {
	net.Listener
	pools     []*connPool
	done      chan struct{} // closed by Close: a waiting Accept gives up
	closeOnce sync.Once
	log       zerolog.Logger
	warned    time.Time // when the cap was last logged; Accept's alone
}

func (l *limitListener) Accept() (net.Conn, error) {
	for i, p := range l.pools {
		if !l.acquire(p) {
			for _, held := range l.pools[:i] {
				<-held.tokens
			}
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		for _, p := range l.pools {
			<-p.tokens
		}
		return nil, err
	}
	return &limitConn{Conn: c, pools: l.pools}, nil
}

// acquire takes a token of p: at once, or by closing an idle connection, or once a
// connection ends or becomes idle. It is false when the listener was closed meanwhile.
func (l *limitListener) acquire(p *connPool) bool {
	var warn <-chan time.Time
	for {
		select {
		case p.tokens <- struct{}{}:
			return true
		default:
		}
		if p.closeIdle() {
			continue
		}
		if warn == nil {
			// Not at once: a connection that just answered becomes idle a moment later.
			t := time.NewTimer(capWarnAfter)
			defer t.Stop()
			warn = t.C
		}
		select {
		case p.tokens <- struct{}{}:
			return true
		case <-p.becameIdle:
		case <-warn:
			l.warnFull(p)
		case <-l.done:
			return false
		}
	}
}

// warnFull logs that a cap is reached with no idle connection to close.
func (l *limitListener) warnFull(p *connPool) {
	now := time.Now()
	if !l.warned.IsZero() && now.Sub(l.warned) < capWarnEvery {
		return
	}
	l.warned = now
	what := "this listener's"
	if p != l.pools[0] {
		what = "the TCP listeners' shared"
	}
	l.log.Warn().Int("max_connections", cap(p.tokens)).
		Msgf("API connection cap reached (%s); new clients wait until a connection closes", what)
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// trackIdle is the ConnState of a server on a limitListener: it keeps the set of idle
// connections that may be closed to make room.
func trackIdle(c net.Conn, state http.ConnState) {
	if lc, ok := c.(*limitConn); ok {
		lc.setIdle(state == http.StateIdle)
	}
}

// limitConn returns its tokens when it is closed (once, however often Close is called).
type limitConn struct {
	net.Conn
	pools []*connPool
	once  sync.Once
}

func (c *limitConn) setIdle(idle bool) {
	for _, p := range c.pools {
		p.mu.Lock()
		if idle {
			p.idle[c] = struct{}{}
		} else {
			delete(p.idle, c)
		}
		p.mu.Unlock()
		if idle {
			select {
			case p.becameIdle <- struct{}{}:
			default:
			}
		}
	}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.setIdle(false)
		for _, p := range c.pools {
			<-p.tokens
		}
	})
	return err
}
