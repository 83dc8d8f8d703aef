package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
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
// least reclaimAfter) with no request sent yet, or a body it announced not sent. When
// none can go, the new client is shed at once: accepted, answered 503 and closed.
// The listener never stops accepting, so a short request never waits in the kernel's
// backlog behind clients over the cap (300 log readers that never read once held
// /v1/live there past 3 s). So clients that send nothing useful cannot hold the API:
// a probe of /v1/live gets in, or is told 503 at once.
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
	l := &limitListener{Listener: ln, shedding: make(chan struct{}, maxShedding), log: log.With().Str("listen", addr).Logger()}
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
	tokens  chan struct{}
	mu      sync.Mutex
	waiting map[*limitConn]struct{}
}

func newConnPool(size int) *connPool {
	return &connPool{tokens: make(chan struct{}, size), waiting: map[*limitConn]struct{}{}}
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
			p.mu.Unlock()
			return false, false, wait
		}
	}
	delete(p.waiting, victim) // whatever Close does, never picked twice
	p.mu.Unlock()
	if victim == nil {
		return false, false, 0
	}
	victim.Close()
	return true, idle, 0
}

// A listener logs that it is at its cap at most every capWarnEvery while clients
// keep it there.
const capWarnEvery = time.Minute

// limitListener accepts a connection only with a token of each of its pools (its own
// and, for TCP, the shared one); closing the connection returns them. A client it
// has no token for is shed.
type limitListener struct {
	net.Listener
	pools      []*connPool
	logReaders chan struct{} // a token per GET /v1/logs call being served
	shedding   chan struct{} // a token per shed connection still being closed
	log        zerolog.Logger
	warned     time.Time // when the cap was last logged; Accept's alone
}

// It accepts before it takes the tokens: a connection is closed to make room only
// for a client that is there, and a client over the cap is answered at once.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit takes a token of each pool for c, or sheds c (nil).
func (l *limitListener) admit(c net.Conn) *limitConn {
	for i, p := range l.pools {
		if !l.acquire(p) {
			for _, held := range l.pools[:i] {
				<-held.tokens
			}
			l.warnFull(p, "clients over it are answered 503")
			l.shed(c)
			return nil
		}
	}
	lc := &limitConn{Conn: c, pools: l.pools, logReaders: l.logReaders}
	lc.setWaiting(true) // for its first request
	return lc
}

// acquire takes a token of p: at once, or by closing a connection that waits for its
// client (reclaim) — when the one that waited longest is a quiet client that has not
// waited reclaimAfter yet, Accept waits for that (at most reclaimAfter, a token freed
// meanwhile ends it), so that clients that announce a body and never send it cannot
// keep a probe out. False when every connection is being served: the client is shed
// at once rather than left in the backlog behind others.
func (l *limitListener) acquire(p *connPool) bool {
	for {
		select {
		case p.tokens <- struct{}{}:
			return true
		default:
		}
		reclaiming()
		closed, idle, wait := p.reclaim(time.Now())
		switch {
		case closed && !idle:
			l.warnFull(p, "closed the connection that waited longest for its client to make room")
		case closed:
		case wait <= 0:
			// None waits for its client: each holder is being served, or has closed
			// since the pool was found full (a closing connection gives its tokens
			// back before it leaves the sets), which makes room after all. Shedding
			// then was a 503 with the pool free, seen under load.
			select {
			case p.tokens <- struct{}{}:
				return true
			default:
				return false
			}
		default:
			t := time.NewTimer(wait)
			select {
			case p.tokens <- struct{}{}:
				t.Stop()
				return true
			case <-t.C:
			}
		}
	}
}

// What a client over the cap gets, written without waiting for its request.
const (
	shedAnswer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: 64\r\n\r\n" +
		`{"error":"too many API connections on this listener; try again"}`
	shedTimeout = 500 * time.Millisecond
	maxShedding = 64
)

// shed answers c 503 and closes it, by at most maxShedding goroutines at once
// (past that, c is closed at once). It reads the request first, for shedTimeout at
// most: an answer before the request puzzles an HTTP client ("unsolicited
// response"), and a TCP connection closed with unread data is reset, which could
// lose the answer.
func (l *limitListener) shed(c net.Conn) {
	select {
	case l.shedding <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.shedding }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(shedTimeout))
		r := bufio.NewReaderSize(io.LimitReader(c, 64<<10), 4096)
		for {
			line, err := r.ReadSlice('\n')
			if err != nil && err != bufio.ErrBufferFull {
				break
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break // the end of the request's head
			}
		}
		if _, err := io.WriteString(c, shedAnswer); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, r) // its body, if any, until the deadline
	}()
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
	}
}

// Close gives the tokens back before it takes c out of its pools' sets: a connection
// out of the sets still holding its tokens is one being served, so a full pool with
// none waiting is really full (acquire). reclaim may pick a c closing meanwhile: its
// Close waits for this one to finish.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.closed.Store(true)
		for _, p := range c.pools {
			<-p.tokens
		}
		c.setWaiting(false)
	})
	return err
}

// reclaiming is called when a pool is found full, before a connection to close is
// looked for (a test closes the holders there).
var reclaiming = func() {}
