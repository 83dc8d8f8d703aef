package probes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tend-sh/tend/proc"
	"github.com/tend-sh/tend/spec"
)

// MaxBody is how much of an HTTP answer is read to compare with expected_answer. A
// longer body cannot equal an expected answer short enough to write in a spec.
const MaxBody = 64 << 10

// maxAnswer bounds everything an HTTP check reads from one connection: the status
// line and headers plus MaxBody of body. A server that sends more fails the check
// instead of growing tend's memory.
const maxAnswer = 64<<10 + MaxBody

// dialer opens the connections of HTTP and TCP checks. TCP keep-alive is off: a
// probe's connection is used at least every keepIdle and dropped after maxConnAge, so
// keep-alive would never send a packet, and turning it on costs four system calls
// per connection.
var dialer = net.Dialer{KeepAlive: -1}

// answerReader reads one HTTP answer: a buffer over the connection, bounded by
// maxAnswer. Pooled whole (readers), so that a check allocates neither.
type answerReader struct {
	br    *bufio.Reader
	limit io.LimitedReader
}

// readers are the answer readers of HTTP checks, reused across checks.
var readers = sync.Pool{New: func() any { return &answerReader{br: bufio.NewReaderSize(nil, 4096)} }}

// tlsSessions lets a new TLS connection of a check resume an earlier session with
// the same server (no certificate sent, no signature made): probes reconnect every
// maxConnAge, and stop and destroy handlers connect for every try.
var tlsSessions = tls.NewLRUClientSessionCache(256)

// sessionCache is tlsSessions for the connections to one address. Go keys a session
// by the server name alone, but the servers on the ports of one host (every
// container's "localhost") do not accept each other's tickets, and would evict each
// other's sessions.
type sessionCache struct{ hostPort string }

func (c sessionCache) Get(key string) (*tls.ClientSessionState, bool) {
	return tlsSessions.Get(c.hostPort + " " + key)
}

func (c sessionCache) Put(key string, cs *tls.ClientSessionState) {
	tlsSessions.Put(c.hostPort+" "+key, cs)
}

// Check runs the handler of an action once (a stop, destroy or notify handler, a
// verify), bounded by timeout (0: none): http_get, tcp_socket or exec. unix_signal is
// not a check and is handled by the container. An HTTP check made through Check uses
// a connection of its own and closes it, and passes on 2xx only.
func Check(ctx context.Context, h spec.Handler, t Target, timeout time.Duration) Result {
	return check(ctx, h, t, timeout, nil, actionCheck)
}

// checkKind tells which HTTP answers pass. A probe asks whether the server is up:
// any answer in 200–399, a redirect included. An action asks the server to do
// something, which a redirect (never followed) did not: 2xx only.
type checkKind int

const (
	probeCheck checkKind = iota
	actionCheck
)

// check runs h once; keep is the connection a probe keeps between checks (nil: none).
func check(ctx context.Context, h spec.Handler, t Target, timeout time.Duration, keep *session, kind checkKind) Result {
	start := time.Now()
	var detail, said string
	switch {
	case h.HTTPGet != nil:
		detail, said = checkHTTP(ctx, h.HTTPGet, timeout, keep, kind)
	case h.TCPSocket != nil:
		detail = checkTCP(ctx, *h.TCPSocket, timeout)
	case h.Exec != nil:
		detail = checkExec(ctx, *h.Exec, t, timeout)
	default:
		detail = "no http_get, tcp_socket or exec handler"
	}
	return Result{OK: detail == "", Detail: detail, Said: said, Duration: time.Since(start)}
}

// withTimeout bounds ctx by timeout; 0 means no bound.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// maxConnAge bounds how long a probe keeps using one connection. A server whose
// accept loop hangs while its open connections are still served fails its probe
// within this time (plus the thresholds), as it would with a new connection per
// check, while reconnecting costs a tenth of a probe's CPU at a 1 s period. A
// variable for tests.
var maxConnAge = 10 * time.Second

// keepIdle is the longest wait for the next check over which a probe keeps its
// connection: under the 5 s idle timeout of Node.js and Apache, so a connection is
// not held only to find it closed by the server. A variable for tests.
var keepIdle = 4 * time.Second

