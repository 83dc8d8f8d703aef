package api

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
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
// The rest of the limit is the reserve of supervision. At a cap, when a new client
// comes, a connection that waits for its client is closed to make room: an idle
// keep-alive one (its client reconnects), else the one that has waited longest (at
// least reclaimAfter) with no request sent yet, or a body it announced not sent. Only connections whose request is being served count
// for good; when all are, the listener stops accepting and further clients wait in
// the kernel's backlog, costing tend nothing, until a connection ends. So clients
// that send nothing useful cannot hold the API: a probe of /v1/live always gets in.
//
// GET /v1/logs (long answers, followers that stay) is served to at most half of a
// unix socket's connections, and to maxTCPLogReaders over all TCP listeners: the
// rest is for status, /v1/ready and /v1/live, so a health check always gets through.
const (
	maxTCPConns            = 512
	maxTCPConnsPerListener = 256
	unixConnsPerListener   = 32
	maxTCPLogReaders       = 64
	unixLogReaders         = unixConnsPerListener / 2
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
	tcp            *connPool     // shared by the TCP listeners
	tcpLogReaders  chan struct{} // GET /v1/logs calls served over TCP, shared likewise
}

func newConnBudget(fdLimit uint64) *connBudget {
	total := int(min(maxTCPConns, max(fdLimit/4, 1)))
	return &connBudget{tcpPerListener: min(maxTCPConnsPerListener, total), tcp: newConnPool(total),
		tcpLogReaders: make(chan struct{}, min(maxTCPLogReaders, max(total/2, 1)))}
}

// limit caps the connections ln holds at once. The server of ln must take its
// connections from connContext, wrap its handler in serving and report its
// connections' states to trackIdle (its ConnState).
func (b *connBudget) limit(ln net.Listener, addr string, isUnix bool, log zerolog.Logger) *limitListener {
	l := &limitListener{Listener: ln, done: make(chan struct{}), log: log.With().Str("listen", addr).Logger()}
	if isUnix {
		l.pools = []*connPool{newConnPool(unixConnsPerListener)}
		l.logReaders = make(chan struct{}, unixLogReaders)
	} else {
		l.pools = []*connPool{newConnPool(b.tcpPerListener), b.tcp}
		l.logReaders = b.tcpLogReaders
	}
	return l
}

// connPool is a cap on connections: one token per connection, and the connections
// that wait for their client (no request being served), which may be closed to
// make room.
type connPool struct {
	tokens        chan struct{}
	becameWaiting chan struct{} // a connection began to wait (coalesced)
	mu            sync.Mutex
	waiting       map[*limitConn]struct{}
}

func newConnPool(size int) *connPool {
	return &connPool{tokens: make(chan struct{}, size), becameWaiting: make(chan struct{}, 1), waiting: map[*limitConn]struct{}{}}
}

// reclaimAfter is how long a client that is not an idle keep-alive one may wait
// before its connection is closed to make room: a client that has just connected has
// its request read first.
const reclaimAfter = time.Second

// reclaim closes a connection that waits for its client, returning its token: the
// idle keep-alive one that has waited longest, else the quiet one that has (once it
// has waited reclaimAfter; until then wait says how long). idle tells which.
func (p *connPool) reclaim(now time.Time) (closed, idle bool, wait time.Duration) {
	p.mu.Lock()
	var victim *limitConn
	for c := range p.waiting {
		if victim == nil || c.idle.Load() && !victim.idle.Load() ||
			c.idle.Load() == victim.idle.Load() && c.since.Load() < victim.since.Load() {
			victim = c
		}
	}
	if victim != nil {
		idle = victim.idle.Load()
		if wait = time.Unix(0, victim.since.Load()).Add(reclaimAfter).Sub(now); !idle && wait > 0 {
			victim = nil
		}
	}
	delete(p.waiting, victim) // whatever Close does, never picked twice
	p.mu.Unlock()
	if victim == nil {
		return false, false, wait
	}
	victim.Close()
	return true, idle, 0
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
	pools      []*connPool
	logReaders chan struct{} // a token per GET /v1/logs call being served
	done       chan struct{} // closed by Close: a waiting Accept gives up
	closeOnce  sync.Once
	log        zerolog.Logger
	warned     time.Time // when the cap was last logged; Accept's alone
}