// session is the HTTP connection a probe keeps between its checks; it belongs to
// the check in progress (a probe's checks never overlap, and share the probe's
// context). What a check needs of its connection besides reading and writing (the
// watch on the probe's context, the raw socket and the function that peeks at it)
// is made once per connection: made per check it was all of a check's garbage, and
// a steady 200 checks a second would keep the collector running for nothing else.
type session struct {
	conn   net.Conn
	opened time.Time
	req    httpRequest // the probe's request, built at its first check

	unwatch func() bool     // ends the watch that interrupts conn when the probe's context is done
	raw     syscall.RawConn // conn's socket, to peek at (nil: cannot)
	peek    func(fd uintptr) bool
	idle    bool    // what peek saw: nothing to read, and the stream not ended
	peeked  [1]byte // where peek's byte goes
}

// open makes conn the session's connection, its I/O interrupted when ctx is done.
func (s *session) open(ctx context.Context, conn net.Conn) {
	s.conn, s.opened = conn, time.Now()
	s.unwatch = context.AfterFunc(ctx, func() { interrupt(conn) })
	s.raw = rawConn(conn)
	if s.peek == nil {
		s.peek = func(fd uintptr) bool {
			_, _, err := syscall.Recvfrom(int(fd), s.peeked[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			s.idle = err == syscall.EAGAIN
			return true // done either way: never wait here
		}
	}
}

// close closes the kept connection, if any.
func (s *session) close() {
	if s != nil && s.conn != nil {
		s.unwatch()
		_ = s.conn.Close()
		s.conn, s.raw = nil, nil
	}
}

// idleAndOpen reports whether the kept connection has nothing to read: neither data
// nor the end of the stream. It peeks without blocking (one system call).
func (s *session) idleAndOpen() bool {
	if s.raw == nil {
		return true
	}
	s.idle = false
	return s.raw.Read(s.peek) == nil && s.idle
}

// rawConn is conn's socket, for peeking at it; nil when it has none. For TLS it is
// the socket under it: records waiting there are an alert (close_notify) or data
// nobody asked for, either way the connection is not fit for the next request.
func rawConn(conn net.Conn) syscall.RawConn {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// interrupt makes conn's I/O in progress, and any after it, fail at once.
func interrupt(conn net.Conn) { _ = conn.SetDeadline(time.Unix(1, 0)) }

// outcome says what an HTTP exchange leaves of its connection.
type outcome int

const (
	closeConn outcome = iota // used up or in doubt: close it
	reuseConn                // the answer was read whole: keep it for the next check
	staleConn                // a kept connection the server had closed: try a new one
)

// checkHTTP returns "" on success, else why it failed. It speaks HTTP/1.1 by hand,
// over TLS for scheme https (no net/http Client: no transport goroutines, no pool),
// and parses the answer with readAnswer. Redirects are never followed: a probe checks
// this server (and passes on 200–399), an action asks it (2xx). With keep (a probe's checks) the connection is kept for the
// next check, like pebble's and process-compose's probes and unlike kubelet's: a
// third of the CPU of a new connection per check. A kept connection the server has
// closed meanwhile is replaced at once, so it never fails a check; one is never
// kept longer than maxConnAge.
//
// The probes of a grid step wait for their answers at once, each on its goroutine's
// stack: the path to that wait (checkHTTP, exchange.run) is kept shallow — the
// handler by pointer, the dial and the report in functions of their own — so that
// those stacks stay at 4 KiB (1.8 KiB used at the wait; it was 3.0 on 8 KiB stacks).
func checkHTTP(ctx context.Context, h *spec.HTTPGet, timeout time.Duration, keep *session, kind checkKind) (detail, said string) {
	req, detail := requestFor(h, keep)
	if detail != "" {
		return detail, ""
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	x := exchange{ctx: ctx, h: h, req: req, deadline: deadline, timeout: timeout, keep: keep != nil, kind: kind}
	if keep == nil {
		return x.once()
	}

	if keep.conn != nil {
		if time.Since(keep.opened) < maxConnAge {
			detail, out := x.run(keep, true)
			switch out {
			case reuseConn:
				return detail, x.said
			case closeConn:
				keep.close()
				return detail, x.said
			}
		}
		keep.close()
	}

	conn, detail := x.dial()
	if conn == nil {
		return detail, ""
	}
	keep.open(ctx, conn)
	detail, out := x.run(keep, false)
	if out != reuseConn {
		keep.close()
	}
	return detail, x.said
}

// once makes x's request on a connection of its own, closed after the answer.
func (x *exchange) once() (detail, said string) {
	conn, detail := x.dial()
	if conn == nil {
		return detail, ""
	}
	defer conn.Close()
	var s session
	s.conn = conn
	unwatch := context.AfterFunc(x.ctx, func() { interrupt(conn) })
	defer unwatch()
	detail, _ = x.run(&s, false)
	return detail, x.said
}

// dial opens x's connection, TLS handshake included; nil and why not when it
// cannot.
func (x *exchange) dial() (net.Conn, string) {
	dialCtx, cancel := context.WithDeadline(x.ctx, x.deadline)
	if x.deadline.IsZero() {
		dialCtx, cancel = context.WithCancel(x.ctx)
	}
	defer cancel()
	hostPort := x.req.hostPort
	conn, err := dialer.DialContext(dialCtx, "tcp", hostPort)
	if err != nil {
		return nil, failure(x.ctx, dialCtx, x.timeout, hostPort, err)
	}
	if x.req.tls != nil {
		tlsConn := tls.Client(conn, x.req.tls)
		if err := tlsConn.HandshakeContext(dialCtx); err != nil {
			_ = conn.Close()
			if x.ctx.Err() != nil || dialCtx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, failure(x.ctx, dialCtx, x.timeout, hostPort, err)
			}
			return nil, "TLS handshake with " + hostPort + " failed: " + strings.TrimPrefix(err.Error(), "tls: ")
		}
		conn = tlsConn
	}
	return conn, ""
}

// requestFor is the request of h: the one keep built for the same handler, or a new
// one (which keep holds from then on); else why it cannot be made.
func requestFor(h *spec.HTTPGet, keep *session) (*httpRequest, string) {
	if keep != nil && keep.req.wire != nil && sameHTTPGet(&keep.req.handler, h) {
		return &keep.req, "" // the same handler every check: built once per probe
	}
	req, detail := newHTTPRequest(h, keep != nil)
	if detail != "" {
		return nil, detail
	}
	if keep == nil {
		return req, ""
	}
	keep.close() // opened for another request, if any
	keep.req = *req
	return &keep.req, ""
}

// httpRequest is the request of an http_get handler, as written on the wire.
type httpRequest struct {
	handler  spec.HTTPGet // the handler it was built for
	hostPort string
	wire     []byte      // the request as sent
	tls      *tls.Config // nil for scheme http
}

// sameHTTPGet reports whether a and b ask the same request.
func sameHTTPGet(a, b *spec.HTTPGet) bool {
	return a.Scheme == b.Scheme && a.Port == b.Port && a.Path == b.Path && a.Host == b.Host &&
		slices.Equal(a.Headers, b.Headers) && a.ExpectedAnswer == b.ExpectedAnswer && a.Any == b.Any
}

// newHTTPRequest builds the request of h; a detail instead when h cannot be asked.
// Without keep the request asks the server to close the connection after answering.
// The handler's headers follow tend's; a Host, User-Agent or Accept header replaces
// tend's own (as kubelet's httpHeaders do).
func newHTTPRequest(h *spec.HTTPGet, keep bool) (*httpRequest, string) {
	hostPort, err := address(h.Host, h.Port)
	if err != nil {
		return nil, err.Error()
	}
	target, err := url.Parse("http://" + hostPort + h.Path) // spec made the path absolute
	if err != nil {
		return nil, fmt.Sprintf("bad url: %v", err)
	}
	host, userAgent, accept := hostPort, "tend-probe", "*/*"
	var extra strings.Builder
	for _, hd := range h.Headers {
		if strings.ContainsAny(hd.Name, ":\r\n") || strings.ContainsAny(hd.Value, "\r\n") {
			return nil, fmt.Sprintf("bad header %q", hd.Name) // spec.Load refuses these
		}
		switch {
		case strings.EqualFold(hd.Name, "Host"):
			host = hd.Value
		case strings.EqualFold(hd.Name, "User-Agent"):
			userAgent = hd.Value
		case strings.EqualFold(hd.Name, "Accept"):
			accept = hd.Value
		default:
			extra.WriteString(hd.Name + ": " + hd.Value + "\r\n")
		}
	}
	text := "GET " + target.RequestURI() + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent +
		"\r\nAccept: " + accept + "\r\n" + extra.String()
	if !keep {
		text += "Connection: close\r\n"
	}
	req := &httpRequest{handler: *h, hostPort: hostPort, wire: []byte(text + "\r\n")}
	if h.Scheme == spec.SchemeHTTPS {
		req.tls = tlsConfig(host, hostPort)
	}
	return req, ""
}

// tlsConfig is the TLS of an https check to hostPort. Like kubelet's probes it does
// not verify the certificate: a probe asks whether the server answers, and a
// container's certificate is usually issued for a public name, not for localhost.
// The server name (SNI) is the request's Host without its port; Go leaves it out for
// an IP. No post-quantum key exchange: the key share Go offers by default costs a
// third of a handshake, and guards against no one when the certificate is not
// verified anyway; the NIST curves stay for servers without X25519.
func tlsConfig(host, hostPort string) *tls.Config {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	return &tls.Config{
		InsecureSkipVerify: true,
		ServerName:         name,
		NextProtos:         []string{"http/1.1"},
		ClientSessionCache: sessionCache{hostPort},
		CurvePreferences:   []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521},
	}
}

// exchange is one HTTP check's request and what judges its answer.
type exchange struct {
	ctx      context.Context
	h        *spec.HTTPGet
	req      *httpRequest
	deadline time.Time
	timeout  time.Duration
	keep     bool // the connection may be kept: the answer must be read whole
	kind     checkKind
	said     string // the start of the body of an answer whose status failed (readSaid)
}

// run sends the request over s's connection and judges the answer. reused says the
// connection was kept from an earlier check: if it turns out closed by the server
// before any answer, run reports staleConn instead of a failure.
func (x *exchange) run(s *session, reused bool) (string, outcome) {
	// The check's limit is the connection's deadline; the probe's cancellation
	// interrupts I/O in progress through the same deadline (the caller's watch on
	// x.ctx, or here if x.ctx was done before the deadline was set), and failure
	// tells the two apart by the context.
	conn := s.conn
	_ = conn.SetDeadline(x.deadline)
	if x.ctx.Err() != nil {
		interrupt(conn)
	}
	fail := func(err error) (string, outcome) {
		if reused && x.ctx.Err() == nil && closedByServer(err) {
			return "", staleConn
		}
		return failure(x.ctx, x.ctx, x.timeout, x.req.hostPort, err), closeConn
	}
	if reused && !s.idleAndOpen() {
		// The server closed it, or said something unasked (a 408 before closing an
		// idle connection, as some servers and proxies do): not this check's answer.
		return "", staleConn
	}
	if _, err := conn.Write(x.req.wire); err != nil {
		return fail(err)
	}
	r := readers.Get().(*answerReader)
	r.limit = io.LimitedReader{R: conn, N: maxAnswer}
	br := r.br
	br.Reset(&r.limit)
	defer func() { r.limit.R = nil; readers.Put(r) }()
	if reused {
		// Wait for the first byte: EOF here is a connection the server closed while
		// it was idle, not an answer.
		if _, err := br.Peek(1); err != nil {
			return fail(err)
		}
	}
	judge := httpJudge{wantBody: !x.h.Any && x.h.ExpectedAnswer != "", expected: x.h.ExpectedAnswer, maxOK: 399}
	if x.kind == actionCheck {
		judge.maxOK = 299
	}
	a, err := x.read(conn, br, judge)
	if err != nil {
		var m malformed
		if errors.As(err, &m) {
			return m.Error(), closeConn
		}
		return failure(x.ctx, x.ctx, x.timeout, x.req.hostPort, err), closeConn
	}
	out := closeConn
	if x.keep && a.reuse && br.Buffered() == 0 {
		out = reuseConn
	}
	return judge.describe(a), out
}

// read reads the answer as far as judge needs it: the status line alone when the
// connection is closed after it, the start of the body of a failure (x.said), or all
// of it.
func (x *exchange) read(conn net.Conn, br *bufio.Reader, judge httpJudge) (answer, error) {
	var a answer
	code, http10, err := readStatus(br)
	switch {
	case err != nil:
	case judge.fails(code):
		// What the server said about its failure, for the probe's message, read for
		// saidGrace at most; the connection is closed (readSaid).
		a.code = code
		if grace := time.Now().Add(saidGrace); grace.Before(x.deadline) {
			_ = conn.SetReadDeadline(grace)
			if x.ctx.Err() != nil {
				interrupt(conn) // the probe ended meanwhile: the deadline set overrode it
			}
		}
		x.said = printable(readSaid(br))
	case !x.keep && !judge.wantBody:
		// Only the status matters and the connection is closed after it: the status
		// line is enough, headers and body stay unread.
		a.code = code
	default:
		a, err = readRest(br, code, http10, judge.wantBody)
	}
	return a, err
}

// closedByServer reports whether err is what a connection closed by the other end
// gives: EOF, a reset, or a broken pipe.
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// statusCode parses "HTTP/1.x NNN reason" (the reason may be missing).
func statusCode(line []byte) (int, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("HTTP/1."))
	if !ok || len(rest) < 5 || rest[1] != ' ' {
		return 0, false
	}
	digits := rest[2:5]
	code := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		code = code*10 + int(d-'0')
	}
	if len(rest) > 5 && rest[5] != ' ' && rest[5] != '\r' && rest[5] != '\n' {
		return 0, false
	}
	return code, true
}