// It accepts before it takes the tokens: a connection is closed to make room only
// for a client that is there. While every connection is being served it holds that
// one client's connection, the others wait in the backlog.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for i, p := range l.pools {
		if !l.acquire(p) {
			for _, held := range l.pools[:i] {
				<-held.tokens
			}
			c.Close()
			return nil, net.ErrClosed
		}
	}
	lc := &limitConn{Conn: c, pools: l.pools, logReaders: l.logReaders}
	lc.setWaiting(true) // for its first request
	return lc, nil
}

// acquire takes a token of p: at once, or by closing a connection that waits for its
// client (reclaim), or once a connection ends or begins to wait. It is false when the
// listener was closed meanwhile.
func (l *limitListener) acquire(p *connPool) bool {
	var warn <-chan time.Time
	for {
		select {
		case p.tokens <- struct{}{}:
			return true
		default:
		}
		closed, idle, wait := p.reclaim(time.Now())
		if closed {
			if !idle {
				l.warnFull(p, "closed the connection that waited longest for its client to make room")
			}
			continue
		}
		var reclaimable <-chan time.Time
		if wait > 0 {
			reclaimable = time.After(wait)
		}
		if warn == nil && reclaimable == nil {
			// Not at once: a connection that just answered becomes idle a moment later.
			// Not while a quiet client is about to make room either: that is logged then.
			t := time.NewTimer(capWarnAfter)
			defer t.Stop()
			warn = t.C
		}
		select {
		case p.tokens <- struct{}{}:
			return true
		case <-p.becameWaiting:
		case <-reclaimable:
		case <-warn:
			l.warnFull(p, "new clients wait until a connection closes")
		case <-l.done:
			return false
		}
	}
}

// warnFull logs that a cap is reached and what was done about it.
func (l *limitListener) warnFull(p *connPool, what string) {
	now := time.Now()
	if !l.warned.IsZero() && now.Sub(l.warned) < capWarnEvery {
		return
	}
	l.warned = now
	which := "this listener's"
	if p != l.pools[0] {
		which = "the TCP listeners' shared"
	}
	l.log.Warn().Int("max_connections", cap(p.tokens)).Msgf("API connection cap reached (%s); %s", which, what)
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// trackIdle is the ConnState of a server on a limitListener: it tells idle keep-alive
// connections, whose closing to make room is routine, from clients that went quiet.
func trackIdle(c net.Conn, state http.ConnState) {
	if lc, ok := c.(*limitConn); ok {
		lc.idle.Store(state == http.StateIdle)
	}
}

// connKey is the request context key of the connection a request came on.
type connKey struct{}

// connContext is the ConnContext of a server on a limitListener.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// serving wraps the handler of a server on a limitListener: a connection whose
// request is being served is not closed to make room, one whose handler is done is
// (until its next request). The read deadline is lifted while the handler runs: a
// deadline reached in a handler cancels its request (a reload that takes a while, a
// follower). Afterwards a body the client announced and never sent may keep the
// connection bodyTimeout at most.
func serving(h http.Handler, bodyTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*limitConn); ok {
			c.setWaiting(false)
			defer c.setWaiting(true)
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		defer func() { _ = rc.SetReadDeadline(time.Now().Add(bodyTimeout)) }()
		h.ServeHTTP(w, r)
	})
}

// logReaders is the GET /v1/logs cap of the listener a request came on (nil: none).
func logReaders(r *http.Request) chan struct{} {
	if c, ok := r.Context().Value(connKey{}).(*limitConn); ok {
		return c.logReaders
	}
	return nil
}

// limitConn returns its tokens when it is closed (once, however often Close is called).
type limitConn struct {
	net.Conn
	pools      []*connPool
	logReaders chan struct{}
	since      atomic.Int64 // when it began to wait for its client (Unix ns)
	idle       atomic.Bool  // between two requests of a keep-alive client
	closed     atomic.Bool  // set before Close leaves its pools: a handler ending later does not put it back
	once       sync.Once
}

// setWaiting puts c in its pools' sets of connections that wait for their client
// (since now), or takes it out while a request is served.
func (c *limitConn) setWaiting(waiting bool) {
	if waiting {
		c.since.Store(time.Now().UnixNano())
	}
	for _, p := range c.pools {
		p.mu.Lock()
		if waiting && !c.closed.Load() {
			p.waiting[c] = struct{}{}
		} else {
			delete(p.waiting, c)
		}
		p.mu.Unlock()
		if waiting {
			select {
			case p.becameWaiting <- struct{}{}:
			default:
			}
		}
	}
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.closed.Store(true)
		c.setWaiting(false)
		for _, p := range c.pools {
			<-p.tokens
		}
	})
	return err
}