// checkTCP returns "" when a connection is established, else why not.
func checkTCP(ctx context.Context, h spec.TCPSocket, timeout time.Duration) string {
	hostPort, err := address(h.Host, h.Port)
	if err != nil {
		return err.Error()
	}
	checkCtx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	conn, err := dialer.DialContext(checkCtx, "tcp", hostPort)
	if err != nil {
		return failure(ctx, checkCtx, timeout, hostPort, err)
	}
	// A plain close (FIN), not a reset: servers that accept and read (Python's
	// http.server among them) log a traceback for every reset connection, which would
	// fill a container's log at every check. TIME_WAIT sockets stay bounded by the
	// check rate times 60 s.
	_ = conn.Close()
	return ""
}

// argv turns a command into an argument vector. It is a variable so that the
// splitting of string commands stays in spec.
var argv = spec.Argv

// checkExec returns "" when the command exits 0, else how it ended.
func checkExec(ctx context.Context, h spec.Exec, t Target, timeout time.Duration) string {
	args, err := argv(h.Command, t.Env)
	if err != nil {
		return fmt.Sprintf("bad command: %v", err)
	}
	var output tail
	exit := proc.Run(ctx, proc.Cmd{Argv: args, Env: t.Env, Dir: t.Dir, Stdout: &output, Stderr: &output, Ident: t.Ident, Cgroup: t.Cgroup}, timeout)
	switch {
	case exit.Success():
		return ""
	case exit.TimedOut:
		return fmt.Sprintf("timed out after %s", timeout)
	case ctx.Err() != nil:
		return "cancelled"
	}
	// Like kubelet, say what the command said: "exit code 1: cat: /tmp/healthy: No
	// such file or directory" tells a user more than the code alone.
	if line := output.lastLine(); line != "" {
		return exit.String() + ": " + line
	}
	return exit.String()
}

// tail keeps the last bytes of an exec check's output, for its failure message.
// proc.Run returns only after the output is copied, so it needs no lock.
type tail struct {
	buf []byte
}

const tailSize = 512

func (w *tail) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= tailSize {
		p = p[len(p)-tailSize:]
		w.buf = w.buf[:0]
	}
	if over := len(w.buf) + len(p) - tailSize; over > 0 {
		w.buf = w.buf[:copy(w.buf, w.buf[over:])]
	}
	w.buf = append(w.buf, p...)
	return n, nil
}

// lastLine is the last non-blank line of the output, cut to fit a status message.
func (w *tail) lastLine() string {
	text := strings.TrimSpace(strings.ToValidUTF8(string(w.buf), "?"))
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = strings.TrimSpace(text[i+1:])
	}
	if len(text) > 200 {
		text = strings.ToValidUTF8(text[:200], "") + "..."
	}
	return text
}

// address joins host (default def; an IPv6 literal may come with or without
// brackets) and a decimal port.
// address joins a defaulted handler's host and port (spec sets both: localhost for
// http_get, ::1 for tcp_socket, instance.port).
func address(host, port string) (string, error) {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("bad port %q", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// failure describes a failed request or connect: our timeout, the caller's
// cancellation, a refused connection, or the error itself without URL noise.
func failure(parent, checkCtx context.Context, timeout time.Duration, hostPort string, err error) string {
	switch {
	case parent.Err() != nil:
		return "cancelled"
	case errors.Is(checkCtx.Err(), context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("timed out after %s", timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused by " + hostPort
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

// printable is b as one line of valid UTF-8: control characters (newlines
// included) become spaces, and blanks at either end go.
func printable(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// quoteShort quotes a body for a message, cut to a length that fits a status line.
func quoteShort(body []byte) string {
	const max = 64
	if len(body) > max {
		return strconv.Quote(string(body[:max])) + "..."
	}
	return strconv.Quote(string(body))
}
